// The report endpoints as a client meets them: preview counts and limits, creation and its
// idempotency, permissions, the organization feature, tenancy.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { createReport, settledReport } from '../../test/helpers/reports.ts';
import { insertTransfers } from '../../test/fixtures/report-data.ts';
import type { FixtureTransfer } from '../../test/fixtures/report-data.ts';

const FROM = '2026-05-01T00:00:00.000Z';
const TO = '2026-05-02T00:00:00.000Z';

let t: TestServer;
let org: TestOrganization;

const activity = (filters: Record<string, unknown> = {}) => ({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO, ...filters } });
const history = (filters: Record<string, unknown> = {}) => ({ type: 'TRANSFER_STATUS_HISTORY', filters: { from: FROM, to: TO, ...filters } });

async function apiKeyWith(o: TestOrganization, scopes: string[]): Promise<string> {
  const res = await t.request('POST', '/v1/api-keys', { token: o.token, body: { name: scopes.join(' ') || 'none', scopes } });
  assert.equal(res.status, 201, res.text);
  return res.body.secret as string;
}

async function reportCount(organizationId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM reports WHERE organization_id = ${organizationId}`.execute(t.server.db.kysely);
  return rows[0]!.n;
}

async function generateJobCount(): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'reports.generate'`.execute(t.server.db.kysely);
  return rows[0]!.n;
}

before(async () => {
  t = await startTestServer({
    CORRIDOR_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-reports-api-')),
    CORRIDOR_REPORT_MAX_MATCHING_TRANSFERS: '3',
    CORRIDOR_REPORT_MAX_OUTPUT_ROWS: '8',
  });
  org = await t.newOrganization('Reports API');
  // Four transfers, one every six hours, each with three status events in its first two minutes.
  const specs: FixtureTransfer[] = [0, 6, 12, 18].map((h) => {
    const base = Date.parse(FROM) + h * 3600_000;
    const at = (m: number) => new Date(base + m * 60_000).toISOString();
    return {
      createdAt: at(0),
      events: [
        { status: 'PENDING_SETUP', at: at(0) },
        { status: 'READY_TO_FUND', at: at(1) },
        { status: 'AWAITING_FUNDS', at: at(2) },
      ],
    };
  });
  await insertTransfers(t.server.db.kysely, org.organizationId, specs);
});

after(async () => {
  await t?.close();
});

describe('POST /v1/reports/preview', () => {
  test('answers counts, limits and which limits are exceeded, and stores or queues nothing', async () => {
    const jobsBefore = await generateJobCount();
    const all = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: activity() });
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(all.body, {
      matchingTransferCount: 4,
      outputRowCount: 4,
      limits: { maxMatchingTransfers: 3, maxOutputRows: 8 },
      exceedsLimits: true,
      exceeded: ['maxMatchingTransfers'],
    });
    const rows = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: history() });
    assert.deepEqual(rows.body, {
      matchingTransferCount: 4,
      outputRowCount: 12,
      limits: { maxMatchingTransfers: 3, maxOutputRows: 8 },
      exceedsLimits: true,
      exceeded: ['maxMatchingTransfers', 'maxOutputRows'],
    });
    // Output rows can outnumber transfers: execution path counts legs (three per transfer here).
    const legs = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: { ...activity({ to: '2026-05-01T12:00:00.000Z' }), detailLevel: 'EXECUTION_PATH' } });
    assert.equal(legs.body.matchingTransferCount, 2);
    assert.equal(legs.body.outputRowCount, 6);
    assert.equal(legs.body.exceedsLimits, false);
    assert.deepEqual(legs.body.exceeded, []);
    assert.equal(await reportCount(org.organizationId), 0);
    assert.equal(await generateJobCount(), jobsBefore);
  });

  test('validation: the window must be ordered, fields are checked, unknown fields refused', async () => {
    const reversed = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: activity({ from: TO, to: FROM }) });
    assert.equal(reversed.status, 422);
    assert.deepEqual(reversed.body.details.map((d: { path: string }) => d.path), ['filters.to']);
    const empty = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: activity({ to: FROM }) });
    assert.equal(empty.status, 422, 'from == to is an empty half-open window');
    const bad = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: { type: 'TRANSFER_ACTIVITY', format: 'PDF', filters: { from: 'yesterday', to: TO, assetScope: 'GOLD', extra: 1 } } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.code, 'validation_error');
    const paths = bad.body.details.map((d: { path: string }) => d.path);
    for (const p of ['format', 'filters.from', 'filters.assetScope', 'filters.extra']) assert.ok(paths.includes(p), `${p} in ${paths}`);
  });
});

