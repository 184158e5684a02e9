// Operations endpoints: the OpenAPI 3.1 document (checked by an independent validator),
// Prometheus metrics and the health check.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { SignUpBody } from '../../auth/schemas.ts';
import { startTestServer } from '../../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../../test/helpers/server.ts';

let t: TestServer;
let org: TestOrganization;
before(async () => {
  t = await startTestServer();
  org = await t.newOrganization();
});
after(async () => t.close());

describe('GET /v1/openapi.json', () => {
  let doc: any;
  before(async () => {
    const res = await t.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
  });

  test('is a valid OpenAPI 3.1 document according to @readme/openapi-parser', async () => {
    assert.match(doc.openapi, /^3\.1\./);
    const result = await validate(structuredClone(doc));
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
  });

  test('documents the foundation routes with their security', () => {
    const op = (path: string, method: string) => {
      const found = doc.paths[path]?.[method];
      assert.ok(found, `${method.toUpperCase()} ${path} is documented`);
      return found;
    };
    const either = [{ ApiKey: [] }, { Bearer: [] }];
    assert.deepEqual(op('/v1/users', 'get').security, either);
    assert.equal(op('/v1/users', 'get')['x-required-scope'], 'users:read');
    assert.deepEqual(op('/v1/users/me', 'get').security, [{ Bearer: [] }]);
    assert.deepEqual(op('/v1/api-keys', 'post').security, [{ Bearer: [] }]);
    assert.deepEqual(op('/v1/api-keys', 'get').security, either);
    assert.deepEqual(op('/v1/api-keys/{id}', 'delete').security, either);
    for (const [path, method] of [['/v1/auth/signup', 'post'], ['/v1/auth/token', 'post'], ['/.well-known/jwks.json', 'get'], ['/health', 'get']] as const) {
      assert.deepEqual(op(path, method).security, [], `${path} needs no credentials, and says so`);
    }
    assert.equal(doc.components.securitySchemes.ApiKey.name, 'X-API-Key');
    assert.equal(doc.components.securitySchemes.Bearer.scheme, 'bearer');
    // The guard's own answers are on every protected route, the shell's on every route with a body.
    const me = op('/v1/users/me', 'get').responses;
    for (const status of ['401', '403', '429', '500']) assert.ok(me[status], `users/me documents ${status}`);
    const signup = op('/v1/auth/signup', 'post').responses;
    for (const status of ['201', '400', '403', '409', '413', '415', '422']) assert.ok(signup[status], `signup documents ${status}`);
  });

  test('the request schemas in the document are the ones that validate requests', () => {
    const body = doc.paths['/v1/auth/signup'].post.requestBody.content['application/json'].schema;
    assert.deepEqual([...body.required].sort(), [...SignUpBody.required].sort());
    assert.equal(body.properties.password.minLength, (SignUpBody.properties.password as { minLength?: number }).minLength);
    assert.equal(body.properties.password.minLength, 10);
    assert.equal(body.properties.email.format, 'email');
    assert.equal(body.additionalProperties, false);
  });

  test('every documented error response is the Error shape {code, message, details?}', () => {
    assert.ok(doc.components.schemas.Error, JSON.stringify(Object.keys(doc.components.schemas)));
    let checked = 0;
    for (const [path, operations] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        for (const [status, response] of Object.entries<any>(operation.responses ?? {})) {
          // /health's 503 is its own report, not an error of the API.
          if (Number(status) < 400 || path === '/health') continue;
          let schema = response.content?.['application/json']?.schema;
          if (schema?.$ref) schema = doc.components.schemas[schema.$ref.split('/').pop()];
          assert.deepEqual([...(schema?.required ?? [])].sort(), ['code', 'message'], `${method} ${path} ${status}`);
          checked++;
        }
      }
    }
    assert.ok(checked > 20);
  });
});

