// DECISIONS.md §2: with CORRIDOR_IDP_* set, an external identity provider's bearer tokens are
// accepted as the active Corridor user their verified email names; any bad token is 401
// unauthorized, and a provider whose keys cannot be fetched is 500 auth_failure, never a pass.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { CryptoKey } from 'jose';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';

const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'corridor-test';
const UNAUTHORIZED = { code: 'unauthorized', message: 'Unauthorized' };

interface Idp {
  url: string;
  /** What the key set endpoint answers: the keys, or an HTTP 503. */
  mode: 'keys' | 'down';
  close(): Promise<void>;
}

/** A JWKS endpoint on a local port, publishing `keys`. */
async function serveJwks(keys: object[]): Promise<Idp> {
  const idp = { mode: 'keys' } as Idp;
  const server = http.createServer((req, res) => {
    if (idp.mode === 'down') {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  idp.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/.well-known/jwks.json`;
  idp.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return idp;
}

/** An address nothing listens on. */
async function deadUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/jwks.json`;
}

const idpEnv = (jwksUrl: string) => ({ CORRIDOR_IDP_JWKS_URL: jwksUrl, CORRIDOR_IDP_ISSUER: ISSUER, CORRIDOR_IDP_AUDIENCE: AUDIENCE });

const providerKey = await generateKeyPair('ES256', { extractable: true });
const providerKid = randomUUID();
const providerJwk = { ...(await exportJWK(providerKey.publicKey)), kid: providerKid, alg: 'ES256', use: 'sig' };

interface TokenOptions {
  key?: CryptoKey | Uint8Array;
  alg?: string;
  kid?: string;
  issuer?: string;
  audience?: string;
  /** Seconds from now; null leaves exp out. */
  expiresIn?: number | null;
  claims?: Record<string, unknown>;
}

async function externalToken(email: string, options: TokenOptions = {}): Promise<string> {
  const jwt = new SignJWT({ email, email_verified: true, ...options.claims })
    .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: options.kid ?? providerKid, typ: 'JWT' })
    .setSubject(`idp|${randomUUID()}`)
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt();
  const expiresIn = options.expiresIn === undefined ? 300 : options.expiresIn;
  if (expiresIn !== null) jwt.setExpirationTime(Math.floor(Date.now() / 1000) + expiresIn);
  return jwt.sign(options.key ?? providerKey.privateKey);
}

describe('with an external identity provider configured', () => {
  let idp: Idp;
  let t: TestServer;
  let org: TestOrganization;
  before(async () => {
    idp = await serveJwks([providerJwk]);
    t = await startTestServer(idpEnv(idp.url));
    org = await t.newOrganization();
  });
  after(async () => {
    await t.close();
    await idp.close();
  });

  test('a valid token for a user\'s email acts as that user, with that user\'s roles', async () => {
    const token = await externalToken(org.email);
    const me = await t.request('GET', '/v1/users/me', { token });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.id, org.userId);
    assert.equal(me.body.email, org.email);
    assert.deepEqual(me.body.roles, ['OWNER']);
    // A bearer-only endpoint that needs the owner's keys:write scope.
    const key = await t.request('POST', '/v1/api-keys', { token, body: { name: 'from idp', scopes: ['users:read'] } });
    assert.equal(key.status, 201, key.text);
    const users = await t.request('GET', '/v1/users', { apiKey: key.body.secret });
    assert.equal(users.status, 200);
    assert.ok(users.body.data.some((u: { id: string }) => u.id === org.userId));
  });

  test('the email claim matches whatever its case; email_verified may be absent', async () => {
    const me = await t.request('GET', '/v1/users/me', { token: await externalToken(org.email.toUpperCase(), { claims: { email_verified: undefined } }) });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.id, org.userId);
  });

  test('Corridor\'s own tokens still work', async () => {
    const me = await t.request('GET', '/v1/users/me', { token: org.token });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, org.userId);
    const fresh = await t.request('POST', '/v1/auth/token', { body: { email: org.email, password: org.password } });
    assert.equal((await t.request('GET', '/v1/users/me', { token: fresh.body.accessToken })).status, 200);
  });

  test('every bad external token is 401 unauthorized', async () => {
    const stranger = await generateKeyPair('ES256', { extractable: true });
    const cases: Array<[string, Promise<string>]> = [
      ['wrong issuer', externalToken(org.email, { issuer: 'https://other-idp.example.test/' })],
      ['Corridor\'s issuer, signed by the provider', externalToken(org.email, { issuer: 'corridor:sandbox', audience: 'corridor-api' })],
      ['wrong audience', externalToken(org.email, { audience: 'someone-else' })],
      ['expired', externalToken(org.email, { expiresIn: -600 })],
      ['no exp', externalToken(org.email, { expiresIn: null })],
      ['HS256', externalToken(org.email, { alg: 'HS256', key: new TextEncoder().encode('a shared secret of at least 32 bytes!!') })],
      ['unknown email', externalToken('nobody@example.com')],
      ['email_verified false', externalToken(org.email, { claims: { email_verified: false } })],
      ['no email', externalToken(org.email, { claims: { email: undefined } })],
      ['key not in the JWKS, unknown kid', externalToken(org.email, { key: stranger.privateKey, kid: randomUUID() })],
      ['key not in the JWKS, published kid', externalToken(org.email, { key: stranger.privateKey })],
    ];
    for (const [name, pending] of cases) {
      const res = await t.request('GET', '/v1/users/me', { token: await pending });
      assert.equal(res.status, 401, `${name}: ${res.text}`);
      assert.deepEqual(res.body, UNAUTHORIZED, name);
    }
  });

  test('a disabled user\'s email is 401 unauthorized', async () => {
    const other = await t.newOrganization();
    assert.equal((await t.request('GET', '/v1/users/me', { token: await externalToken(other.email) })).status, 200);
    await t.server.db.kysely.updateTable('users').set({ status: 'DISABLED' }).where('id', '=', other.userId).execute();
    const res = await t.request('GET', '/v1/users/me', { token: await externalToken(other.email) });
    assert.equal(res.status, 401);
    assert.deepEqual(res.body, UNAUTHORIZED);
  });
});

