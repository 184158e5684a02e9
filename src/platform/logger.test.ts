// Structured logs carry a request id and never a secret: API keys, bearer tokens, passwords and
// freshly minted secrets all pass through the server here, and none may reach a log line.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { startTestServer } from '../../test/helpers/server.ts';
import { createLogger } from './logger.ts';
import type { TestServer } from '../../test/helpers/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer({ CORRIDOR_LOG_LEVEL: 'info' });
});
after(async () => t.close());

test('requests with an API key, a bearer token and passwords leave no secret in the logs', async () => {
  const password = 'hunter2-but-much-longer';
  const signup = await t.request('POST', '/v1/auth/signup', { body: { organizationName: 'Log Co', email: 'log@example.com', password, fullName: 'Log Owner' } });
  assert.equal(signup.status, 201);
  const signupToken: string = signup.body.accessToken;
  const token = await t.request('POST', '/v1/auth/token', { body: { email: 'log@example.com', password } });
  assert.equal(token.status, 200);
  const accessToken: string = token.body.accessToken;
  const key = await t.request('POST', '/v1/api-keys', { token: accessToken, body: { name: 'logged', scopes: ['users:read'] } });
  assert.equal(key.status, 201);
  const apiKey: string = key.body.secret;

  assert.equal((await t.request('GET', '/v1/users', { apiKey })).status, 200);
  assert.equal((await t.request('GET', '/v1/users/me', { token: accessToken })).status, 200);
  // Failures are logged too, with whatever the client sent.
  assert.equal((await t.request('GET', '/v1/users', { apiKey: apiKey.slice(0, -1) + (apiKey.endsWith('Q') ? 'R' : 'Q') })).status, 401);
  assert.equal((await t.request('POST', '/v1/auth/token', { body: { email: 'log@example.com', password: `${password}-wrong` } })).status, 401);
  assert.equal((await t.request('GET', '/v1/users', { headers: { cookie: `session=${accessToken}` } })).status, 401);

  const everything = t.rawLogs.join('\n');
  const secrets = {
    password,
    signupToken,
    accessToken,
    apiKey,
    apiKeySecretPart: apiKey.slice('sk_sandbox_'.length + 16),
    tokenSignature: accessToken.split('.')[2]!,
  };
  for (const [name, secret] of Object.entries(secrets)) {
    assert.ok(!everything.includes(secret), `${name} appears in the logs`);
  }

  const requestLines = t.logs.filter((l) => l.req || l.res);
  const withHeaders = requestLines.filter((l) => (l.req as { headers?: Record<string, unknown> } | undefined)?.headers);
  const headerValues = (name: string) => withHeaders.map((l) => (l.req as { headers: Record<string, unknown> }).headers[name]).filter((v) => v !== undefined);
  assert.ok(headerValues('x-api-key').length >= 2, 'API key requests were logged');
  assert.ok(headerValues('authorization').length >= 2, 'bearer requests were logged');
  for (const value of [...headerValues('x-api-key'), ...headerValues('authorization'), ...headerValues('cookie')]) assert.equal(value, '[redacted]');
});

test('every request log line carries the request id, which the client also sees', async () => {
  const before = t.logs.length;
  const res = await t.request('GET', '/v1/users', { headers: { 'x-request-id': 'client-chosen-id-123' } });
  assert.equal(res.headers['x-request-id'], 'client-chosen-id-123');
  const generated = await t.request('GET', '/health');
  assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  // An unusable incoming id (spaces, too long) is replaced, not echoed into the logs.
  const hostile = await t.request('GET', '/v1/users', { headers: { 'x-request-id': 'a b\tc' } });
  assert.notEqual(hostile.headers['x-request-id'], 'a b\tc');

  const mine = t.logs.slice(before).filter((l) => l.reqId === 'client-chosen-id-123');
  assert.ok(mine.some((l) => l.msg === 'incoming request'));
  assert.ok(mine.some((l) => l.msg === 'request completed'));

  const requestLines = t.logs.filter((l) => l.req || l.res || l.responseTime !== undefined);
  assert.ok(requestLines.length > 10);
  for (const line of requestLines) {
    assert.equal(typeof line.reqId, 'string', JSON.stringify(line));
    assert.ok((line.reqId as string).length > 0);
    assert.equal(line.service, 'corridor');
    assert.match(String(line.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
  // Query strings are dropped: they can carry signed download tokens.
  const lines = t.logs.length;
  await t.request('GET', '/v1/users?cursor=very-secret-download-token');
  assert.ok(t.logs.slice(lines).some((l) => (l.req as { url?: string } | undefined)?.url === '/v1/users'));
  assert.ok(!t.rawLogs.join('\n').includes('very-secret-download-token'));
});

// Regression: the embedded database attaches a failed statement's parameters to its error, and a
// failed webhook-endpoint insert logged the new signing secret with them.
test("a logged error keeps its message and SQL but not the failed statement's parameters", () => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
  const failed = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
    code: '22021',
    query: 'insert into "webhook_endpoints" ("secret") values ($1)',
    params: ['whsec_u5LS0WfHwlLVG4CH2j2NTeFNVNW+9oIl/DA2ucWdr+U='],
  });
  createLogger('info', sink).error({ err: failed }, 'request failed');
  assert.equal(lines.length, 1);
  assert.ok(!lines[0]!.includes('whsec_'), lines[0]);
  const logged = JSON.parse(lines[0]!).err;
  assert.equal(logged.message, failed.message);
  assert.equal(logged.code, '22021');
  assert.equal(logged.query, failed.query);
  assert.equal(logged.params, undefined);
});
