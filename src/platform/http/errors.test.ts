// DECISIONS.md §9: every failure is a precise 4xx {code, message} (details for validation),
// never a 500 and never a stack trace, whatever the client sends.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../../test/helpers/server.ts';
import type { TestOrganization, TestResponse, TestServer } from '../../../test/helpers/server.ts';

const BODY_LIMIT = 2048;

let t: TestServer;
let org: TestOrganization;
const seen: TestResponse[] = [];

before(async () => {
  t = await startTestServer({ CORRIDOR_BODY_LIMIT_BYTES: String(BODY_LIMIT) });
  org = await t.newOrganization();
});
after(async () => t.close());

async function call(method: string, url: string, options: Parameters<TestServer['request']>[2] = {}): Promise<TestResponse> {
  const res = await t.request(method, url, options);
  seen.push(res);
  return res;
}

function assertError(res: TestResponse, status: number, code: string) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, code, res.text);
  assert.equal(typeof res.body.message, 'string');
  assert.ok(res.body.message.length > 0);
  const allowed = res.body.details === undefined ? ['code', 'message'] : ['code', 'details', 'message'];
  assert.deepEqual(Object.keys(res.body).sort(), allowed, 'no wrapper and no extra fields');
  assert.match(String(res.headers['content-type']), /^application\/json/);
}

