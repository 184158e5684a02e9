// Configuration comes only from environment variables. Every variable is declared once in
// SETTINGS, with its parser and default, so validation, defaults and the README table agree.
import path from 'node:path';
import net from 'node:net';

export type Environment = 'sandbox' | 'production';

export interface Config {
  env: Environment;
  host: string;
  port: number;
  httpPort: number | null;
  dataDir: string;
  databaseUrl: string | null;
  tlsCertPath: string | null;
  tlsKeyPath: string | null;
  trustedProxies: string[];
  signup: 'open' | 'closed';
  opsEmail: string | null;
  opsPassword: string | null;
  logLevel: string;
  bodyLimitBytes: number;
  publicUrl: string | null;
  idempotencyTtlHours: number;
  rateLimitPerMinute: number;
  quoteTtlSeconds: number;
  sandboxSpeed: number;
  providersFile: string | null;
  reportMaxMatchingTransfers: number;
  reportMaxOutputRows: number;
  reportStorage: 'local' | 's3';
  s3Bucket: string | null;
  s3Endpoint: string | null;
  s3Region: string | null;
  reportLeaseSeconds: number;
  reportPageSize: number;
  fundingSessionTtlSeconds: number;
  railsRefreshSeconds: number;
  webhookTimeoutMs: number;
  webhookSecretOverlapSeconds: number;
  webhookMaxConsecutiveFailures: number;
  webhookRetryScale: number;
  idpJwksUrl: string | null;
  idpIssuer: string | null;
  idpAudience: string | null;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}

type Parser<T> = (raw: string) => T;

const integer = (min: number, max: number): Parser<number> => (raw) => {
  if (!/^-?\d+$/.test(raw)) throw new Error(`must be a whole number from ${min} to ${max}`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`must be a whole number from ${min} to ${max}`);
  return n;
};

const positiveDecimal: Parser<number> = (raw) => {
  if (!/^\d+(\.\d+)?$/.test(raw) || Number(raw) <= 0) throw new Error('must be a positive number');
  return Number(raw);
};