describe('without the settings', () => {
  let idp: Idp;
  let t: TestServer;
  before(async () => {
    idp = await serveJwks([providerJwk]);
    t = await startTestServer();
  });
  after(async () => {
    await t.close();
    await idp.close();
  });

  test('an external token is 401 unauthorized; Corridor\'s own works', async () => {
    const org = await t.newOrganization();
    const res = await t.request('GET', '/v1/users/me', { token: await externalToken(org.email) });
    assert.equal(res.status, 401);
    assert.deepEqual(res.body, UNAUTHORIZED);
    assert.equal((await t.request('GET', '/v1/users/me', { token: org.token })).status, 200);
  });
});

describe('with the provider\'s key set unreachable', () => {
  let idp: Idp;
  let t: TestServer;
  let org: TestOrganization;
  before(async () => {
    idp = await serveJwks([providerJwk]);
    idp.mode = 'down';
    t = await startTestServer(idpEnv(idp.url));
    org = await t.newOrganization();
  });
  after(async () => {
    await t.close();
    await idp.close();
  });

  test('an external token is 500 auth_failure, never a pass; Corridor\'s own tokens still work', async () => {
    const token = await externalToken(org.email);
    const down = await t.request('GET', '/v1/users/me', { token });
    assert.equal(down.status, 500, down.text);
    assert.deepEqual(down.body, { code: 'auth_failure', message: 'Authentication service unavailable' });
    assert.equal((await t.request('GET', '/v1/users/me', { token: org.token })).status, 200);
    // A bad token the provider's keys are not needed for is still plain 401.
    const hs = await externalToken(org.email, { alg: 'HS256', key: new TextEncoder().encode('a shared secret of at least 32 bytes!!') });
    assert.equal((await t.request('GET', '/v1/users/me', { token: hs })).status, 401);

    // Once the provider answers, the same token is accepted.
    idp.mode = 'keys';
    assert.equal((await t.request('GET', '/v1/users/me', { token })).status, 200);
  });

  test('a JWKS address nothing listens on is 500 auth_failure too', async () => {
    const other = await startTestServer(idpEnv(await deadUrl()));
    try {
      const owner = await other.newOrganization();
      const res = await other.request('GET', '/v1/users/me', { token: await externalToken(owner.email) });
      assert.equal(res.status, 500, res.text);
      assert.equal(res.body.code, 'auth_failure');
    } finally {
      await other.close();
    }
  });
});