describe('malformed JSON', () => {
  test('a broken body is 400 invalid_json, on open and protected routes alike', async () => {
    for (const rawBody of ['{"email": "a@b.c",', '{email: 1}', 'null x', '[1,2', '\u0000']) {
      assertError(await call('POST', '/v1/auth/token', { rawBody, headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
      assertError(await call('POST', '/v1/api-keys', { token: org.token, rawBody, headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    }
  });

  // Regression: clients that label every POST as JSON got 400 invalid_json on body-less actions.
  test('an empty body declared as JSON is no body: body-less actions work, a route that needs fields names them', async () => {
    const json = { 'content-type': 'application/json' };
    const refused = await call('POST', '/v1/auth/token', { rawBody: '', headers: json });
    assertError(refused, 422, 'validation_error');
    assert.deepEqual(refused.body.details.map((d: { path: string }) => d.path).sort(), ['email', 'password']);
    const key = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'empty-body', scopes: ['users:read'] } });
    assert.equal(key.status, 201, key.text);
    const revoked = await t.request('DELETE', `/v1/api-keys/${key.body.id}`, { token: org.token, rawBody: '', headers: json });
    assert.ok(revoked.status === 200 || revoked.status === 204, revoked.text);
    assert.equal((await t.request('GET', '/v1/users', { apiKey: key.body.secret })).status, 401);
  });

  // Regression: bytes that are not UTF-8 (a Latin-1 "Müller") were decoded to U+FFFD and stored.
  test('a body that is not UTF-8 is 400 invalid_json and nothing is written', async () => {
    const before = (await t.request('GET', '/v1/entities', { apiKey: org.apiKey })).body.meta.total;
    const latin1 = Buffer.from('{"type":"INDIVIDUAL","firstName":"Jos\u00e9","lastName":"M\u00fcller","country":"DE"}', 'latin1');
    for (const type of ['application/json', 'application/json; charset=iso-8859-1']) {
      const res = await call('POST', '/v1/entities', { apiKey: org.apiKey, rawBody: latin1, headers: { 'content-type': type } });
      assertError(res, 400, 'invalid_json');
      assert.equal(res.body.message, 'The body is not valid UTF-8: send JSON encoded as UTF-8');
    }
    assertError(await call('POST', '/v1/auth/token', { rawBody: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    assert.equal((await t.request('GET', '/v1/entities', { apiKey: org.apiKey })).body.meta.total, before);
    // The same text in UTF-8 is stored as sent.
    const utf8 = await t.request('POST', '/v1/entities', { apiKey: org.apiKey, rawBody: Buffer.from(latin1.toString('latin1'), 'utf8'), headers: { 'content-type': 'application/json' } });
    assert.equal(utf8.status, 201, utf8.text);
    assert.equal(utf8.body.lastName, 'Müller');
  });

  test('a prototype-poisoning body is refused with a 4xx, not parsed', async () => {
    const res = await call('POST', '/v1/auth/token', { rawBody: '{"email":"a@b.c","password":"x","__proto__":{"admin":true}}', headers: { 'content-type': 'application/json' } });
    assertError(res, 400, 'invalid_json');
  });
});

describe('validation', () => {
  test('wrong types are 422 validation_error with details naming each field path', async () => {
    const res = await call('POST', '/v1/auth/signup', { body: { organizationName: 42, email: ['x'], password: true, fullName: null } });
    assertError(res, 422, 'validation_error');
    const paths = res.body.details.map((d: { path: string }) => d.path).sort();
    assert.deepEqual(paths, ['email', 'fullName', 'organizationName', 'password']);
    for (const d of res.body.details) assert.ok(typeof d.message === 'string' && d.message.length > 0);
  });

  test('nested paths are dotted, missing and unknown fields are named', async () => {
    const nested = await call('POST', '/v1/api-keys', { token: org.token, body: { name: 'k', scopes: ['users:read', 7] } });
    assertError(nested, 422, 'validation_error');
    assert.ok(nested.body.details.some((d: { path: string }) => d.path === 'scopes.1'), nested.text);

    const missing = await call('POST', '/v1/auth/token', { body: { email: 'a@b.c' } });
    assertError(missing, 422, 'validation_error');
    assert.deepEqual(missing.body.details, [{ path: 'password', message: 'is required' }]);

    const extra = await call('POST', '/v1/auth/token', { body: { email: 'a@b.c', password: 'x', admin: true } });
    assertError(extra, 422, 'validation_error');
    assert.deepEqual(extra.body.details, [{ path: 'admin', message: 'is not a recognised field' }]);
  });

  test('a body that is not an object is 422, a number is not coerced from a string', async () => {
    assertError(await call('POST', '/v1/auth/token', { body: ['a', 'b'] }), 422, 'validation_error');
    assertError(await call('POST', '/v1/auth/token', { body: 'text' }), 422, 'validation_error');
    const res = await call('POST', '/v1/auth/signup', { body: { organizationName: 'x', email: 'a@b.co', password: 1234567890123, fullName: 'x' } });
    assertError(res, 422, 'validation_error');
    assert.deepEqual(res.body.details.map((d: { path: string }) => d.path), ['password']);
  });

  // Regression: a crypto route without its blockchain was also told what a fiat route needs
  // (to.country, to.currency, to.method, to.type must be "FIAT").
  test('a tagged union reports only the problems of the shape its tag names', async () => {
    const Z = '00000000-0000-4000-8000-000000000000';
    const fiat = { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' };
    const quote = async (to: unknown, from: unknown = fiat) => {
      const res = await call('POST', '/v1/quotes', { apiKey: org.apiKey, body: { entityId: Z, amount: '10.00', from, to } });
      assertError(res, 422, 'validation_error');
      return res.body.details;
    };
    assert.deepEqual(await quote({ type: 'CRYPTO', asset: 'USDC' }), [{ path: 'to.blockchain', message: 'is required' }]);
    assert.deepEqual(await quote({ type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA', asset: 'EUR' }), [{ path: 'to.asset', message: 'is not a recognised field' }]);
    assert.deepEqual(await quote({ asset: 'USDC' }), [{ path: 'to.type', message: 'is required' }]);
    assert.deepEqual(await quote({ type: 'BANK', asset: 'USDC' }), [{ path: 'to.type', message: 'must be one of FIAT, CRYPTO' }]);
    assert.deepEqual(await quote({ type: 7 }), [{ path: 'to.type', message: 'must be one of FIAT, CRYPTO' }]);
    // Not an object at all: said as such, never passed on to the service.
    assert.deepEqual(await quote(5, 'x'), [
      { path: 'from', message: 'must be object' },
      { path: 'to', message: 'must be object' },
    ]);
    assert.deepEqual(await quote(null, []), [
      { path: 'from', message: 'must be object' },
      { path: 'to', message: 'must be object' },
    ]);

    const transfer = await call('POST', '/v1/transfers', {
      apiKey: org.apiKey,
      headers: { 'idempotency-key': 'tagged-union' },
      body: { quoteOptionId: Z, entityId: Z, destination: { type: 'CRYPTO_WALLET', fiatAccountId: Z } },
    });
    assertError(transfer, 422, 'validation_error');
    assert.deepEqual(transfer.body.details, [
      { path: 'destination.cryptoWalletId', message: 'is required' },
      { path: 'destination.fiatAccountId', message: 'is not a recognised field' },
    ]);
  });

  test('bad query and path parameters are 422 naming query.* and path.*', async () => {
    const limit = await call('GET', '/v1/users?limit=abc', { apiKey: org.apiKey });
    assertError(limit, 422, 'validation_error');
    assert.equal(limit.body.details[0].path, 'query.limit');
    const big = await call('GET', '/v1/users?limit=101', { apiKey: org.apiKey });
    assertError(big, 422, 'validation_error');
    assert.equal(big.body.details[0].path, 'query.limit');
    const id = await call('DELETE', '/v1/api-keys/not-a-uuid', { apiKey: org.apiKey });
    assertError(id, 422, 'validation_error');
    assert.equal(id.body.details[0].path, 'path.id');
  });

  // Regression: PostgreSQL refuses U+0000 in text and jsonb, and a webhook description holding it
  // reached the database and answered 500.
  test('a NUL character (U+0000) anywhere in a body, query or path is 422 naming its field, and nothing is written', async () => {
    const webhook = await call('POST', '/v1/webhook-endpoints', {
      apiKey: org.apiKey,
      body: { url: 'https://example.com/hook', eventTypes: ['transfer.status_changed'], description: 'a\u0000b' },
    });
    assertError(webhook, 422, 'validation_error');
    assert.deepEqual(webhook.body.details, [{ path: 'description', message: 'must not contain the NUL character (U+0000)' }]);
    const listed = await t.request('GET', '/v1/webhook-endpoints', { apiKey: org.apiKey });
    assert.equal(listed.status, 200);
    assert.equal(listed.body.meta.total, 0);

    const nested = await call('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'INDIVIDUAL', firstName: 'Ada', lastName: 'Love\u0000lace', country: 'US' } });
    assertError(nested, 422, 'validation_error');
    assert.deepEqual(nested.body.details.map((d: { path: string }) => d.path), ['lastName']);

    const query = await call('GET', '/v1/users?cursor=a%00b', { apiKey: org.apiKey });
    assertError(query, 422, 'validation_error');
    assert.equal(query.body.details[0].path, 'query.cursor');
  });

  // Regression: JSON lets a string hold an unpaired surrogate ("\ud800"); PostgreSQL refuses it in
  // jsonb, so an entity name or a report filter holding one answered 500.
  test('an unpaired UTF-16 surrogate anywhere in a body is 422 naming its field, and nothing is written', async () => {
    const before = (await t.request('GET', '/v1/entities', { apiKey: org.apiKey })).body.meta.total;
    for (const [lastName, rawBody] of [
      ['high', '{"type":"INDIVIDUAL","firstName":"Ada","lastName":"Love\\ud800lace","country":"US"}'],
      ['low', '{"type":"INDIVIDUAL","firstName":"Ada","lastName":"\\udfff","country":"US"}'],
      ['reversed pair', '{"type":"INDIVIDUAL","firstName":"Ada","lastName":"\\ude00\\ud83d","country":"US"}'],
    ] as const) {
      const res = await call('POST', '/v1/entities', { apiKey: org.apiKey, rawBody, headers: { 'content-type': 'application/json' } });
      assertError(res, 422, 'validation_error');
      assert.deepEqual(res.body.details.map((d: { path: string }) => d.path), ['lastName'], lastName);
      assert.match(res.body.details[0].message, /unpaired UTF-16 surrogate/);
    }
    const preview = await call('POST', '/v1/reports/preview', {
      apiKey: org.apiKey,
      body: { type: 'TRANSFER_ACTIVITY', filters: { from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z', originalMessageId: 'MSG-\ud800' } },
    });
    assertError(preview, 422, 'validation_error');
    assert.deepEqual(preview.body.details.map((d: { path: string }) => d.path), ['filters.originalMessageId']);
    assert.equal((await t.request('GET', '/v1/entities', { apiKey: org.apiKey })).body.meta.total, before);
    // A well-formed pair (an emoji) is text like any other.
    const emoji = await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'INDIVIDUAL', firstName: 'Ada', lastName: 'Lovelace \ud83d\ude00', country: 'US' } });
    assert.equal(emoji.status, 201, emoji.text);
    assert.equal(emoji.body.lastName, 'Lovelace 😀');
  });

  // Regression: ajv's uuid format takes a "urn:uuid:" prefix and RFC 3339 takes year 0000, years
  // past 9999 once the offset applies, and leap seconds; each reached PostgreSQL and answered 500.
  test('a uuid or date-time the database cannot read is 422 naming the field, not 500', async () => {
    const id = '3b241101-e2bb-4255-8caf-4136c566a962';
    for (const [query, field] of [
      [`entityId=urn:uuid:${id}`, 'query.entityId'],
      ['createdFrom=0000-01-01T00:00:00Z', 'query.createdFrom'],
      ['createdFrom=0001-01-01T00:00:00%2B01:00', 'query.createdFrom'],
      ['createdTo=9999-12-31T23:59:59.999-23:00', 'query.createdTo'],
      ['createdTo=2016-12-31T23:59:60Z', 'query.createdTo'],
    ] as const) {
      const res = await call('GET', `/v1/transfers?${query}`, { apiKey: org.apiKey });
      assertError(res, 422, 'validation_error');
      assert.deepEqual(res.body.details.map((d: { path: string }) => d.path), [field], query);
    }
    assertError(await call('GET', `/v1/entities/urn:uuid:${id}`, { apiKey: org.apiKey }), 422, 'validation_error');
    for (const from of ['0000-06-01T00:00:00Z', '2016-12-31T23:59:60Z']) {
      const res = await call('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: { type: 'TRANSFER_ACTIVITY', filters: { from, to: '2026-02-01T00:00:00Z' } } });
      assertError(res, 422, 'validation_error');
      assert.deepEqual(res.body.details, [{ path: 'filters.from', message: 'must be an RFC 3339 date-time with a time zone, from year 0001 to 9999 (e.g. 2026-01-31T09:30:00Z)' }]);
    }
    // The edges of the range, offsets and upper-case ids still work.
    for (const query of ['createdFrom=0001-01-01T00:00:00Z', 'createdTo=9999-12-31T23:59:59.999Z', 'createdFrom=2026-01-01T00:00:00%2B14:00', `entityId=${id.toUpperCase()}`]) {
      const res = await t.request('GET', `/v1/transfers?${query}`, { apiKey: org.apiKey });
      assert.ok(res.status === 200 || res.status === 404, `${query}: ${res.text}`);
    }
  });

  test('a cursor this API did not issue is 400 invalid_cursor', async () => {
    for (const cursor of ['garbage', Buffer.from('["x","y"]').toString('base64url'), Buffer.from('{}').toString('base64url')]) {
      assertError(await call('GET', `/v1/users?cursor=${cursor}`, { apiKey: org.apiKey }), 400, 'invalid_cursor');
    }
  });

  test('a page that ends the list has no nextCursor, even when it is exactly full', async () => {
    const own = await t.newOrganization();
    for (const name of ['a', 'b', 'c', 'd']) {
      const res = await t.request('POST', '/v1/webhook-endpoints', { apiKey: own.apiKey, body: { url: `https://example.com/${name}`, eventTypes: ['transfer.status_changed'] } });
      assert.equal(res.status, 201, res.text);
    }
    const whole = await t.request('GET', '/v1/webhook-endpoints?limit=4', { apiKey: own.apiKey });
    assert.deepEqual([whole.body.data.length, whole.body.meta.total, whole.body.meta.nextCursor], [4, 4, null]);
    const first = await t.request('GET', '/v1/webhook-endpoints?limit=2', { apiKey: own.apiKey });
    assert.equal(first.body.data.length, 2);
    assert.ok(first.body.meta.nextCursor, 'two more follow');
    const second = await t.request('GET', `/v1/webhook-endpoints?limit=2&cursor=${first.body.meta.nextCursor}`, { apiKey: own.apiKey });
    assert.equal(second.body.data.length, 2);
    assert.equal(second.body.meta.nextCursor, null, 'no empty third page is announced');
    assert.deepEqual([...first.body.data, ...second.body.data].map((w: { id: string }) => w.id), whole.body.data.map((w: { id: string }) => w.id));
  });

  // Regression: a forged cursor whose id merely had 36 hex digits and dashes, or whose timestamp
  // JavaScript could parse but PostgreSQL could not, reached the database and answered 500.
  test('a forged cursor is 400 invalid_cursor on every list, never 500', async () => {
    const id = '3b241101-e2bb-4255-8caf-4136c566a962';
    const forged = [
      ['2026-01-01T00:00:00.000Z', '------------------------------------'],
      ['2026-01-01T00:00:00.000Z', 'gggggggg-gggg-gggg-gggg-gggggggggggg'],
      ['+275760-09-13T00:00:00.000Z', id],
      ['10000', id],
      ['0000-01-01T00:00:00.000Z', id],
      ['1', id],
    ].map((c) => Buffer.from(JSON.stringify(c)).toString('base64url'));
    for (const list of ['/v1/users', '/v1/api-keys', '/v1/entities', '/v1/fiat-accounts', '/v1/crypto-wallets', '/v1/transfers', '/v1/webhook-endpoints']) {
      for (const cursor of forged) assertError(await call('GET', `${list}?cursor=${cursor}`, { apiKey: org.apiKey }), 400, 'invalid_cursor');
    }
    // A cursor the API issued still pages.
    await t.request('POST', '/v1/webhook-endpoints', { apiKey: org.apiKey, body: { url: 'https://example.com/a', eventTypes: ['transfer.status_changed'] } });
    await t.request('POST', '/v1/webhook-endpoints', { apiKey: org.apiKey, body: { url: 'https://example.com/b', eventTypes: ['transfer.status_changed'] } });
    const first = await t.request('GET', '/v1/webhook-endpoints?limit=1', { apiKey: org.apiKey });
    assert.ok(first.body.meta.nextCursor, first.text);
    const next = await t.request('GET', `/v1/webhook-endpoints?limit=1&cursor=${first.body.meta.nextCursor}`, { apiKey: org.apiKey });
    assert.equal(next.status, 200, next.text);
    assert.notEqual(next.body.data[0].id, first.body.data[0].id);
  });
});

describe('size, media type, routes and methods', () => {
  test(`a body over CORRIDOR_BODY_LIMIT_BYTES (${BODY_LIMIT}) is 413 payload_too_large`, async () => {
    const body = { email: 'a@b.c', password: 'p'.repeat(BODY_LIMIT * 2) };
    assertError(await call('POST', '/v1/auth/token', { body }), 413, 'payload_too_large');
    assertError(await call('POST', '/v1/api-keys', { token: org.token, body: { name: 'x'.repeat(BODY_LIMIT * 2), scopes: ['users:read'] } }), 413, 'payload_too_large');
    // Just under the limit is read and judged on its content.
    const under = await call('POST', '/v1/auth/token', { body: { email: 'a@b.c', password: 'p'.repeat(150) } });
    assert.equal(under.status, 401);
  });

  test('an unsupported content type is 415 unsupported_media_type', async () => {
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
      assertError(await call('POST', '/v1/auth/token', { rawBody: 'email=a@b.c&password=x', headers: { 'content-type': type } }), 415, 'unsupported_media_type');
    }
    const untyped = await call('POST', '/v1/auth/token', { rawBody: '{"email":"a@b.c","password":"x"}' });
    assertError(untyped, 415, 'unsupported_media_type');
    // JSON text sent as text/plain is still not JSON to this API.
    assertError(await call('POST', '/v1/auth/token', { rawBody: '{"email":"a@b.c","password":"x"}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  });

  // Regression: Fastify answered a badly encoded path with its own {error, statusCode} body.
  test('a path that is not valid percent-encoding is 400 invalid_url', async () => {
    for (const path of ['/v1/users/%E0%A4%A', '/v1/api-keys/%ZZ']) {
      assertError(await call('GET', path, { apiKey: org.apiKey }), 400, 'invalid_url');
      assertError(await call('DELETE', path, { apiKey: org.apiKey }), 400, 'invalid_url');
    }
  });

  // Regression: Fastify's own 414 for an over-long path parameter came out as code bad_request,
  // with the whole path echoed in the message.
  test('a path parameter over 200 characters is 414 uri_too_long', async () => {
    const res = await call('GET', `/v1/entities/${'a'.repeat(201)}`, { apiKey: org.apiKey });
    assertError(res, 414, 'uri_too_long');
    assert.equal(res.body.message, 'A path parameter is longer than 200 characters');
    assertError(await call('DELETE', `/v1/api-keys/${'a'.repeat(300)}`, { apiKey: org.apiKey }), 414, 'uri_too_long');
    assertError(await call('GET', `/v1/entities/${'a'.repeat(200)}`, { apiKey: org.apiKey }), 422, 'validation_error');
  });

  test('an unknown route is 404 not_found, with or without credentials', async () => {
    assertError(await call('GET', '/v1/nope'), 404, 'not_found');
    assertError(await call('GET', '/v1/nope', { apiKey: org.apiKey }), 404, 'not_found');
    assertError(await call('POST', '/v2/users', { body: {} }), 404, 'not_found');
    assertError(await call('GET', '/'), 404, 'not_found');
  });

  test('a wrong method on a known path is 405 method_not_allowed with Allow', async () => {
    const del = await call('DELETE', '/v1/users', { apiKey: org.apiKey });
    assertError(del, 405, 'method_not_allowed');
    assert.equal(del.headers.allow, 'GET');
    const put = await call('PUT', '/v1/auth/token', { body: {} });
    assertError(put, 405, 'method_not_allowed');
    assert.equal(put.headers.allow, 'POST');
    const keys = await call('PATCH', '/v1/api-keys', { body: {} });
    assertError(keys, 405, 'method_not_allowed');
    assert.deepEqual(String(keys.headers.allow).split(', ').sort(), ['GET', 'POST']);
    const param = await call('GET', '/v1/api-keys/00000000-0000-4000-8000-000000000000', { apiKey: org.apiKey });
    assertError(param, 405, 'method_not_allowed');
    assert.equal(param.headers.allow, 'DELETE');
  });

  test('every answer above was a 4xx without a stack trace or source path', () => {
    assert.ok(seen.length > 30);
    for (const res of seen) {
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text}`);
      assert.doesNotMatch(res.text, /\bat .+:\d+:\d+|node_modules|\.ts\b|stack/i, res.text);
    }
  });
});
