// The per-environment provider configuration file (config/providers.<env>.json): its schema,
// and the checks a schema cannot express. A bad file stops start with one line per problem.
import fs from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { Type } from 'typebox';
import type { Static } from 'typebox';
import currencyCodes from 'currency-codes';
import iso3166 from 'iso-3166-1';
import { ConfigError } from '../platform/config.ts';
import type { Environment } from '../platform/config.ts';
import { CRYPTO_PRECISION, toMinor } from '../platform/money.ts';
import { describeAjvErrors } from '../platform/http/validation.ts';
import { StringEnum, TaggedUnion } from '../platform/http/schemas.ts';
import { AVAILABILITIES, FIAT_METHODS, railAsset, railKey } from './adapter.ts';
import type { Capability } from './adapter.ts';
import { hasSandboxRate } from './sandbox/rates.ts';

/** Adapter types this build implements. Any other type is a real provider not built in yet. */
export const BUILT_IN_ADAPTERS = ['simulator'] as const;
export const isBuiltInAdapter = (type: string): boolean => (BUILT_IN_ADAPTERS as readonly string[]).includes(type);

export const DEFAULT_PROVIDER_FILES: Record<Environment, string> = {
  sandbox: path.resolve(import.meta.dirname, '../../config/providers.sandbox.json'),
  production: path.resolve(import.meta.dirname, '../../config/providers.production.json'),
};

const Decimal = Type.String({ pattern: '^\\d+(\\.\\d+)?$', description: 'Non-negative decimal string' });

const FeesSchema = Type.Object(
  {
    fixed: Decimal,
    // Below 100%: a fee or spread of the whole amount leaves nothing to deliver and no rate.
    percentBps: Type.Integer({ minimum: 0, maximum: 9_999 }),
    fxSpreadBps: Type.Integer({ minimum: 0, maximum: 9_999 }),
  },
  { additionalProperties: false },
);

const FiatRailSchema = Type.Object(
  {
    type: Type.Literal('FIAT'),
    country: Type.String({ pattern: '^[A-Z]{2}$' }),
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    method: StringEnum(FIAT_METHODS),
  },
  { additionalProperties: false },
);

const CryptoRailSchema = Type.Object(
  {
    type: Type.Literal('CRYPTO'),
    blockchain: Type.String({ pattern: '^[A-Z][A-Z0-9_]{1,31}$' }),
    asset: Type.String({ pattern: '^[A-Z0-9]{2,10}$' }),
  },
  { additionalProperties: false },
);

