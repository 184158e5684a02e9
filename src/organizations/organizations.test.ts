import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { operatorToken } from '../../test/helpers/ops.ts';

const NOT_A_KNOWN_ID = '00000000-0000-4000-8000-000000000000';
const PREVIEW = { type: 'TRANSFER_ACTIVITY', filters: { from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z' } };

describe('organization features (production)', () => {
  let t: TestServer;
  let ops: string;
  before(async () => {
    t = await startTestServer({ CORRIDOR_ENV: 'production', CORRIDOR_SIGNUP: 'open' });
    ops = await operatorToken(t);
  });
  after(async () => t.close());

  const preview = (org: TestOrganization, credentials: { apiKey: string } | { token: string }) =>
    t.request('POST', '/v1/reports/preview', { ...credentials, body: PREVIEW });
  const features = async (org: TestOrganization) => {
    const res = await t.request('GET', `/v1/ops/organizations/${org.organizationId}`, { token: ops });
    assert.equal(res.status, 200, res.text);
    return res.body.features as string[];
  };

  test('an operator turns reports on and off for an organization; its keys and tokens follow at once', async () => {
    const org = await t.newOrganization('Prod');
    const shown = await t.request('GET', `/v1/ops/organizations/${org.organizationId}`, { token: ops });
    assert.equal(shown.status, 200, shown.text);
    assert.deepEqual(Object.keys(shown.body).sort(), ['createdAt', 'features', 'id', 'kind', 'name']);
    assert.equal(shown.body.id, org.organizationId);
    assert.equal(shown.body.kind, 'CUSTOMER');
    assert.match(shown.body.name, /^Prod \d+$/);
    assert.deepEqual(shown.body.features, []);
    assert.match(shown.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    for (const credentials of [{ apiKey: org.apiKey }, { token: org.token }]) {
      const off = await preview(org, credentials);
      assert.equal(off.status, 403, off.text);
      assert.equal(off.body.code, 'feature_not_enabled');
    }

    const on = await t.request('PATCH', `/v1/ops/organizations/${org.organizationId}`, { token: ops, body: { features: ['reports', 'reports'] } });
    assert.equal(on.status, 200, on.text);
    assert.deepEqual(on.body.features, ['reports']);
    assert.equal(on.body.createdAt, shown.body.createdAt);
    assert.deepEqual(await features(org), ['reports']);
    for (const credentials of [{ apiKey: org.apiKey }, { token: org.token }]) {
      const res = await preview(org, credentials);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.matchingTransferCount, 0);
    }

    const disabled = await t.request('PATCH', `/v1/ops/organizations/${org.organizationId}`, { token: ops, body: { features: [] } });
    assert.equal(disabled.status, 200, disabled.text);
    assert.deepEqual(disabled.body.features, []);
    const again = await preview(org, { apiKey: org.apiKey });
    assert.equal(again.status, 403);
    assert.equal(again.body.code, 'feature_not_enabled');
  });

  test('enabling one organization leaves the others as they were', async () => {
    const a = await t.newOrganization('A');
    const b = await t.newOrganization('B');
    assert.equal((await t.request('PATCH', `/v1/ops/organizations/${a.organizationId}`, { token: ops, body: { features: ['reports'] } })).status, 200);
    assert.equal((await preview(a, { apiKey: a.apiKey })).status, 200);
    assert.equal((await preview(b, { apiKey: b.apiKey })).body.code, 'feature_not_enabled');
    assert.deepEqual(await features(b), []);
  });

  test('PATCH refuses unknown features and malformed bodies (422) and leaves the features unchanged', async () => {
    const org = await t.newOrganization('Bad');
    const patch = (body: unknown) => t.request('PATCH', `/v1/ops/organizations/${org.organizationId}`, { token: ops, body });

    const unknown = await patch({ features: ['reports', 'teleportation'] });
    assert.equal(unknown.status, 422, unknown.text);
    assert.equal(unknown.body.code, 'validation_error');
    assert.ok(unknown.body.details.some((d: { path: string }) => d.path === 'features.1'), unknown.text);

    for (const body of [{}, { features: 'reports' }, { features: ['reports'], name: 'Renamed' }, { features: [null] }]) {
      const res = await patch(body);
      assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.code, 'validation_error');
    }
    assert.deepEqual(await features(org), []);

    const badId = await t.request('PATCH', '/v1/ops/organizations/not-a-uuid', { token: ops, body: { features: ['reports'] } });
    assert.equal(badId.status, 422);
    assert.ok(badId.body.details.some((d: { path: string }) => d.path === 'path.id'), badId.text);
  });

  test('an unknown organization is 404 not_found', async () => {
    for (const res of [
      await t.request('GET', `/v1/ops/organizations/${NOT_A_KNOWN_ID}`, { token: ops }),
      await t.request('PATCH', `/v1/ops/organizations/${NOT_A_KNOWN_ID}`, { token: ops, body: { features: ['reports'] } }),
    ]) {
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.code, 'not_found');
      assert.equal(res.body.message, 'Organization not found');
    }
  });

  test('callers who are not SERVICE_OPS cannot read or change features, not even their own', async () => {
    const org = await t.newOrganization('Self-service');
    for (const credentials of [{ token: org.token }, { apiKey: org.apiKey }]) {
      const read = await t.request('GET', `/v1/ops/organizations/${org.organizationId}`, credentials);
      assert.equal(read.status, 403, read.text);
      assert.equal(read.body.code, 'insufficient_permissions');
      const patch = await t.request('PATCH', `/v1/ops/organizations/${org.organizationId}`, { ...credentials, body: { features: ['reports'] } });
      assert.equal(patch.status, 403, patch.text);
      assert.equal(patch.body.code, 'insufficient_permissions');
    }
    const anonymous = await t.request('PATCH', `/v1/ops/organizations/${org.organizationId}`, { body: { features: ['reports'] } });
    assert.equal(anonymous.status, 401);
    assert.deepEqual(await features(org), []);
    assert.equal((await preview(org, { apiKey: org.apiKey })).body.code, 'feature_not_enabled');
  });

  test('the OpenAPI document describes both routes as operator-only', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const path = doc.paths['/v1/ops/organizations/{id}'];
    assert.ok(path?.get && path?.patch, 'routes missing from the OpenAPI document');
    assert.match(path.patch.description, /SERVICE_OPS users only/);
    assert.match(path.patch.description, /production/);
    assert.ok(path.patch.responses['422'] && path.patch.responses['404'] && path.get.responses['404']);
  });
});

