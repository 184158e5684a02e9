// SPEC.md "Authentication" and "Errors", DECISIONS.md §2: what a client sees for every kind of
// credential, good and bad, on a real server and database.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, createPublicKey } from 'node:crypto';
import { SignJWT, createLocalJWKSet, decodeJwt, decodeProtectedHeader, generateKeyPair, importJWK, jwtVerify } from 'jose';
import type { JWK } from 'jose';
import { hashPassword } from './passwords.ts';
import { startTestServer, ALL_SCOPES } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';

const UNAUTHORIZED = { code: 'unauthorized', message: 'Unauthorized' };
const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** A JWT assembled by hand: header and payload as given, signature as given. */
function forge(header: object, payload: object, sign: (input: string) => string): string {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  return `${input}.${sign(input)}`;
}

describe('authentication', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  describe('missing and bad credentials (SPEC.md error table)', () => {
    test('no credentials: 401 missing_credentials', async () => {
      const res = await t.request('GET', '/v1/users');
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, { code: 'missing_credentials', message: 'Missing credentials' });
    });

    test('unknown, garbled and malformed API keys: 401 unauthorized', async () => {
      const org = await t.newOrganization();
      const flipped = org.apiKey.slice(0, -1) + (org.apiKey.endsWith('A') ? 'B' : 'A');
      for (const apiKey of [flipped, 'sk_sandbox_' + 'x'.repeat(64), 'nonsense', org.apiKey.slice(0, -2), org.apiKey.replace('sk_sandbox_', 'sk_live_')]) {
        const res = await t.request('GET', '/v1/users', { apiKey });
        assert.equal(res.status, 401, apiKey);
        assert.deepEqual(res.body, UNAUTHORIZED);
      }
    });

    test('an Authorization header that is not a bearer token: 401 unauthorized', async () => {
      for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer not.a.jwt', 'Bearer a b']) {
        const res = await t.request('GET', '/v1/users', { headers: { authorization } });
        assert.equal(res.status, 401, authorization);
        assert.deepEqual(res.body, UNAUTHORIZED);
      }
    });

    test('a valid key next to a bad bearer token is judged by the key; a bad key is not rescued by a good token', async () => {
      const org = await t.newOrganization();
      const res = await t.request('GET', '/v1/users', { apiKey: 'sk_sandbox_wrong', token: org.token });
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, UNAUTHORIZED);
    });
  });

  describe('bearer tokens', () => {
    test('POST /v1/auth/token: right password gives an EdDSA JWT that verifies against /.well-known/jwks.json', async () => {
      const org = await t.newOrganization();
      const res = await t.request('POST', '/v1/auth/token', { body: { email: org.email, password: org.password } });
      assert.equal(res.status, 200);
      assert.equal(res.body.tokenType, 'Bearer');
      assert.equal(res.body.expiresIn, 900);
      assert.equal(decodeProtectedHeader(res.body.accessToken).alg, 'EdDSA');

      const jwks = await t.request('GET', '/.well-known/jwks.json');
      assert.equal(jwks.status, 200);
      for (const key of jwks.body.keys) {
        assert.equal(key.kty, 'OKP');
        assert.equal(key.d, undefined, 'the JWKS must not publish the private part');
      }
      const { payload } = await jwtVerify(res.body.accessToken, createLocalJWKSet(jwks.body), { algorithms: ['EdDSA'] });
      assert.equal(payload.sub, org.userId);
      assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), 900);

      const me = await t.request('GET', '/v1/users/me', { token: res.body.accessToken });
      assert.equal(me.status, 200);
      assert.equal(me.body.email, org.email);
    });

    test('POST /v1/auth/token: wrong password and unknown email answer the same 401', async () => {
      const org = await t.newOrganization();
      const wrong = await t.request('POST', '/v1/auth/token', { body: { email: org.email, password: 'not the password' } });
      const unknown = await t.request('POST', '/v1/auth/token', { body: { email: 'nobody@example.com', password: 'whatever' } });
      assert.equal(wrong.status, 401);
      assert.deepEqual(wrong.body, unknown.body);
      assert.equal(wrong.body.code, 'invalid_credentials');
      assert.equal(wrong.body.accessToken, undefined);
    });

    test('email sign-in is case-insensitive', async () => {
      const org = await t.newOrganization();
      const res = await t.request('POST', '/v1/auth/token', { body: { email: org.email.toUpperCase(), password: org.password } });
      assert.equal(res.status, 200);
    });

    test('expired, unexpiring, wrong-issuer or -audience, tampered, alg:none, foreign-key and HMAC-with-public-key tokens: 401 unauthorized', async () => {
      const org = await t.newOrganization();
      const victim = await t.newOrganization();
      const good = org.token;
      const [headerPart, , signaturePart] = good.split('.') as [string, string, string];
      const header = decodeProtectedHeader(good);
      const claims = decodeJwt(good);
      const now = Math.floor(Date.now() / 1000);

      // Expired, but otherwise genuine: signed with the server's own private key.
      const signingRow = await t.server.db.kysely.selectFrom('signing_keys').selectAll().where('kid', '=', header.kid!).executeTakeFirstOrThrow();
      const privateKey = await importJWK(signingRow.private_jwk as JWK, 'EdDSA');
      const expired = await new SignJWT({ org: claims.org })
        .setProtectedHeader({ alg: 'EdDSA', kid: header.kid!, typ: 'JWT' })
        .setSubject(org.userId)
        .setIssuer(claims.iss!)
        .setAudience(claims.aud as string)
        .setIssuedAt(now - 3600)
        .setExpirationTime(now - 1800)
        .sign(privateKey);

      // The same server key, but the wrong issuer or audience.
      const otherIssuer = await new SignJWT({ org: claims.org })
        .setProtectedHeader({ alg: 'EdDSA', kid: header.kid!, typ: 'JWT' })
        .setSubject(org.userId).setIssuer('corridor:production').setAudience(claims.aud as string).setIssuedAt().setExpirationTime('5m')
        .sign(privateKey);

      // The server's own key and issuer, but meant for another audience, never expiring, or naming a
      // user together with an organization that is not theirs.
      const otherAudience = await new SignJWT({ org: claims.org })
        .setProtectedHeader({ alg: 'EdDSA', kid: header.kid!, typ: 'JWT' })
        .setSubject(org.userId).setIssuer(claims.iss!).setAudience('another-api').setIssuedAt().setExpirationTime('5m')
        .sign(privateKey);
      const noExpiry = await new SignJWT({ org: claims.org })
        .setProtectedHeader({ alg: 'EdDSA', kid: header.kid!, typ: 'JWT' })
        .setSubject(org.userId).setIssuer(claims.iss!).setAudience(claims.aud as string).setIssuedAt()
        .sign(privateKey);
      const crossedOrganization = await new SignJWT({ org: victim.organizationId })
        .setProtectedHeader({ alg: 'EdDSA', kid: header.kid!, typ: 'JWT' })
        .setSubject(org.userId).setIssuer(claims.iss!).setAudience(claims.aud as string).setIssuedAt().setExpirationTime('5m')
        .sign(privateKey);

      // Payload changed to another user, signature kept.
      const tamperedPayload = b64url(JSON.stringify({ ...claims, sub: victim.userId, org: victim.organizationId }));
      const tampered = `${headerPart}.${tamperedPayload}.${signaturePart}`;
      // Only the expiry pushed out, signature kept.
      const extended = `${headerPart}.${b64url(JSON.stringify({ ...claims, exp: now + 86400 }))}.${signaturePart}`;

      const none = forge({ alg: 'none', typ: 'JWT' }, { ...claims, sub: victim.userId, org: victim.organizationId }, () => '');
      const noneWithKid = forge({ alg: 'none', kid: header.kid, typ: 'JWT' }, claims, () => '');

      // A well-formed EdDSA token signed by a key the server never issued, claiming the server's kid.
      const stranger = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const foreign = await new SignJWT({ org: claims.org })
        .setProtectedHeader({ alg: 'EdDSA', kid: header.kid!, typ: 'JWT' })
        .setSubject(org.userId).setIssuer(claims.iss!).setAudience(claims.aud as string).setIssuedAt().setExpirationTime('5m')
        .sign(stranger.privateKey);

      // Algorithm confusion: HS256 whose HMAC secret is the server's public key, in every form an
      // attacker could pick it up from /.well-known/jwks.json.
      const jwks = (await t.request('GET', '/.well-known/jwks.json')).body as { keys: JWK[] };
      const jwk = jwks.keys.find((k) => k.kid === header.kid)!;
      const pem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
      const der = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'der' });
      const secrets: Array<string | Buffer> = [Buffer.from(jwk.x!, 'base64url'), jwk.x!, JSON.stringify(jwk), JSON.stringify(jwks), pem, der];
      const hmacTokens = secrets.map((secret) =>
        forge({ alg: 'HS256', kid: header.kid, typ: 'JWT' }, { ...claims, sub: victim.userId, org: victim.organizationId }, (input) => createHmac('sha256', secret).update(input).digest('base64url')),
      );

      const bad: Record<string, string> = { expired, otherIssuer, otherAudience, noExpiry, crossedOrganization, tampered, extended, none, noneWithKid, foreign };
      hmacTokens.forEach((token, i) => (bad[`hmac${i}`] = token));
      for (const [name, token] of Object.entries(bad)) {
        for (const url of ['/v1/users', '/v1/users/me']) {
          const res = await t.request('GET', url, { token });
          assert.equal(res.status, 401, `${name} on ${url}`);
          assert.deepEqual(res.body, UNAUTHORIZED, name);
        }
      }
      // The genuine token still works, so the refusals above are about the forgeries.
      assert.equal((await t.request('GET', '/v1/users/me', { token: good })).status, 200);
    });

    test('the token of a user who has since been disabled: 401 unauthorized, and no new token', async () => {
      const org = await t.newOrganization();
      assert.equal((await t.request('GET', '/v1/users/me', { token: org.token })).status, 200);
      await t.server.db.kysely.updateTable('users').set({ status: 'DISABLED' }).where('id', '=', org.userId).execute();
      const res = await t.request('GET', '/v1/users/me', { token: org.token });
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, UNAUTHORIZED);
      const token = await t.request('POST', '/v1/auth/token', { body: { email: org.email, password: org.password } });
      assert.equal(token.status, 401);
    });

    test('GET /v1/users/me with an API key: 403 user_token_required with SPEC.md message', async () => {
      const org = await t.newOrganization();
      const res = await t.request('GET', '/v1/users/me', { apiKey: org.apiKey });
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, { code: 'user_token_required', message: 'This endpoint only accepts a user token (Bearer JWT).' });
    });
  });

  describe('sign-up', () => {
    test('creates an organization with exactly one OWNER and a working token; duplicate email is 409', async () => {
      const body = { organizationName: 'Acme', email: 'Founder@Acme.example', password: 'a long enough password', fullName: 'Ada Founder' };
      const res = await t.request('POST', '/v1/auth/signup', { body });
      assert.equal(res.status, 201);
      assert.deepEqual(Object.keys(res.body).sort(), ['accessToken', 'organizationId', 'user']);
      assert.equal(res.body.user.email, 'founder@acme.example');
      assert.deepEqual(res.body.user.roles, ['OWNER']);
      const users = await t.request('GET', '/v1/users', { token: res.body.accessToken });
      assert.equal(users.status, 200);
      assert.equal(users.body.meta.total, 1);

      const again = await t.request('POST', '/v1/auth/signup', { body: { ...body, email: 'founder@ACME.example', organizationName: 'Acme 2' } });
      assert.equal(again.status, 409);
      assert.equal(again.body.code, 'email_taken');
      // The failed sign-up left no organization behind.
      const orgs = await t.server.db.kysely.selectFrom('organizations').select('id').where('name', '=', 'Acme 2').execute();
      assert.equal(orgs.length, 0);
    });

    test('a short password or a bad email is 422 validation_error naming the field', async () => {
      const res = await t.request('POST', '/v1/auth/signup', { body: { organizationName: 'X', email: 'not-an-email', password: 'short', fullName: 'X' } });
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'validation_error');
      const paths = res.body.details.map((d: { path: string }) => d.path).sort();
      assert.deepEqual(paths, ['email', 'password']);
    });

    test('the password is stored only as a scrypt hash', async () => {
      const org = await t.newOrganization();
      const row = await t.server.db.kysely.selectFrom('users').selectAll().where('id', '=', org.userId).executeTakeFirstOrThrow();
      assert.match(row.password_hash, /^scrypt\$/);
      assert.ok(!JSON.stringify(row).includes(org.password));
    });
  });

  describe('API keys', () => {
    test('the secret is shown once; the list shows only prefix and last four; the row holds only a hash', async () => {
      const org = await t.newOrganization();
      const created = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'ci', scopes: ['users:read'] } });
      assert.equal(created.status, 201);
      const { secret, prefix, lastFour, id } = created.body;
      assert.match(secret, /^sk_sandbox_[A-Za-z0-9_-]{64}$/);
      assert.ok(Buffer.from(secret.slice('sk_sandbox_'.length), 'base64url').length * 8 >= 256);
      assert.ok(secret.startsWith(prefix));
      assert.equal(secret.slice(-4), lastFour);
      assert.deepEqual(Object.keys(created.body).sort(), ['createdAt', 'id', 'lastFour', 'name', 'prefix', 'scopes', 'secret']);

      const list = await t.request('GET', '/v1/api-keys', { token: org.token });
      assert.equal(list.status, 200);
      const listed = list.body.data.find((k: { id: string }) => k.id === id);
      assert.equal(listed.prefix, prefix);
      assert.equal(listed.lastFour, lastFour);
      assert.ok(!list.text.includes(secret), 'the list must not contain the secret');
      assert.ok(!list.text.includes(secret.slice(prefix.length, -4)), 'nor its middle');
      assert.equal(listed.secret, undefined);

      const row = await t.server.db.kysely.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      const stored = JSON.stringify(row, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : v));
      assert.ok(!stored.includes(secret), 'the secret must not be stored');
      assert.ok(!stored.includes(secret.slice('sk_sandbox_'.length + 16)), 'nor its secret part');
      assert.ok(!stored.includes(Buffer.from(secret).toString('hex')));

      const use = await t.request('GET', '/v1/users', { apiKey: secret });
      assert.equal(use.status, 200);
    });

    test('GET /v1/api-keys pages with ?limit and ?cursor, total counts every page', async () => {
      const org = await t.newOrganization('Paged keys');
      const other = await t.newOrganization('Other keys');
      const otherKey = await t.request('POST', '/v1/api-keys', { token: other.token, body: { name: 'other', scopes: ['users:read'] } });
      for (const n of [1, 2, 3, 4]) {
        assert.equal((await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: `key ${n}`, scopes: ['users:read'] } })).status, 201);
      }
      const all = await t.request('GET', '/v1/api-keys', { token: org.token });
      assert.equal(all.body.meta.total, 5, 'the sign-up key and the four new ones');
      assert.equal(all.body.data.length, 5);
      assert.equal(all.body.meta.nextCursor, null);
      const allIds = all.body.data.map((k: { id: string }) => k.id);
      assert.ok(!allIds.includes(otherKey.body.id));

      for (const [limit, expectedPages] of [[2, 3], [1, 5]] as const) {
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const res = await t.request('GET', `/v1/api-keys?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { apiKey: org.apiKey });
          assert.equal(res.status, 200);
          assert.equal(res.body.meta.total, 5);
          assert.ok(res.body.data.length <= limit);
          seen.push(...res.body.data.map((k: { id: string }) => k.id));
          cursor = res.body.meta.nextCursor;
          pages++;
        } while (cursor && pages < 10);
        assert.equal(pages, expectedPages, `limit=${limit}`);
        assert.deepEqual(seen, allIds, 'every key once, in the order of one big page');
      }
    });

    test('GET /v1/api-keys refuses a bad limit, a foreign cursor and unknown query fields', async () => {
      const org = await t.newOrganization();
      for (const query of ['limit=0', 'limit=101', 'limit=ten', 'sort=name']) {
        const res = await t.request('GET', `/v1/api-keys?${query}`, { token: org.token });
        assert.equal(res.status, 422, query);
        assert.equal(res.body.code, 'validation_error', query);
      }
      const forged = Buffer.from(JSON.stringify(['yesterday', 'not-a-key'])).toString('base64url');
      for (const cursor of ['garbage', forged]) {
        const res = await t.request('GET', `/v1/api-keys?cursor=${cursor}`, { token: org.token });
        assert.equal(res.status, 400, cursor);
        assert.deepEqual(res.body, { code: 'invalid_cursor', message: 'The cursor is not one this API issued' });
      }
    });

    test('revocation takes effect at once; revoking again keeps the first revokedAt', async () => {
      const org = await t.newOrganization();
      const created = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'temp', scopes: ['users:read'] } });
      assert.equal((await t.request('GET', '/v1/users', { apiKey: created.body.secret })).status, 200);
      const revoked = await t.request('DELETE', `/v1/api-keys/${created.body.id}`, { token: org.token });
      assert.equal(revoked.status, 200);
      assert.match(revoked.body.revokedAt, /Z$/);
      const after = await t.request('GET', '/v1/users', { apiKey: created.body.secret });
      assert.equal(after.status, 401);
      assert.deepEqual(after.body, UNAUTHORIZED);
      // Revoking again is harmless and keeps the moment the key stopped working.
      const again = await t.request('DELETE', `/v1/api-keys/${created.body.id}`, { token: org.token });
      assert.equal(again.status, 200);
      assert.equal(again.body.revokedAt, revoked.body.revokedAt);
      const listed = (await t.request('GET', '/v1/api-keys', { token: org.token })).body.data.find((k: { id: string }) => k.id === created.body.id);
      assert.equal(listed.revokedAt, revoked.body.revokedAt);
    });

    test('lastUsedAt stays null until the key is used, then records the use', async () => {
      const org = await t.newOrganization();
      const created = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'watched', scopes: ['users:read'] } });
      const listed = async () => (await t.request('GET', '/v1/api-keys', { token: org.token })).body.data.find((k: { id: string }) => k.id === created.body.id);
      assert.equal((await listed()).lastUsedAt, null);
      assert.equal((await t.request('GET', '/v1/users', { apiKey: created.body.secret })).status, 200);
      // Written beside the request, not inside it: looked for until it appears (bounded).
      let lastUsedAt: string | null = null;
      // Generous: on a loaded machine the write beside the request can lag by seconds.
      for (let i = 0; i < 600 && !lastUsedAt; i++) {
        lastUsedAt = (await listed()).lastUsedAt;
        if (!lastUsedAt) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(lastUsedAt, 'lastUsedAt was never written');
      assert.ok(lastUsedAt >= created.body.createdAt, `${lastUsedAt} is not after ${created.body.createdAt}`);
    });

    test("another organization's key id is 404 not_found and stays usable", async () => {
      const a = await t.newOrganization();
      const b = await t.newOrganization();
      const bKey = await t.request('POST', '/v1/api-keys', { token: b.token, body: { name: 'b', scopes: ['users:read'] } });
      const res = await t.request('DELETE', `/v1/api-keys/${bKey.body.id}`, { token: a.token });
      assert.equal(res.status, 404);
      assert.equal(res.body.code, 'not_found');
      assert.equal((await t.request('GET', '/v1/users', { apiKey: bKey.body.secret })).status, 200);
      const aList = await t.request('GET', '/v1/api-keys', { apiKey: a.apiKey });
      assert.ok(!aList.body.data.some((k: { id: string }) => k.id === bKey.body.id));
    });

    test('creating a key needs a bearer token (an API key cannot mint keys)', async () => {
      const org = await t.newOrganization();
      const res = await t.request('POST', '/v1/api-keys', { apiKey: org.apiKey, body: { name: 'x', scopes: ['users:read'] } });
      assert.equal(res.status, 403);
      assert.equal(res.body.code, 'user_token_required');
    });

    test('an API key lacking a scope: 403 insufficient_permissions', async () => {
      const org = await t.newOrganization();
      const narrow = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'narrow', scopes: ['transfers:read'] } });
      const res = await t.request('GET', '/v1/users', { apiKey: narrow.body.secret });
      assert.equal(res.status, 403);
      assert.equal(res.body.code, 'insufficient_permissions');
      assert.match(res.body.message, /users:read/);
      const keys = await t.request('GET', '/v1/api-keys', { apiKey: narrow.body.secret });
      assert.equal(keys.status, 403);
      assert.equal(keys.body.code, 'insufficient_permissions');
    });

    test('a VIEWER can read but cannot create keys; nobody can grant a scope they do not hold', async () => {
      const org = await t.newOrganization();
      const email = `viewer-${Date.now()}@example.com`;
      await t.server.services.users.create({ organizationId: org.organizationId, email, fullName: 'Vic Viewer', passwordHash: await hashPassword('viewer password 1'), roles: ['VIEWER'] });
      const token = (await t.request('POST', '/v1/auth/token', { body: { email, password: 'viewer password 1' } })).body.accessToken as string;
      assert.equal((await t.request('GET', '/v1/users', { token })).status, 200);
      const create = await t.request('POST', '/v1/api-keys', { token, body: { name: 'v', scopes: ['users:read'] } });
      assert.equal(create.status, 403);
      assert.equal(create.body.code, 'insufficient_permissions');

      // A caller who may manage keys but holds only some scopes cannot hand out the others.
      const principal = { kind: 'user' as const, organizationId: org.organizationId, userId: org.userId, apiKeyId: null, roles: [], scopes: new Set(['keys:write', 'users:read'] as const), features: new Set<never>(), credentialId: 'x' };
      await assert.rejects(
        t.server.services.auth.createApiKey(principal, { name: 'escalate', scopes: ['users:read', 'transfers:write'] }),
        (err: { statusCode: number; code: string; message: string }) => err.statusCode === 403 && err.code === 'insufficient_permissions' && /transfers:write/.test(err.message),
      );
      const allowed = await t.server.services.auth.createApiKey(principal, { name: 'fine', scopes: ['users:read'] });
      assert.deepEqual(allowed.scopes, ['users:read']);
    });

    test('an unknown scope is 422 validation_error naming the field', async () => {
      const org = await t.newOrganization();
      const res = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'x', scopes: ['users:read', 'everything:write'] } });
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'validation_error');
      assert.ok(res.body.details.some((d: { path: string }) => d.path === 'scopes.1'), JSON.stringify(res.body.details));
    });

    test('every scope can be granted by an OWNER', async () => {
      const org = await t.newOrganization();
      const res = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'all', scopes: ALL_SCOPES } });
      assert.equal(res.status, 201);
      assert.deepEqual([...res.body.scopes].sort(), [...ALL_SCOPES].sort());
    });
  });
});

describe('sign-up closed', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ CORRIDOR_SIGNUP: 'closed' });
  });
  after(async () => t.close());

  test('CORRIDOR_SIGNUP=closed: 403 signup_closed and nothing is created', async () => {
    const res = await t.request('POST', '/v1/auth/signup', { body: { organizationName: 'Nope', email: 'nope@example.com', password: 'a long enough password', fullName: 'No' } });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'signup_closed');
    const users = await t.server.db.kysely.selectFrom('users').select('id').where('email', '=', 'nope@example.com').execute();
    assert.equal(users.length, 0);
  });
});

describe('rate limit and operator account', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ CORRIDOR_RATE_LIMIT_PER_MINUTE: '3', CORRIDOR_OPS_EMAIL: 'Ops@Corridor.example', CORRIDOR_OPS_PASSWORD: 'operator password 42' });
  });
  after(async () => t.close());

  test('the 4th request in a minute from one credential is 429 rate_limited with Retry-After; other credentials are unaffected', async () => {
    const org = await t.newOrganization(); // its API key has not been used yet
    const responses = [];
    for (let i = 0; i < 4; i++) responses.push(await t.request('GET', '/v1/users', { apiKey: org.apiKey }));
    assert.deepEqual(responses.map((r) => r.status), [200, 200, 200, 429]);
    const last = responses[3]!;
    assert.equal(last.body.code, 'rate_limited');
    const retryAfter = Number(last.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(last.headers['ratelimit-limit'], '3');
    assert.equal(last.headers['ratelimit-remaining'], '0');

    const other = await t.newOrganization();
    assert.equal((await t.request('GET', '/v1/users', { apiKey: other.apiKey })).status, 200);
  });

  test('the operator account exists as SERVICE_OPS in the operator organization and can sign in', async () => {
    const row = await t.server.db.kysely
      .selectFrom('users')
      .innerJoin('organizations', 'organizations.id', 'users.organization_id')
      .select(['users.roles', 'organizations.kind'])
      .where('users.email', '=', 'ops@corridor.example')
      .executeTakeFirstOrThrow();
    assert.deepEqual(row.roles, ['SERVICE_OPS']);
    assert.equal(row.kind, 'OPERATOR');
    const token = await t.request('POST', '/v1/auth/token', { body: { email: 'ops@corridor.example', password: 'operator password 42' } });
    assert.equal(token.status, 200);
    const me = await t.request('GET', '/v1/users/me', { token: token.body.accessToken });
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.roles, ['SERVICE_OPS']);
    // A second start does not create a second operator.
    assert.deepEqual(await t.server.services.auth.ensureOperator('ops@corridor.example', 'operator password 42'), { created: false });
  });

  test("CORRIDOR_OPS_EMAIL naming a customer's user refuses to start and leaves that user a customer", async () => {
    const org = await t.newOrganization();
    await assert.rejects(t.server.services.auth.ensureOperator(org.email.toUpperCase(), 'operator password 42'), /already belongs to a customer user/);
    const me = await t.request('GET', '/v1/users/me', { token: org.token });
    assert.deepEqual(me.body.roles, ['OWNER']);
    const token = await t.request('POST', '/v1/auth/token', { body: { email: org.email, password: 'operator password 42' } });
    assert.equal(token.status, 401);
  });
});

describe('production', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ CORRIDOR_ENV: 'production' });
  });
  after(async () => t.close());

  test('API keys are sk_live_ keys, a sandbox-looking key is refused, and sign-up is closed by default', async () => {
    const first = t.server.firstOrganization!;
    assert.match(first.apiKey, /^sk_live_[A-Za-z0-9_-]{64}$/);
    assert.equal((await t.request('GET', '/v1/users', { apiKey: first.apiKey })).status, 200);
    const sandboxLooking = await t.request('GET', '/v1/users', { apiKey: first.apiKey.replace('sk_live_', 'sk_sandbox_') });
    assert.equal(sandboxLooking.status, 401);
    assert.deepEqual(sandboxLooking.body, UNAUTHORIZED);

    const { accessToken } = await t.server.services.auth.issueToken(first.email, first.password);
    const created = await t.request('POST', '/v1/api-keys', { token: accessToken, body: { name: 'live', scopes: ['users:read'] } });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.secret, /^sk_live_[A-Za-z0-9_-]{64}$/);
    assert.ok(created.body.secret.startsWith(created.body.prefix) && created.body.prefix.startsWith('sk_live_'));

    const signup = await t.request('POST', '/v1/auth/signup', { body: { organizationName: 'Walk-in', email: 'walk-in@example.com', password: 'a long enough password', fullName: 'Walk In' } });
    assert.equal(signup.status, 403);
    assert.equal(signup.body.code, 'signup_closed');
  });
});