describe('the OpenAPI document is the contract clients generate from', () => {
  let doc: any;
  before(async () => {
    doc = (await t.request('GET', '/v1/openapi.json')).body;
  });

  const operations = () =>
    Object.entries<any>(doc.paths).flatMap(([path, ops]) => Object.entries<any>(ops).map(([method, operation]) => ({ path, method, operation })));

  /** The operation a concrete request reaches: the matching template with the fewest parameters. */
  const operationFor = (method: string, url: string) => {
    const path = url.split('?')[0]!;
    const matches = Object.keys(doc.paths)
      .filter((p) => doc.paths[p][method.toLowerCase()] && new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path))
      .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
    assert.ok(matches.length, `${method} ${path} is documented`);
    return doc.paths[matches[0]!][method.toLowerCase()];
  };

  test('lists every route the server serves (HEAD twins and the dashboard page aside)', () => {
    // printRoutes draws a tree; rebuild each full path from its ancestors.
    const served: string[] = [];
    const stack: string[] = [];
    for (const line of t.server.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const m = line.match(/^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/);
      if (!m) continue;
      const depth = m[1]!.length / 4;
      stack.length = depth;
      stack.push(m[2]!);
      for (const method of (m[3] ?? '').split(', ').filter((x) => x && x !== 'HEAD')) {
        served.push(`${method} ${stack.join('').replace(/:(\w+)/g, '{$1}')}`);
      }
    }
    const documented = operations().map(({ path, method }) => `${method.toUpperCase()} ${path}`);
    assert.ok(served.length > 50, served.join('\n'));
    // The dashboard's page and its files are for browsers, not API operations (src/dashboard).
    const pages = ['GET /dashboard', 'GET /dashboard/{file}'];
    assert.deepEqual(served.filter((r) => !documented.includes(r) && !pages.includes(r)), []);
    assert.deepEqual(pages.filter((r) => !served.includes(r)), []);
    assert.deepEqual(documented.filter((r) => !served.includes(r)), []);
  });

  test('every operation has a unique operationId, a summary, tags, security, a success schema and coded errors', () => {
    const ids = new Set<string>();
    for (const { path, method, operation } of operations()) {
      const at = `${method.toUpperCase()} ${path}`;
      assert.match(operation.operationId ?? '', /^[a-z][A-Za-z]+$/, `${at} operationId`);
      assert.ok(!ids.has(operation.operationId), `${at}: operationId ${operation.operationId} is used twice`);
      ids.add(operation.operationId);
      assert.ok(operation.summary, `${at} summary`);
      assert.ok(operation.tags?.length, `${at} tags`);
      assert.ok(Array.isArray(operation.security), `${at} security`);
      const success = Object.entries<any>(operation.responses).filter(([status]) => Number(status) < 400 && !(path === '/health' && status === '503'));
      assert.ok(success.length, `${at} documents a success`);
      for (const [status, response] of success) {
        if (status === '204') continue;
        const schemas = Object.values<any>(response.content ?? {}).map((c) => c.schema);
        assert.ok(schemas.length && schemas.every(Boolean), `${at} ${status} has a schema`);
      }
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (Number(status) < 400 || (path === '/health' && status === '503')) continue;
        const codes = response.content?.['application/json']?.schema?.properties?.code?.enum;
        assert.ok(Array.isArray(codes) && codes.length, `${at} ${status} lists its error codes`);
      }
    }
  });

  test('the two idempotent creations document their Idempotency-Key as required', () => {
    for (const path of ['/v1/transfers', '/v1/reports']) {
      const header = doc.paths[path].post.parameters.find((p: any) => p.in === 'header' && p.name === 'idempotency-key');
      assert.equal(header?.required, true, path);
    }
  });

  test('real answers match their documented status, error code and schema', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
    addFormats.default(ajv);
    const entity = await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'BUSINESS', legalName: 'Acme', country: 'US' } });
    const Z = '00000000-0000-4000-8000-000000000000';
    const quote = {
      entityId: entity.body.id,
      amount: '10.00',
      fixedSide: 'FROM',
      from: { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' },
      to: { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' },
    };
    const k = { apiKey: org.apiKey };
    const calls: Array<[string, string, Parameters<TestServer['request']>[2]?]> = [
      ['GET', '/health'],
      ['GET', '/v1/openapi.json'],
      ['GET', '/v1/rails', k],
      ['GET', '/v1/users', k],
      ['GET', '/v1/users?cursor=not-a-cursor', k],
      ['GET', '/v1/users'],
      ['GET', '/v1/users', { apiKey: 'sk_sandbox_nope' }],
      ['GET', '/v1/users/me', k],
      ['GET', '/v1/users/me', { token: org.token }],
      ['GET', '/v1/api-keys', k],
      ['GET', `/v1/entities/${entity.body.id}`, k],
      ['POST', '/v1/entities', { ...k, body: {} }],
      ['POST', '/v1/entities', { ...k, rawBody: '{bad', headers: { 'content-type': 'application/json' } }],
      ['POST', '/v1/quotes', { ...k, body: quote }],
      ['POST', '/v1/quotes', { ...k, body: { ...quote, to: { ...quote.to, country: 'AR' } } }],
      ['POST', '/v1/transfers', { ...k, body: {} }],
      ['POST', '/v1/transfers', { ...k, headers: { 'idempotency-key': 'a' }, body: { quoteOptionId: Z, entityId: entity.body.id, destination: { type: 'FIAT_ACCOUNT', fiatAccountId: Z } } }],
      ['GET', `/v1/transfers/${Z}`, k],
      // Routes that take no fields still parse a body that is sent.
      ['POST', `/v1/transfers/${Z}/cancel`, { ...k, rawBody: '', headers: { 'content-type': 'application/json' } }],
      ['DELETE', `/v1/webhook-endpoints/${Z}`, { ...k, rawBody: 'x', headers: { 'content-type': 'text/plain' } }],
      ['POST', '/v1/reports', { ...k, body: {} }],
      ['GET', `/v1/report-downloads/${Z}?expires=1&signature=abc`],
      ['GET', '/v1/ops/transfers', { token: org.token }],
    ];
    for (const [method, url, options] of calls) {
      const res = await t.request(method, url, options);
      const at = `${method} ${url} → ${res.status} ${res.text.slice(0, 200)}`;
      const response = operationFor(method, url).responses[res.status];
      assert.ok(response, `${at}: status not documented`);
      const schema = response.content?.['application/json']?.schema;
      assert.ok(schema, `${at}: no JSON schema`);
      if (res.status >= 400) assert.ok(schema.properties.code.enum.includes(res.body.code), `${at}: code not among ${schema.properties.code.enum}`);
      const check = ajv.compile(schema);
      assert.ok(check(res.body), `${at}: ${JSON.stringify(check.errors)}`);
    }
  });

  test('non-JSON answers document their content types', () => {
    assert.deepEqual(Object.keys(doc.paths['/metrics'].get.responses['200'].content), ['text/plain']);
    assert.deepEqual(Object.keys(doc.paths['/v1/report-downloads/{reportId}'].get.responses['200'].content).sort(), ['application/xml', 'text/csv']);
  });
});