const RailCapabilitySchema = Type.Object(
  {
    kind: StringEnum(['COLLECTION', 'PAYOUT'] as const),
    rail: TaggedUnion('type', [FiatRailSchema, CryptoRailSchema]),
    fees: FeesSchema,
    etaSeconds: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

const ConversionCapabilitySchema = Type.Object(
  {
    kind: Type.Literal('CONVERSION'),
    from: Type.String({ pattern: '^[A-Z0-9]{2,10}$' }),
    to: Type.String({ pattern: '^[A-Z0-9]{2,10}$' }),
    fees: FeesSchema,
    etaSeconds: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

/** A credential is given inline (sandbox) or as the name of an environment variable holding it. */
const CredentialValue = Type.Union([Type.String(), Type.Object({ env: Type.String({ pattern: '^[A-Z_][A-Z0-9_]*$' }) }, { additionalProperties: false })]);

const ProviderEntrySchema = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$', description: 'Internal id, never shown to customers' }),
    displayName: Type.String({ minLength: 1, maxLength: 80, description: 'Customer-visible name' }),
    description: Type.Optional(Type.String()),
    adapter: Type.String({ pattern: '^[a-z][a-z0-9-]{1,40}$' }),
    availability: StringEnum(AVAILABILITIES),
    settings: Type.Optional(
      Type.Object({ referencePrefix: Type.Optional(Type.String({ pattern: '^[A-Z0-9]{2,12}$' })) }, { additionalProperties: true }),
    ),
    credentials: Type.Record(Type.String(), CredentialValue),
    capabilities: Type.Array(TaggedUnion('kind', [RailCapabilitySchema, ConversionCapabilitySchema]), { minItems: 1 }),
  },
  { additionalProperties: false },
);

export const ProviderFileSchema = Type.Object(
  {
    description: Type.Optional(Type.String()),
    environment: StringEnum(['sandbox', 'production'] as const),
    providers: Type.Array(ProviderEntrySchema, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type ProviderEntry = Omit<Static<typeof ProviderEntrySchema>, 'capabilities' | 'credentials'> & {
  capabilities: Capability[];
  credentials: Record<string, string | { env: string }>;
};
export interface ProviderFile {
  path: string;
  environment: Environment;
  providers: ProviderEntry[];
}

export class ProviderConfigError extends ConfigError {}

const ajv = new Ajv({ allErrors: true, strict: false, discriminator: true, verbose: true });
const validateFile = ajv.compile(ProviderFileSchema);

/** Reads and checks a provider file; throws ProviderConfigError with one line per problem. */
export function loadProviderFile(file: string, env: Environment, processEnv: NodeJS.ProcessEnv = process.env): ProviderFile {
  const relative = path.relative(process.cwd(), file);
  const where = relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ProviderConfigError([`${where}: cannot read the provider file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ProviderConfigError([`${where}: not valid JSON (${(err as Error).message})`]);
  }
  if (!validateFile(data)) {
    const problems = describeAjvErrors(validateFile.errors ?? [], 'body').map((p) => `${where}: ${p.path || '(top level)'}: ${p.message}`);
    throw new ProviderConfigError(problems);
  }
  const parsed: { environment: Environment; providers: ProviderEntry[] } = data;
  const problems = checkProviders(parsed, env, processEnv).map((p) => `${where}: ${p}`);
  if (problems.length) throw new ProviderConfigError(problems);
  return { path: file, environment: parsed.environment, providers: parsed.providers };
}

/** The environment's provider file: CORRIDOR_PROVIDERS_FILE, else config/providers.<env>.json. */
export function loadEnvironmentProviders(config: { env: Environment; providersFile: string | null }, processEnv: NodeJS.ProcessEnv = process.env): ProviderFile {
  return loadProviderFile(config.providersFile ?? DEFAULT_PROVIDER_FILES[config.env], config.env, processEnv);
}

/** The checks a JSON schema cannot express: real codes, uniqueness, precision, environment. */
function checkProviders(file: { environment: Environment; providers: ProviderEntry[] }, env: Environment, processEnv: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  if (file.environment !== env) problems.push(`environment: the file is for ${file.environment} but CORRIDOR_ENV is ${env}`);
  const ids = new Set<string>();
  const names = new Set<string>();
  file.providers.forEach((p, i) => {
    const at = `providers.${i}`;
    if (ids.has(p.id)) problems.push(`${at}.id: "${p.id}" is used by an earlier provider`);
    ids.add(p.id);
    if (names.has(p.displayName)) problems.push(`${at}.displayName: "${p.displayName}" is used by an earlier provider`);
    names.add(p.displayName);

    const builtIn = isBuiltInAdapter(p.adapter);
    if (p.adapter === 'simulator' && env === 'production') problems.push(`${at}.adapter: simulated providers are refused in production`);
    if (!builtIn && p.availability !== 'DOWN') {
      problems.push(`${at}.availability: adapter type "${p.adapter}" is not built in (known: ${BUILT_IN_ADAPTERS.join(', ')}), so it must be DOWN`);
    }
    if (builtIn) {
      for (const [name, value] of Object.entries(p.credentials)) {
        if (typeof value !== 'string' && !processEnv[value.env]) problems.push(`${at}.credentials.${name}: environment variable ${value.env} is not set`);
      }
    }

    const seen = new Set<string>();
    p.capabilities.forEach((c, j) => {
      const cat = `${at}.capabilities.${j}`;
      let sourceAsset: string | null = null;
      if (c.kind === 'CONVERSION') {
        const fromOk = checkAsset(c.from, `${cat}.from`, problems);
        const toOk = checkAsset(c.to, `${cat}.to`, problems);
        if (c.from === c.to) problems.push(`${cat}: a conversion needs two different assets`);
        if (p.adapter === 'simulator') {
          for (const [field, asset, ok] of [['from', c.from, fromOk], ['to', c.to, toOk]] as const) {
            if (ok && !hasSandboxRate(asset)) problems.push(`${cat}.${field}: the sandbox market has no rate for ${asset}`);
          }
        }
        if (fromOk) sourceAsset = c.from;
        const key = `CONVERSION:${c.from}:${c.to}`;
        if (seen.has(key)) problems.push(`${cat}: ${c.from}→${c.to} is listed twice`);
        seen.add(key);
      } else {
        const rail = c.rail;
        let assetOk = true;
        if (rail.type === 'FIAT') {
          if (!iso3166.whereAlpha2(rail.country)) problems.push(`${cat}.rail.country: "${rail.country}" is not an ISO 3166-1 alpha-2 country code`);
          if (!currencyCodes.code(rail.currency) || rail.currency in CRYPTO_PRECISION) {
            problems.push(`${cat}.rail.currency: "${rail.currency}" is not an ISO 4217 currency code`);
            assetOk = false;
          }
        } else if (!(rail.asset in CRYPTO_PRECISION)) {
          problems.push(`${cat}.rail.asset: "${rail.asset}" is not a supported crypto asset (${Object.keys(CRYPTO_PRECISION).join(', ')})`);
          assetOk = false;
        }
        if (assetOk) sourceAsset = railAsset(rail);
        const key = `${c.kind}:${railKey(rail)}`;
        if (seen.has(key)) problems.push(`${cat}: ${c.kind} on ${railKey(rail)} is listed twice`);
        seen.add(key);
      }
      if (sourceAsset) {
        try {
          toMinor(c.fees.fixed, sourceAsset);
        } catch (err) {
          problems.push(`${cat}.fees.fixed: ${(err as Error).message}`);
        }
      }
    });
  });
  return problems;
}

function checkAsset(asset: string, at: string, problems: string[]): boolean {
  if (asset in CRYPTO_PRECISION || currencyCodes.code(asset)) return true;
  problems.push(`${at}: "${asset}" is neither an ISO 4217 currency nor a supported crypto asset`);
  return false;
}

/** The credential values for an adapter, with environment references resolved. */
export function resolveCredentials(entry: ProviderEntry, processEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(Object.entries(entry.credentials).map(([k, v]) => [k, typeof v === 'string' ? v : (processEnv[v.env] ?? '')]));
}
