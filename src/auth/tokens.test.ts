// Signing keys live in the database so that every process of a deployment signs and verifies
// with the same ones, including processes that start at the same moment.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { CryptoKey } from 'jose';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createServer } from '../server.ts';
import { createTestDatabase } from '../../test/helpers/database.ts';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';

describe('a signing key added by another process', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  test('is picked up from the database when a token names it; a key that is not there is not', async () => {
    const org = await t.newOrganization();
    const sign = async (privateKey: CryptoKey, kid: string) =>
      new SignJWT({ org: org.organizationId })
        .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
        .setSubject(org.userId)
        .setIssuer('corridor:sandbox')
        .setAudience('corridor-api')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);

    const stranger = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const strangerToken = await sign(stranger.privateKey, randomUUID());
    assert.equal((await t.request('GET', '/v1/users/me', { token: strangerToken })).status, 401);

    const rotated = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const kid = randomUUID();
    await t.server.db.kysely
      .insertInto('signing_keys')
      .values({ kid, algorithm: 'EdDSA', public_jwk: JSON.stringify({ ...(await exportJWK(rotated.publicKey)), kid, alg: 'EdDSA', use: 'sig' }), private_jwk: JSON.stringify({ ...(await exportJWK(rotated.privateKey)), kid }) })
      .execute();
    // The reload after the stranger's token may still be throttled; wait (bounded) until it is not.
    const deadline = Date.now() + 30_000;
    let status = 0;
    while (Date.now() < deadline && (status = (await t.request('GET', '/v1/users/me', { token: await sign(rotated.privateKey, kid) })).status) !== 200) {
      assert.equal(status, 401);
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(status, 200);
    const jwks = await t.request('GET', '/.well-known/jwks.json');
    assert.ok(jwks.body.keys.some((k: { kid: string }) => k.kid === kid));
  });
});

describe('two processes starting together on one PostgreSQL database', () => {
  test('create one signing key and one first organization, and accept each other\'s tokens', { skip: !process.env.TEST_DATABASE_URL && 'set TEST_DATABASE_URL' }, async () => {
    const database = await createTestDatabase();
    const config = loadConfig({ DATABASE_URL: database.url!, CORRIDOR_LOG_LEVEL: 'silent' });
    const [a, b] = await Promise.all([createServer(config, { logger: createLogger('silent') }), createServer(config, { logger: createLogger('silent') })]);
    try {
      assert.equal([a.firstOrganization, b.firstOrganization].filter(Boolean).length, 1, 'exactly one process printed first-start credentials');
      const keys = await a.db.kysely.selectFrom('signing_keys').select('kid').execute();
      assert.equal(keys.length, 1);
      const orgs = await a.db.kysely.selectFrom('organizations').select('id').where('kind', '=', 'CUSTOMER').execute();
      assert.equal(orgs.length, 1);

      const first = (a.firstOrganization ?? b.firstOrganization)!;
      const { accessToken } = await a.services.auth.issueToken(first.email, first.password);
      const onB = await b.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${accessToken}` } });
      assert.equal(onB.statusCode, 200);
      const keyOnA = await a.app.inject({ method: 'GET', url: '/v1/users', headers: { 'x-api-key': first.apiKey } });
      assert.equal(keyOnA.statusCode, 200);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });
});