describe('POST /v1/reports', () => {
  test('202 with the PENDING report resource, defaults filled in; it becomes READY', async () => {
    const res = await t.request('POST', '/v1/reports', { apiKey: org.apiKey, body: activity({ to: '2026-05-01T12:00:00.000Z' }), headers: { 'idempotency-key': 'create-1' } });
    assert.equal(res.status, 202, res.text);
    const r = res.body;
    assert.match(r.id, /^[0-9a-f-]{36}$/);
    assert.equal(r.status, 'PENDING');
    assert.equal(r.schemaVersion, 'service.report.v1');
    assert.equal(r.profileVersion, 'csv.transfer_activity.summary.v1');
    assert.equal(r.type, 'TRANSFER_ACTIVITY');
    assert.equal(r.format, 'CSV');
    assert.equal(r.detailLevel, 'SUMMARY');
    assert.deepEqual(r.filters, {
      from: FROM, to: '2026-05-01T12:00:00.000Z', timestampBasis: 'CREATED_AT', assetScope: 'ALL', includeFees: false, originalMessageId: null, statuses: null,
    });
    assert.match(r.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(r.generatedAt, null);
    assert.equal(r.errorCode, null);
    assert.equal(r.errorMessage, null);
    assert.equal(r.artifact, null);
    const ready = await settledReport(t, org.apiKey, r.id);
    assert.equal(ready.status, 'READY');
    assert.equal(ready.artifact.rowCount, 2);
    assert.match(ready.artifact.sha256, /^[0-9a-f]{64}$/);
    assert.ok(ready.artifact.sizeBytes > 0);
    assert.equal(Date.parse(ready.artifact.expiresAt) - Date.parse(ready.generatedAt), 7 * 24 * 3600 * 1000);
  });

  test('Idempotency-Key: required; a replay returns the original report; another request under the key is refused', async () => {
    const missing = await t.request('POST', '/v1/reports', { apiKey: org.apiKey, body: activity() });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.code, 'idempotency_key_required');

    const body = history({ to: '2026-05-01T01:00:00.000Z' });
    const first = await createReport(t, org.apiKey, body, 'replay-key');
    const settled = await settledReport(t, org.apiKey, first.id);
    assert.equal(settled.status, 'READY');
    const before = await reportCount(org.organizationId);
    const jobs = await generateJobCount();
    // The same request, spelled with its defaults: still the same logical export.
    const replay = await t.request('POST', '/v1/reports', {
      apiKey: org.apiKey,
      body: { ...body, format: 'CSV', detailLevel: 'SUMMARY', filters: { ...body.filters, timestampBasis: 'STATUS_EVENT_AT', assetScope: 'ALL' } },
      headers: { 'idempotency-key': 'replay-key' },
    });
    assert.equal(replay.status, 202);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, first);
    assert.equal(await reportCount(org.organizationId), before, 'nothing new stored');
    assert.equal(await generateJobCount(), jobs, 'nothing new queued');

    const reused = await t.request('POST', '/v1/reports', { apiKey: org.apiKey, body: history({ to: '2026-05-01T02:00:00.000Z' }), headers: { 'idempotency-key': 'replay-key' } });
    assert.equal(reused.status, 409);
    assert.equal(reused.body.code, 'idempotency_key_reused');
  });

  test('exactly at both limits is within them: preview, creation and generation all accept it', async () => {
    // Three transfers (the limit) in eight status rows (the limit): all of the first two, and the
    // first two events of the third.
    const atLimits = history({ to: '2026-05-01T12:01:30.000Z' });
    const preview = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: atLimits });
    assert.deepEqual(preview.body, {
      matchingTransferCount: 3,
      outputRowCount: 8,
      limits: { maxMatchingTransfers: 3, maxOutputRows: 8 },
      exceedsLimits: false,
      exceeded: [],
    });
    const created = await createReport(t, org.apiKey, atLimits);
    const settled = await settledReport(t, org.apiKey, created.id);
    assert.equal(settled.status, 'READY', JSON.stringify(settled));
    assert.equal(settled.artifact.rowCount, 8);
  });

  test('over a limit: 422 report_limit_exceeded, nothing stored, and the key stays usable', async () => {
    const before = await reportCount(org.organizationId);
    const over = await t.request('POST', '/v1/reports', { apiKey: org.apiKey, body: history(), headers: { 'idempotency-key': 'too-big' } });
    assert.equal(over.status, 422);
    assert.equal(over.body.code, 'report_limit_exceeded');
    assert.equal(await reportCount(org.organizationId), before);
    const narrower = await t.request('POST', '/v1/reports', { apiKey: org.apiKey, body: history({ to: '2026-05-01T07:00:00.000Z' }), headers: { 'idempotency-key': 'too-big' } });
    assert.equal(narrower.status, 202);
  });
});

