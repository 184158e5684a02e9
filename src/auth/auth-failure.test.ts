// SPEC.md's auth_failure row: when the credential store cannot be reached, a request is refused
// with 500 auth_failure, never let through, and /health says the database is down.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestServer } from '../../test/helpers/server.ts';
import { CREDENTIAL_MEMORY_MS } from './service.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';

let t: TestServer;
let org: TestOrganization;
let restore: () => Promise<void> = async () => {};

before(async () => {
  t = await startTestServer();
  org = await t.newOrganization();
});

after(async () => {
  await restore();
  // The database was pulled from under the server; closing may complain about it.
  await t.close().catch(() => {});
});

/** Makes the credential store unreachable for the running server. */
async function cutDatabase(): Promise<void> {
  const db = t.server.db;
  if (db.engine === 'pglite') {
    await db.pglite!.close();
    return;
  }
  const url = new URL(t.server.config.databaseUrl!);
  const name = url.pathname.slice(1);
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  } finally {
    await admin.end();
  }
  restore = async () => {
    const c = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await c.connect();
    await c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).finally(() => c.end());
  };
}

test('with the credential store unreachable, valid credentials get 500 auth_failure and /health is 503', async () => {
  // Both credentials work while the database is up.
  assert.equal((await t.request('GET', '/v1/users', { apiKey: org.apiKey })).status, 200);
  assert.equal((await t.request('GET', '/v1/users/me', { token: org.token })).status, 200);
  assert.equal((await t.request('GET', '/health')).status, 200);

  await cutDatabase();
  // The API key was checked a moment ago, and a checked key is remembered that long
  // (CREDENTIAL_MEMORY_MS); once it is forgotten, only the store can vouch for it.
  await new Promise((r) => setTimeout(r, CREDENTIAL_MEMORY_MS + 50));

  for (const credentials of [{ apiKey: org.apiKey }, { token: org.token }]) {
    for (const url of ['/v1/users', '/v1/users/me', '/v1/api-keys']) {
      const res = await t.request('GET', url, credentials);
      assert.equal(res.status, 500, `${url} ${Object.keys(credentials)[0]}: ${res.text}`);
      assert.deepEqual(res.body, { code: 'auth_failure', message: 'Authentication service unavailable' });
    }
  }
  // A well-formed but unknown key cannot be told apart from a real one without the store: refused too.
  const unknownKey = 'sk_sandbox_' + 'A'.repeat(64);
  const unknown = await t.request('GET', '/v1/users', { apiKey: unknownKey });
  assert.equal(unknown.status, 500);
  assert.equal(unknown.body.code, 'auth_failure');
  // No credentials at all needs no store: still the SPEC.md 401.
  const none = await t.request('GET', '/v1/users');
  assert.equal(none.status, 401);
  assert.equal(none.body.code, 'missing_credentials');

  const health = await t.request('GET', '/health');
  assert.equal(health.status, 503);
  assert.equal(health.body.status, 'unavailable');
  assert.equal(health.body.database, 'unreachable');
});
