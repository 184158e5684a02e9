// Configuration is validated at start: defaults, environment-dependent defaults, and one clear
// line per bad variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ConfigError, SETTINGS, loadConfig, publicBaseUrl } from './config.ts';

test('with nothing set: sandbox on https://127.0.0.1:8443, embedded database in ./.corridor, sign-up open', () => {
  const config = loadConfig({});
  assert.equal(config.env, 'sandbox');
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.port, 8443);
  assert.equal(config.httpPort, null);
  assert.equal(config.databaseUrl, null);
  assert.equal(config.dataDir, path.resolve('.corridor'));
  assert.equal(config.signup, 'open');
  assert.deepEqual(config.trustedProxies, []);
  assert.equal(publicBaseUrl(config), 'https://127.0.0.1:8443');
});

test('documented defaults: quote options live 300 s, idempotency keys 24 h, bodies up to 1 MiB, rails refresh every 30 s', () => {
  const config = loadConfig({});
  assert.equal(config.quoteTtlSeconds, 300);
  assert.equal(config.idempotencyTtlHours, 24);
  assert.equal(config.bodyLimitBytes, 1024 * 1024);
  assert.equal(config.railsRefreshSeconds, 30);
  assert.equal(config.sandboxSpeed, 1);
  assert.equal(loadConfig({ CORRIDOR_QUOTE_TTL_SECONDS: '45' }).quoteTtlSeconds, 45);
});

test('numbers outside their range are refused at either end, never clamped', () => {
  const problem = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.problems;
    }
    return assert.fail(`${JSON.stringify(env)} should have been refused`);
  };
  assert.deepEqual(problem({ CORRIDOR_PORT: '65536' }), ['CORRIDOR_PORT: must be a whole number from 0 to 65535 (got "65536")']);
  assert.deepEqual(problem({ CORRIDOR_QUOTE_TTL_SECONDS: '9' }), ['CORRIDOR_QUOTE_TTL_SECONDS: must be a whole number from 10 to 86400 (got "9")']);
  assert.deepEqual(problem({ CORRIDOR_QUOTE_TTL_SECONDS: '86401' }), ['CORRIDOR_QUOTE_TTL_SECONDS: must be a whole number from 10 to 86400 (got "86401")']);
  assert.deepEqual(problem({ CORRIDOR_IDEMPOTENCY_TTL_HOURS: '23' }), ['CORRIDOR_IDEMPOTENCY_TTL_HOURS: must be a whole number from 24 to 2160 (got "23")']);
  // The sandbox pace must be positive: 0 would stop every simulated provider.
  for (const speed of ['0', '0.0', '-1', 'fast']) assert.deepEqual(problem({ CORRIDOR_SANDBOX_SPEED: speed }), [`CORRIDOR_SANDBOX_SPEED: must be a positive number (got ${JSON.stringify(speed)})`]);
  assert.equal(loadConfig({ CORRIDOR_SANDBOX_SPEED: '0.5' }).sandboxSpeed, 0.5);
  assert.equal(loadConfig({ CORRIDOR_PORT: '65535' }).port, 65535);
});