describe('permissions, feature and tenancy', () => {
  test('reports:read reads, previews and downloads; reports:write creates', async () => {
    const readOnly = await apiKeyWith(org, ['reports:read']);
    const writeOnly = await apiKeyWith(org, ['reports:write']);
    const neither = await apiKeyWith(org, ['transfers:read']);
    const body = activity({ to: '2026-05-01T01:00:00.000Z' });

    const created = await t.request('POST', '/v1/reports', { apiKey: writeOnly, body, headers: { 'idempotency-key': 'perm-1' } });
    assert.equal(created.status, 202, created.text);
    const id = created.body.id as string;
    await settledReport(t, org.apiKey, id);

    const denied = await t.request('POST', '/v1/reports', { apiKey: readOnly, body, headers: { 'idempotency-key': 'perm-2' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'insufficient_permissions');

    for (const [method, url, b] of [['POST', '/v1/reports/preview', body], ['GET', `/v1/reports/${id}`, undefined], ['POST', `/v1/reports/${id}/download`, undefined]] as const) {
      const ok = await t.request(method, url, { apiKey: readOnly, ...(b ? { body: b } : {}) });
      assert.equal(ok.status, 200, `${method} ${url} with reports:read: ${ok.text}`);
      for (const key of [writeOnly, neither]) {
        const no = await t.request(method, url, { apiKey: key, ...(b ? { body: b } : {}) });
        assert.equal(no.status, 403, `${method} ${url} without reports:read`);
        assert.equal(no.body.code, 'insufficient_permissions');
      }
    }
    const anonymous = await t.request('GET', `/v1/reports/${id}`);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.code, 'missing_credentials');
    // A bearer token of the owner works too.
    const byToken = await t.request('GET', `/v1/reports/${id}`, { token: org.token });
    assert.equal(byToken.status, 200);
  });

  test('another organization\'s report answers 404', async () => {
    const created = await createReport(t, org.apiKey, activity({ to: '2026-05-01T01:00:00.000Z' }));
    const stranger = await t.newOrganization('Stranger');
    for (const [method, url] of [['GET', `/v1/reports/${created.id}`], ['POST', `/v1/reports/${created.id}/download`]] as const) {
      const res = await t.request(method, url, { apiKey: stranger.apiKey });
      assert.equal(res.status, 404);
      assert.equal(res.body.code, 'not_found');
    }
    const unknown = await t.request('GET', '/v1/reports/00000000-0000-4000-8000-000000000000', { apiKey: org.apiKey });
    assert.equal(unknown.status, 404);
  });

  test('with the reports feature off, every report endpoint answers 403 feature_not_enabled', async () => {
    const off = await t.newOrganization('No reports');
    const created = await createReport(t, off.apiKey, activity({ to: '2026-05-01T01:00:00.000Z' }));
    // As an operator turns them off (PATCH /v1/ops/organizations/{id}): the next request sees it.
    await t.server.services.organizations.setFeatures(off.organizationId, []);
    const calls = [
      ['POST', '/v1/reports/preview', activity()],
      ['POST', '/v1/reports', activity()],
      ['GET', `/v1/reports/${created.id}`, undefined],
      ['POST', `/v1/reports/${created.id}/download`, undefined],
    ] as const;
    for (const [method, url, body] of calls) {
      const res = await t.request(method, url, { apiKey: off.apiKey, headers: { 'idempotency-key': 'feature-off' }, ...(body ? { body } : {}) });
      assert.equal(res.status, 403, `${method} ${url}`);
      assert.equal(res.body.code, 'feature_not_enabled');
    }
  });
});

describe('OpenAPI', () => {
  test('the report endpoints are documented with their scopes', async () => {
    const res = await t.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    const paths = res.body.paths;
    assert.equal(paths['/v1/reports'].post['x-required-scope'], 'reports:write');
    assert.equal(paths['/v1/reports/preview'].post['x-required-scope'], 'reports:read');
    assert.equal(paths['/v1/reports/{reportId}'].get['x-required-scope'], 'reports:read');
    assert.equal(paths['/v1/reports/{reportId}/download'].post['x-required-scope'], 'reports:read');
    assert.ok(paths['/v1/report-downloads/{reportId}'].get);
    // The columns of each profileVersion are in the description, generated from the profiles.
    const description = JSON.stringify(paths['/v1/reports'].post.description);
    assert.match(description, /csv\.transfer_activity\.summary\.v1 columns: transferId, createdAt/);
    assert.match(description, /includeFees adds feeCurrency, quotedFeeTotal, actualFeeTotal/);
    assert.match(description, /csv\.transfer_status_history\.summary\.v1 columns: occurredAt, eventId/);
    assert.match(description, /pain\.002\.001\.03\.v1/);
  });
});