describe('GET /metrics and /health', () => {
  test('/health answers 200 {status:"ok"} while the database answers', async () => {
    const res = await t.request('GET', '/health');
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'ok');
    assert.equal(res.body.database, 'ok');
    assert.equal(res.body.engine, t.server.db.engine);
  });

  test('/metrics counts requests by route pattern and reports job queue depth', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    await t.request('GET', '/v1/users', { apiKey: org.apiKey });
    await t.request('DELETE', `/v1/api-keys/${id}`, { apiKey: org.apiKey });
    await t.request('GET', '/v1/does-not-exist');
    await t.server.queue.send('idempotency.prune', {}, { startAfter: new Date(Date.now() + 3600_000) });

    const res = await t.request('GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    const text = res.text;
    assert.match(text, /^corridor_http_requests_total\{method="GET",route="\/v1\/users",status="200"\} [1-9]/m);
    // Route patterns, not concrete paths: ids do not explode the label space.
    assert.match(text, /corridor_http_requests_total\{method="DELETE",route="\/v1\/api-keys\/:id",status="404"\} 1/);
    assert.doesNotMatch(text, new RegExp(id));
    assert.match(text, /corridor_http_requests_total\{method="GET",route="unmatched",status="404"\} [1-9]/);
    assert.match(text, /^corridor_http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/v1\/users"\} [1-9]/m);
    const depth = text.match(/^corridor_job_queue_depth\{queue="idempotency\.prune",state="queued"\} (\d+)/m);
    assert.ok(depth, 'queue depth gauge for the prune queue');
    assert.ok(Number(depth[1]) >= 1, 'the delayed job is counted as queued');
    assert.match(text, /^corridor_job_queue_depth\{queue="idempotency\.prune",state="active"\} \d+/m);
  });
});
