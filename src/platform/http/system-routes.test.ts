// Operations endpoints: the OpenAPI 3.1 document (checked by an independent validator),
// Prometheus metrics and the health check.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compileErrors, validate } from '@readme/openapi-parser';
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
      assert.equal(op(path, method).security, undefined, `${path} needs no credentials`);
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