const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw) => {
  if (!(values as string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}`);
  return raw as T;
};

const text: Parser<string> = (raw) => raw;

const url = (protocols: string[]): Parser<string> => (raw) => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error('must be a URL');
  }
  if (!protocols.includes(parsed.protocol)) throw new Error(`must be a ${protocols.join(' or ')} URL`);
  return raw;
};

const email: Parser<string> = (raw) => {
  if (!/^[^@\s]+@[^@\s]+$/.test(raw)) throw new Error('must be an email address');
  return raw.toLowerCase();
};

const addressList: Parser<string[]> = (raw) => {
  const entries = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    if (!address || net.isIP(address) === 0) throw new Error(`"${entry}" is not an IP address or CIDR range`);
    if (bits !== undefined && !/^\d{1,3}$/.test(bits)) throw new Error(`"${entry}" has a bad prefix length`);
  }
  return entries;
};

interface Setting {
  name: string;
  description: string;
  default: string;
  /** Its value is never echoed in an error (it is, or may contain, a password). */
  secret?: boolean;
  apply: (config: Partial<Config>, raw: string | undefined, env: NodeJS.ProcessEnv) => void;
}

function setting<K extends keyof Config>(
  name: string,
  key: K,
  description: string,
  parse: Parser<NonNullable<Config[K]>>,
  fallback: (env: NodeJS.ProcessEnv, config: Partial<Config>) => Config[K],
  defaultLabel: string,
): Setting {
  return {
    name,
    description,
    default: defaultLabel,
    apply(config, raw, env) {
      config[key] = (raw === undefined || raw === '' ? fallback(env, config) : parse(raw));
    },
  };
}

const secret = (s: Setting): Setting => ({ ...s, secret: true });

export const SETTINGS: Setting[] = [
  setting('CORRIDOR_ENV', 'env', 'Environment served by this process: sandbox or production.', oneOf('sandbox', 'production'), () => 'sandbox', 'sandbox'),
  setting('CORRIDOR_HOST', 'host', 'Address the listeners bind to.', text, () => '127.0.0.1', '127.0.0.1'),
  setting('CORRIDOR_PORT', 'port', 'HTTPS port (0 picks a free port).', integer(0, 65535), () => 8443, '8443'),
  setting('CORRIDOR_HTTP_PORT', 'httpPort', 'Optional plain-HTTP port; it answers every request 400 https_required unless a trusted proxy forwarded HTTPS.', integer(0, 65535), () => null, 'off'),
  setting('CORRIDOR_DATA_DIR', 'dataDir', 'Embedded database, generated certificate and local report artifacts.', (raw) => path.resolve(raw), () => path.resolve('.corridor'), './.corridor'),
  secret(setting('DATABASE_URL', 'databaseUrl', 'PostgreSQL connection string. When unset, the embedded database (PGlite) in the data dir is used.', url(['postgres:', 'postgresql:']), () => null, 'embedded')),
  setting('CORRIDOR_TLS_CERT', 'tlsCertPath', 'PEM certificate (chain) file. With CORRIDOR_TLS_KEY; when both are unset a self-signed certificate is generated in the data dir.', text, () => null, 'generated'),
  setting('CORRIDOR_TLS_KEY', 'tlsKeyPath', 'PEM private key file for CORRIDOR_TLS_CERT.', text, () => null, 'generated'),
  setting('CORRIDOR_TRUSTED_PROXIES', 'trustedProxies', 'Comma-separated addresses or CIDR ranges whose X-Forwarded-Proto and X-Forwarded-For are believed.', addressList, () => [], 'none'),
  setting('CORRIDOR_SIGNUP', 'signup', 'Whether POST /v1/auth/signup is open.', oneOf('open', 'closed'), (_env, c) => (c.env === 'production' ? 'closed' : 'open'), 'open in sandbox, closed in production'),
  setting('CORRIDOR_OPS_EMAIL', 'opsEmail', 'Email of the service operator account (role SERVICE_OPS), created at start when absent.', email, () => null, 'none'),
  secret(setting('CORRIDOR_OPS_PASSWORD', 'opsPassword', 'Password of the operator account (at least 12 characters).', (raw) => {
    if (raw.length < 12) throw new Error('must be at least 12 characters');
    return raw;
  }, () => null, 'none')),
  setting('CORRIDOR_LOG_LEVEL', 'logLevel', 'Log level of the JSON logs on stdout: fatal, error, warn, info, debug, trace or silent.', oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'), () => 'info', 'info'),
  setting('CORRIDOR_BODY_LIMIT_BYTES', 'bodyLimitBytes', 'Largest JSON request body accepted.', integer(1024, 50 * 1024 * 1024), () => 1024 * 1024, '1048576'),
  setting('CORRIDOR_PUBLIC_URL', 'publicUrl', 'Base address clients use to reach this service (download links are built on it).', url(['https:']), () => null, 'https://HOST:PORT'),
  setting('CORRIDOR_IDEMPOTENCY_TTL_HOURS', 'idempotencyTtlHours', 'How long idempotency keys are kept.', integer(24, 24 * 90), () => 24, '24'),
  setting('CORRIDOR_RATE_LIMIT_PER_MINUTE', 'rateLimitPerMinute', 'Requests per minute allowed to one credential (0 turns the limit off).', integer(0, 10_000_000), () => 6000, '6000'),
  setting('CORRIDOR_QUOTE_TTL_SECONDS', 'quoteTtlSeconds', 'How long a quote option stays usable.', integer(10, 86400), () => 300, '300'),
  setting('CORRIDOR_SANDBOX_SPEED', 'sandboxSpeed', 'Pace of the simulated providers: 1 is realistic-ish seconds per step, 10 is ten times faster.', positiveDecimal, () => 1, '1'),
  setting('CORRIDOR_PROVIDERS_FILE', 'providersFile', 'Provider configuration file for this environment.', text, () => null, 'config/providers.<env>.json'),
  setting('CORRIDOR_REPORT_MAX_MATCHING_TRANSFERS', 'reportMaxMatchingTransfers', 'Report limit: most transfers one report may cover (checked at preview, creation and generation).', integer(1, 100_000_000), () => 100_000, '100000'),
  setting('CORRIDOR_REPORT_MAX_OUTPUT_ROWS', 'reportMaxOutputRows', 'Report limit: most rows (CSV) or status entries (pain.002) one report may hold.', integer(1, 1_000_000_000), () => 1_000_000, '1000000'),
  setting('CORRIDOR_REPORT_STORAGE', 'reportStorage', 'Where report artifacts go: local (DATA_DIR/reports) or s3 (CORRIDOR_S3_*; credentials from the standard AWS environment).', oneOf('local', 's3'), () => 'local', 'local'),
  setting('CORRIDOR_S3_BUCKET', 's3Bucket', 'Bucket for report artifacts when CORRIDOR_REPORT_STORAGE=s3.', text, () => null, 'none'),
  setting('CORRIDOR_S3_ENDPOINT', 's3Endpoint', 'Endpoint of an S3-compatible store (MinIO, R2, …); unset for AWS S3.', url(['https:', 'http:']), () => null, 'AWS'),
  setting('CORRIDOR_S3_REGION', 's3Region', 'Region of the report bucket.', text, (env) => env.AWS_REGION ?? null, 'AWS_REGION'),
  setting('CORRIDOR_REPORT_LEASE_SECONDS', 'reportLeaseSeconds', 'How long a report generation may go unrenewed before another worker takes it over (a worker that died).', integer(2, 3600), () => 60, '60'),
  setting('CORRIDOR_REPORT_PAGE_SIZE', 'reportPageSize', 'Rows a report generation reads per query; memory use follows it, not the report size.', integer(1, 100_000), () => 2000, '2000'),
  setting('CORRIDOR_FUNDING_SESSION_TTL_SECONDS', 'fundingSessionTtlSeconds', 'How long a funding session\'s instructions stay valid before the transfer returns to READY_TO_FUND.', integer(60, 30 * 86400), () => 86400, '86400'),
  setting('CORRIDOR_RAILS_REFRESH_SECONDS', 'railsRefreshSeconds', 'How often the rail directory reloads provider availability (an ops change shows up within this interval).', integer(1, 3600), () => 30, '30'),
  setting('CORRIDOR_WEBHOOK_TIMEOUT_MS', 'webhookTimeoutMs', 'How long one webhook delivery attempt may take before it counts as failed.', integer(100, 60_000), () => 10_000, '10000'),
  setting('CORRIDOR_WEBHOOK_SECRET_OVERLAP_SECONDS', 'webhookSecretOverlapSeconds', 'After a webhook secret rotation, how long the replaced secret keeps signing deliveries next to the new one.', integer(0, 30 * 86400), () => 86400, '86400'),
  setting('CORRIDOR_WEBHOOK_MAX_CONSECUTIVE_FAILURES', 'webhookMaxConsecutiveFailures', 'Failed delivery attempts in a row (across all its deliveries) after which a webhook endpoint is disabled.', integer(1, 1_000_000), () => 100, '100'),
  setting('CORRIDOR_WEBHOOK_RETRY_SCALE', 'webhookRetryScale', 'Testing only: multiplies webhook retry backoff (0.001 turns 5 s into 5 ms). Leave at 1.', positiveDecimal, () => 1, '1'),
  setting('CORRIDOR_IDP_JWKS_URL', 'idpJwksUrl', 'JWKS address of an external identity provider whose bearer tokens are also accepted, mapped to Corridor users by their email claim. With CORRIDOR_IDP_ISSUER and CORRIDOR_IDP_AUDIENCE; https in production.', url(['https:', 'http:']), () => null, 'none'),
  setting('CORRIDOR_IDP_ISSUER', 'idpIssuer', 'The iss claim the external identity provider\'s tokens must carry.', text, () => null, 'none'),
  setting('CORRIDOR_IDP_AUDIENCE', 'idpAudience', 'The aud claim the external identity provider\'s tokens must carry (this Corridor deployment).', text, () => null, 'none'),
];

/** Reads and validates the whole configuration; throws ConfigError with one line per bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const config: Partial<Config> = {};
  const problems: string[] = [];
  for (const s of SETTINGS) {
    const raw = env[s.name];
    try {
      s.apply(config, raw, env);
    } catch (err) {
      problems.push(`${s.name}: ${(err as Error).message}${s.secret ? '' : ` (got ${JSON.stringify(raw)})`}`);
    }
  }
  if (!problems.length) {
    if ((config.tlsCertPath === null) !== (config.tlsKeyPath === null)) {
      problems.push('CORRIDOR_TLS_CERT and CORRIDOR_TLS_KEY: set both or neither');
    }
    if ((config.opsEmail === null) !== (config.opsPassword === null)) {
      problems.push('CORRIDOR_OPS_EMAIL and CORRIDOR_OPS_PASSWORD: set both or neither');
    }
    if (config.reportStorage === 's3' && (!config.s3Bucket || !config.s3Region)) {
      problems.push('CORRIDOR_REPORT_STORAGE=s3 needs CORRIDOR_S3_BUCKET and CORRIDOR_S3_REGION (or AWS_REGION)');
    }
    const idp = [config.idpJwksUrl, config.idpIssuer, config.idpAudience].filter((v) => v !== null).length;
    if (idp !== 0 && idp !== 3) {
      problems.push('CORRIDOR_IDP_JWKS_URL, CORRIDOR_IDP_ISSUER and CORRIDOR_IDP_AUDIENCE: set all three or none');
    }
    // Keys fetched over plain HTTP could be swapped in transit, and with them anyone's identity.
    if (config.env === 'production' && config.idpJwksUrl && new URL(config.idpJwksUrl).protocol !== 'https:') {
      problems.push(`CORRIDOR_IDP_JWKS_URL: must be an https URL in production (got ${JSON.stringify(config.idpJwksUrl)})`);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return config as Config;
}

/** The address clients use; links (for example report downloads) are built on it. */
export function publicBaseUrl(config: Config, boundPort?: number): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/$/, '');
  return `https://${config.host}:${boundPort ?? config.port}`;
}
