import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';

const OPS = { email: 'entity-ops@corridor.example', password: 'operator password 42' };
const NOT_A_KNOWN_ID = '00000000-0000-4000-8000-000000000000';

const individual = (overrides: Record<string, unknown> = {}) => ({
  type: 'INDIVIDUAL',
  firstName: 'Ada',
  lastName: 'Lovelace',
  email: 'ada@example.com',
  dateOfBirth: '1990-12-10',
  country: 'GB',
  address: { line1: '12 St James Square', city: 'London', postalCode: 'SW1Y 4JH', country: 'GB' },
  ...overrides,
});

const business = (overrides: Record<string, unknown> = {}) => ({
  type: 'BUSINESS',
  legalName: 'Acme Handelsgesellschaft mbH',
  registrationNumber: 'HRB 12345',
  country: 'DE',
  ...overrides,
});

async function opsToken(t: TestServer): Promise<string> {
  const res = await t.request('POST', '/v1/auth/token', { body: OPS });
  assert.equal(res.status, 200, res.text);
  return res.body.accessToken;
}

describe('entities (sandbox)', () => {
  let t: TestServer;
  let a: TestOrganization;
  let b: TestOrganization;
  before(async () => {
    t = await startTestServer({ CORRIDOR_OPS_EMAIL: OPS.email, CORRIDOR_OPS_PASSWORD: OPS.password });
    a = await t.newOrganization('A');
    b = await t.newOrganization('B');
  });
  after(async () => t.close());

  test('an INDIVIDUAL is created ACTIVE in the sandbox and reads back with its identity fields', async () => {
    const created = await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual() });
    assert.equal(created.status, 201, created.text);
    const e = created.body;
    assert.equal(e.type, 'INDIVIDUAL');
    assert.equal(e.status, 'ACTIVE');
    assert.equal(e.statusReason, null);
    assert.equal(e.firstName, 'Ada');
    assert.equal(e.lastName, 'Lovelace');
    assert.equal(e.dateOfBirth, '1990-12-10');
    assert.deepEqual(e.address, { line1: '12 St James Square', city: 'London', postalCode: 'SW1Y 4JH', country: 'GB' });
    assert.match(e.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const read = await t.request('GET', `/v1/entities/${e.id}`, { token: a.token });
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, e);
  });

  test('a BUSINESS is created ACTIVE with its legal name', async () => {
    const created = await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: business() });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.status, 'ACTIVE');
    assert.equal(created.body.legalName, 'Acme Handelsgesellschaft mbH');
    assert.equal(created.body.firstName, undefined);
  });

  test('magic names: lastName/legalName "Pending" stays PENDING, "Rejected" is REJECTED', async () => {
    const cases = [
      [individual({ lastName: 'Pending' }), 'PENDING'],
      [individual({ lastName: 'rejected' }), 'REJECTED'],
      [business({ legalName: 'Pending' }), 'PENDING'],
      [business({ legalName: 'Rejected' }), 'REJECTED'],
      [individual({ firstName: 'Pending' }), 'ACTIVE'],
    ] as const;
    for (const [body, status] of cases) {
      const res = await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.status, status, JSON.stringify(body));
      if (status === 'REJECTED') assert.ok(res.body.statusReason);
    }
  });

  test('requireActive answers ACTIVE entities, 422 entity_not_onboarded otherwise, 404 for other organizations', async () => {
    const entities = t.server.services.entities;
    const active = (await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual() })).body;
    const pending = (await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual({ lastName: 'Pending' }) })).body;
    const rejected = (await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual({ lastName: 'Rejected' }) })).body;
    assert.equal((await entities.requireActive(a.organizationId, active.id)).id, active.id);
    for (const e of [pending, rejected]) {
      await assert.rejects(entities.requireActive(a.organizationId, e.id), { statusCode: 422, code: 'entity_not_onboarded' });
    }
    await assert.rejects(entities.requireActive(b.organizationId, active.id), { statusCode: 404, code: 'not_found' });
    await assert.rejects(entities.get(b.organizationId, active.id), { statusCode: 404, code: 'not_found' });
    await assert.rejects(entities.get(a.organizationId, 'not-a-uuid'), { statusCode: 404, code: 'not_found' });
  });

  test('validation names the field: missing per-type fields, unknown fields, bad country, future birth date', async () => {
    const cases: Array<[unknown, string]> = [
      [{ type: 'INDIVIDUAL', firstName: 'Ada', country: 'GB' }, 'lastName'],
      [{ type: 'BUSINESS', country: 'DE' }, 'legalName'],
      [business({ firstName: 'Ada' }), 'firstName'],
      [individual({ country: 'XX' }), 'country'],
      [individual({ country: 'gb' }), 'country'],
      [individual({ address: { line1: '1 Main St', city: 'Springfield', country: 'ZZ' } }), 'address.country'],
      [individual({ dateOfBirth: '2999-01-01' }), 'dateOfBirth'],
      [individual({ dateOfBirth: '1990-02-30' }), 'dateOfBirth'],
      [individual({ email: 'not an email' }), 'email'],
      [{ type: 'TRUST', country: 'DE' }, 'type'],
    ];
    for (const [body, path] of cases) {
      const res = await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body });
      assert.equal(res.status, 422, `${JSON.stringify(body)} → ${res.text}`);
      assert.equal(res.body.code, 'validation_error');
      assert.ok(res.body.details.some((d: { path: string }) => d.path === path), `${path} in ${res.text}`);
    }
    // Born today is not in the past either (UTC days; judged only if the day did not turn meanwhile).
    const today = () => new Date().toISOString().slice(0, 10);
    const day = today();
    const bornToday = await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual({ dateOfBirth: day }) });
    if (today() === day) {
      assert.equal(bornToday.status, 422, bornToday.text);
      assert.deepEqual(bornToday.body.details.map((d: { path: string }) => d.path), ['dateOfBirth']);
    }
  });

  test('GET /v1/entities lists only the caller organization, with cursor pages and a status and a type filter', async () => {
    const org = await t.newOrganization('Lister');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: individual({ firstName: `P${i}` }) })).body.id);
    const pendingId = (await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: business({ legalName: 'Pending' }) })).body.id;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await t.request('GET', `/v1/entities?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { apiKey: org.apiKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.meta.total, 6);
      seen.push(...res.body.data.map((e: { id: string }) => e.id));
      cursor = res.body.meta.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, [...ids, pendingId]);
    const pending = await t.request('GET', '/v1/entities?status=PENDING', { apiKey: org.apiKey });
    assert.deepEqual(pending.body.data.map((e: { id: string }) => e.id), [pendingId]);
    const businesses = await t.request('GET', '/v1/entities?type=BUSINESS', { apiKey: org.apiKey });
    assert.deepEqual(businesses.body.data.map((e: { id: string }) => e.id), [pendingId]);
    assert.equal(businesses.body.meta.total, 1);
    const individuals = await t.request('GET', '/v1/entities?type=INDIVIDUAL&status=ACTIVE&limit=100', { apiKey: org.apiKey });
    assert.deepEqual(individuals.body.data.map((e: { id: string }) => e.id), ids);
    const other = await t.request('GET', '/v1/entities', { apiKey: b.apiKey });
    assert.ok(!other.body.data.some((e: { id: string }) => seen.includes(e.id)));
  });

  test("another organization's entity answers 404 on every entity endpoint", async () => {
    const e = (await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual() })).body;
    for (const id of [e.id, NOT_A_KNOWN_ID]) {
      const res = await t.request('GET', `/v1/entities/${id}`, { apiKey: b.apiKey });
      assert.equal(res.status, 404);
      assert.equal(res.body.code, 'not_found');
    }
  });

  test('scopes: entities:read to read, entities:write to create', async () => {
    const key = await t.request('POST', '/v1/api-keys', { token: a.token, body: { name: 'reader', scopes: ['entities:read'] } });
    const reader = key.body.secret as string;
    const create = await t.request('POST', '/v1/entities', { apiKey: reader, body: individual() });
    assert.equal(create.status, 403);
    assert.equal(create.body.code, 'insufficient_permissions');
    assert.equal((await t.request('GET', '/v1/entities', { apiKey: reader })).status, 200);
    const none = (await t.request('POST', '/v1/api-keys', { token: a.token, body: { name: 'none', scopes: ['users:read'] } })).body.secret as string;
    assert.equal((await t.request('GET', '/v1/entities', { apiKey: none })).status, 403);
  });

  test('operators approve or reject a PENDING entity of any organization; customers cannot', async () => {
    const ops = await opsToken(t);
    const pending = (await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual({ lastName: 'Pending' }) })).body;
    const pending2 = (await t.request('POST', '/v1/entities', { apiKey: b.apiKey, body: business({ legalName: 'Pending' }) })).body;

    const byCustomer = await t.request('POST', `/v1/ops/entities/${pending.id}/approve`, { token: a.token });
    assert.equal(byCustomer.status, 403);

    const queue = await t.request('GET', '/v1/ops/entities?limit=100', { token: ops });
    assert.equal(queue.status, 200);
    const queued = queue.body.data.map((e: { id: string; organizationId: string }) => [e.id, e.organizationId]);
    assert.deepEqual([...new Set(queue.body.data.map((e: { status: string }) => e.status))], ['PENDING'], 'the review queue holds PENDING entities only');
    assert.ok(queued.some(([id, org]: [string, string]) => id === pending.id && org === a.organizationId));
    assert.ok(queued.some(([id, org]: [string, string]) => id === pending2.id && org === b.organizationId));

    const approved = await t.request('POST', `/v1/ops/entities/${pending.id}/approve`, { token: ops });
    assert.equal(approved.status, 200, approved.text);
    assert.equal(approved.body.status, 'ACTIVE');
    assert.equal((await t.request('GET', `/v1/entities/${pending.id}`, { apiKey: a.apiKey })).body.status, 'ACTIVE');

    const rejected = await t.request('POST', `/v1/ops/entities/${pending2.id}/reject`, { token: ops, body: { reason: 'Registration number not found' } });
    assert.equal(rejected.status, 200, rejected.text);
    const seen = (await t.request('GET', `/v1/entities/${pending2.id}`, { apiKey: b.apiKey })).body;
    assert.equal(seen.status, 'REJECTED');
    assert.equal(seen.statusReason, 'Registration number not found');

    // Decisions are final: a REJECTED entity cannot be approved later, and leaves the review queue.
    const lateApproval = await t.request('POST', `/v1/ops/entities/${pending2.id}/approve`, { token: ops });
    assert.equal(lateApproval.status, 409, lateApproval.text);
    assert.equal(lateApproval.body.code, 'invalid_status_transition');
    assert.equal((await t.request('GET', `/v1/entities/${pending2.id}`, { apiKey: b.apiKey })).body.status, 'REJECTED');
    const queueAfter = await t.request('GET', '/v1/ops/entities?limit=100', { token: ops });
    assert.ok(!queueAfter.body.data.some((e: { id: string }) => e.id === pending.id || e.id === pending2.id));
    const decided = await t.request('GET', '/v1/ops/entities?limit=100&status=REJECTED', { token: ops });
    assert.ok(decided.body.data.some((e: { id: string }) => e.id === pending2.id));

    const again = await t.request('POST', `/v1/ops/entities/${pending.id}/reject`, { token: ops });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'invalid_status_transition');
    assert.equal((await t.request('POST', `/v1/ops/entities/${NOT_A_KNOWN_ID}/approve`, { token: ops })).status, 404);
  });

  test('an approval and a rejection racing for one PENDING entity: exactly one decides, the other is 409', async () => {
    const ops = await opsToken(t);
    for (let i = 0; i < 3; i++) {
      const pending = (await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body: individual({ lastName: 'Pending' }) })).body;
      const [approve, reject] = await Promise.all([
        t.request('POST', `/v1/ops/entities/${pending.id}/approve`, { token: ops }),
        t.request('POST', `/v1/ops/entities/${pending.id}/reject`, { token: ops, body: { reason: 'Raced' } }),
      ]);
      assert.deepEqual([approve.status, reject.status].sort(), [200, 409], `${approve.text} ${reject.text}`);
      const loser = approve.status === 409 ? approve : reject;
      assert.equal(loser.body.code, 'invalid_status_transition');
      const winner = approve.status === 200 ? approve : reject;
      assert.equal((await t.request('GET', `/v1/entities/${pending.id}`, { apiKey: a.apiKey })).body.status, winner.body.status);
    }
  });
});

describe('entities (production)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ CORRIDOR_ENV: 'production', CORRIDOR_SIGNUP: 'open', CORRIDOR_OPS_EMAIL: OPS.email, CORRIDOR_OPS_PASSWORD: OPS.password });
  });
  after(async () => t.close());

  test('a new entity starts PENDING (magic names mean nothing) until an operator approves it', async () => {
    const a = await t.newOrganization('Prod');
    for (const body of [individual(), individual({ lastName: 'Rejected' }), business()]) {
      const res = await t.request('POST', '/v1/entities', { apiKey: a.apiKey, body });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.status, 'PENDING');
    }
    const e = (await t.request('GET', '/v1/entities', { apiKey: a.apiKey })).body.data[0];
    await assert.rejects(t.server.services.entities.requireActive(a.organizationId, e.id), { code: 'entity_not_onboarded' });
    const approved = await t.request('POST', `/v1/ops/entities/${e.id}/approve`, { token: await opsToken(t) });
    assert.equal(approved.status, 200, approved.text);
    assert.equal((await t.server.services.entities.requireActive(a.organizationId, e.id)).status, 'ACTIVE');
  });
});