test('a trusted proxy range needs a numeric prefix length', () => {
  assert.deepEqual(loadConfig({ CORRIDOR_TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.10, ::1' }).trustedProxies, ['10.0.0.0/8', '192.168.1.10', '::1']);
  for (const entry of ['10.0.0.0/abc', '10.0.0.0/', '10.0.0.0/1234']) {
    assert.throws(() => loadConfig({ CORRIDOR_TRUSTED_PROXIES: entry }), (err: ConfigError) => err.problems[0]!.startsWith(`CORRIDOR_TRUSTED_PROXIES: "${entry}" has a bad prefix length`));
  }
});

test('production closes sign-up by default; an explicit value wins', () => {
  assert.equal(loadConfig({ CORRIDOR_ENV: 'production' }).signup, 'closed');
  assert.equal(loadConfig({ CORRIDOR_ENV: 'production', CORRIDOR_SIGNUP: 'open' }).signup, 'open');
});

test('several bad values: one ConfigError, one line per bad variable, each naming it', () => {
  let error: unknown;
  try {
    loadConfig({
      CORRIDOR_PORT: 'https',
      CORRIDOR_HTTP_PORT: '-1',
      CORRIDOR_ENV: 'staging',
      DATABASE_URL: 'mysql://localhost/x',
      CORRIDOR_TRUSTED_PROXIES: '10.0.0.0/8, proxy.internal',
      CORRIDOR_OPS_EMAIL: 'not-an-email',
      CORRIDOR_BODY_LIMIT_BYTES: '1.5',
      CORRIDOR_HOST: '127.0.0.1', // fine
    });
  } catch (err) {
    error = err;
  }
  assert.ok(error instanceof ConfigError);
  const names = error.problems.map((line) => line.split(':')[0]);
  assert.deepEqual(names.sort(), ['CORRIDOR_BODY_LIMIT_BYTES', 'CORRIDOR_ENV', 'CORRIDOR_HTTP_PORT', 'CORRIDOR_OPS_EMAIL', 'CORRIDOR_PORT', 'CORRIDOR_TRUSTED_PROXIES', 'DATABASE_URL']);
  assert.equal(error.message.split('\n').length, error.problems.length);
  assert.ok(error.problems.includes('CORRIDOR_PORT: must be a whole number from 0 to 65535 (got "https")'), error.message);
  assert.ok(error.problems.some((l) => l.startsWith('CORRIDOR_TRUSTED_PROXIES: "proxy.internal" is not an IP address or CIDR range')));
  assert.ok(error.problems.some((l) => l.startsWith('CORRIDOR_ENV: must be one of sandbox, production')));
});

test('settings that only make sense in pairs are checked together', () => {
  assert.throws(() => loadConfig({ CORRIDOR_TLS_CERT: '/etc/cert.pem' }), (err: ConfigError) => err.problems[0] === 'CORRIDOR_TLS_CERT and CORRIDOR_TLS_KEY: set both or neither');
  assert.throws(() => loadConfig({ CORRIDOR_OPS_EMAIL: 'ops@example.com' }), (err: ConfigError) => err.problems[0] === 'CORRIDOR_OPS_EMAIL and CORRIDOR_OPS_PASSWORD: set both or neither');
  assert.throws(() => loadConfig({ CORRIDOR_OPS_EMAIL: 'ops@example.com', CORRIDOR_OPS_PASSWORD: 'short' }), (err: ConfigError) => err.problems[0]!.startsWith('CORRIDOR_OPS_PASSWORD: must be at least 12 characters'));
});

test('an external identity provider needs its JWKS URL, issuer and audience together, the URL https in production', () => {
  const idp = { CORRIDOR_IDP_JWKS_URL: 'http://idp.internal/jwks.json', CORRIDOR_IDP_ISSUER: 'https://idp.example.com/', CORRIDOR_IDP_AUDIENCE: 'corridor' };
  const config = loadConfig(idp);
  assert.deepEqual([config.idpJwksUrl, config.idpIssuer, config.idpAudience], ['http://idp.internal/jwks.json', 'https://idp.example.com/', 'corridor']);
  assert.equal(loadConfig({}).idpJwksUrl, null);
  for (const partial of [{ CORRIDOR_IDP_JWKS_URL: idp.CORRIDOR_IDP_JWKS_URL }, { CORRIDOR_IDP_ISSUER: idp.CORRIDOR_IDP_ISSUER, CORRIDOR_IDP_AUDIENCE: idp.CORRIDOR_IDP_AUDIENCE }]) {
    assert.throws(() => loadConfig(partial), (err: ConfigError) => err.problems.length === 1 && err.problems[0] === 'CORRIDOR_IDP_JWKS_URL, CORRIDOR_IDP_ISSUER and CORRIDOR_IDP_AUDIENCE: set all three or none');
  }
  assert.throws(
    () => loadConfig({ ...idp, CORRIDOR_ENV: 'production' }),
    (err: ConfigError) => err.problems.length === 1 && err.problems[0] === 'CORRIDOR_IDP_JWKS_URL: must be an https URL in production (got "http://idp.internal/jwks.json")',
  );
  assert.equal(loadConfig({ ...idp, CORRIDOR_ENV: 'production', CORRIDOR_IDP_JWKS_URL: 'https://idp.example.com/jwks.json' }).idpJwksUrl, 'https://idp.example.com/jwks.json');
  assert.throws(() => loadConfig({ ...idp, CORRIDOR_IDP_JWKS_URL: 'ftp://idp.internal/jwks' }), (err: ConfigError) => err.problems[0]!.startsWith('CORRIDOR_IDP_JWKS_URL: must be a https: or http: URL'));
});

test('a secret in a bad value is not echoed back', () => {
  assert.throws(
    () => loadConfig({ CORRIDOR_OPS_EMAIL: 'ops@example.com', CORRIDOR_OPS_PASSWORD: 'tiny-secret' }),
    (err: ConfigError) => !err.message.includes('tiny-secret'),
  );
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'mysql://corridor:db-password-here@db.internal/corridor' }),
    (err: ConfigError) => err.problems[0]!.startsWith('DATABASE_URL: must be a postgres: or postgresql: URL') && !err.message.includes('db-password-here'),
  );
});

test('every setting has a name, a description and a default label', () => {
  const names = SETTINGS.map((s) => s.name);
  assert.equal(new Set(names).size, names.length, 'no variable is declared twice');
  for (const s of SETTINGS) {
    assert.match(s.name, /^(CORRIDOR_[A-Z0-9_]+|DATABASE_URL)$/);
    assert.ok(s.description.length > 10, s.name);
    assert.ok(s.default.length > 0, s.name);
  }
});