describe('organization features (sandbox)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  test('a sandbox organization starts with reports on, and an operator can turn it off', async () => {
    const ops = await operatorToken(t);
    const org = await t.newOrganization('Sandbox');
    assert.deepEqual((await t.request('GET', `/v1/ops/organizations/${org.organizationId}`, { token: ops })).body.features, ['reports']);
    assert.equal((await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: PREVIEW })).status, 200);
    assert.equal((await t.request('PATCH', `/v1/ops/organizations/${org.organizationId}`, { token: ops, body: { features: [] } })).status, 200);
    const off = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: PREVIEW });
    assert.equal(off.status, 403);
    assert.equal(off.body.code, 'feature_not_enabled');
  });

  test('the operator organization is no customer: it starts with no features, even in the sandbox', async () => {
    const ops = await operatorToken(t);
    const operatorOrg = (await t.server.services.organizations.operator())!;
    const shown = await t.request('GET', `/v1/ops/organizations/${operatorOrg.id}`, { token: ops });
    assert.equal(shown.status, 200, shown.text);
    assert.equal(shown.body.kind, 'OPERATOR');
    assert.deepEqual(shown.body.features, []);
    const preview = await t.request('POST', '/v1/reports/preview', { token: ops, body: PREVIEW });
    assert.equal(preview.status, 403);
    assert.equal(preview.body.code, 'feature_not_enabled');
  });
});
