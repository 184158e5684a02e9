// Generation rules: limits again at generation, the stored profileVersion, duplicate dispatches,
// transient failures retried while PENDING, and internal_error only when retries are spent.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { createReport, csvRecords, downloadReport, parseCsv, settledReport } from '../../test/helpers/reports.ts';
import { insertTransfers } from '../../test/fixtures/report-data.ts';
import type { FixtureTransfer } from '../../test/fixtures/report-data.ts';
import { GENERATE_RETRY_LIMIT } from './service.ts';

const FROM = '2026-06-01T00:00:00.000Z';
const TO = '2026-06-02T00:00:00.000Z';
const activity = (filters: Record<string, unknown> = {}) => ({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO, ...filters } });
const transfersAt = (...hours: number[]): FixtureTransfer[] =>
  hours.map((h) => {
    const at = new Date(Date.parse(FROM) + h * 3600_000).toISOString();
    return { createdAt: at, events: [{ status: 'PENDING_SETUP', at }] };
  });

describe('generation run by hand (no queue workers in this server)', () => {
  let t: TestServer;
  let org: TestOrganization;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-generation-'));
  const get = async (id: string) => (await t.request('GET', `/v1/reports/${id}`, { apiKey: org.apiKey })).body;
  const setProfile = (id: string, profileVersion: string) => sql`UPDATE reports SET profile_version = ${profileVersion} WHERE id = ${id}`.execute(t.server.db.kysely);

  before(async () => {
    t = await startTestServer(
      { CORRIDOR_DATA_DIR: dataDir, CORRIDOR_REPORT_MAX_MATCHING_TRANSFERS: '3' },
      { workers: false },
    );
    org = await t.newOrganization('Generation');
    await insertTransfers(t.server.db.kysely, org.organizationId, transfersAt(1, 2));
  });
  after(async () => {
    await t?.close();
  });

  test('a PENDING report cannot be downloaded yet: 409 report_not_ready', async () => {
    const r = await createReport(t, org.apiKey, activity());
    const res = await t.request('POST', `/v1/reports/${r.id}/download`, { apiKey: org.apiKey });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'report_not_ready');
  });

  test('the limits are checked again at generation: data that grew after creation fails the report with report_limit_exceeded', async () => {
    const r = await createReport(t, org.apiKey, activity({ to: '2026-06-01T12:00:00.000Z' }));
    await insertTransfers(t.server.db.kysely, org.organizationId, transfersAt(3, 4));
    await t.server.services.reports.generate(r.id, { retryCount: 0 });
    const failed = await get(r.id);
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.errorCode, 'report_limit_exceeded');
    assert.match(failed.errorMessage, /maxMatchingTransfers 3/);
    assert.equal(failed.artifact, null);
    // The limits are counted while the artifact is written: what was written is discarded.
    const files = fs.readdirSync(dataDir, { recursive: true }) as string[];
    assert.deepEqual(files.filter((f) => f.endsWith('.partial') || (f.includes(r.id) && path.extname(f) !== '')), [], 'no spool file, no artifact');
  });

  test('generation follows the profileVersion stored with the report, not the type it would get today', async () => {
    const r = await createReport(t, org.apiKey, activity({ to: '2026-06-01T03:00:00.000Z' }));
    assert.equal(r.profileVersion, 'csv.transfer_activity.summary.v1');
    // Pretend this report had been created with the execution-path profile: that is what it must get.
    await setProfile(r.id, 'csv.transfer_activity.execution_path.v1');
    await t.server.services.reports.generate(r.id, { retryCount: 0 });
    const ready = await get(r.id);
    assert.equal(ready.status, 'READY');
    const { text } = await downloadReport(t, org.apiKey, r.id);
    assert.equal(parseCsv(text)[0]![0], 'transferId');
    assert.equal(parseCsv(text)[0]![5], 'legPosition');
    assert.equal(csvRecords(text).length, 6, 'one row per leg');
  });

  test('a profileVersion this process does not have is never generated with other code: it stays PENDING (retried), then internal_error', async () => {
    const r = await createReport(t, org.apiKey, activity({ to: '2026-06-01T03:00:00.000Z' }));
    await setProfile(r.id, 'csv.transfer_activity.summary.v99');
    await assert.rejects(t.server.services.reports.generate(r.id, { retryCount: 0 }), /no generator for profileVersion csv\.transfer_activity\.summary\.v99/);
    const pending = await get(r.id);
    assert.equal(pending.status, 'PENDING');
    assert.equal(pending.errorCode, null);
    // The queue's last retry: the failure is recorded instead of rethrown.
    await t.server.services.reports.generate(r.id, { retryCount: GENERATE_RETRY_LIMIT });
    const failed = await get(r.id);
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.errorCode, 'internal_error');
  });

  test('a duplicate dispatch is harmless: one worker generates, the other finds the lease taken or the report done', async () => {
    const r = await createReport(t, org.apiKey, activity({ to: '2026-06-01T03:00:00.000Z' }));
    await Promise.all([t.server.services.reports.generate(r.id, { retryCount: 0 }), t.server.services.reports.generate(r.id, { retryCount: 0 })]);
    const ready = await get(r.id);
    assert.equal(ready.status, 'READY');
    const { rows } = await sql<{ attempts: number }>`SELECT attempts FROM reports WHERE id = ${r.id}`.execute(t.server.db.kysely);
    assert.equal(rows[0]!.attempts, 1);
    const generatedAt = ready.generatedAt;
    await t.server.services.reports.generate(r.id, { retryCount: 0 });
    assert.equal((await get(r.id)).generatedAt, generatedAt, 'a READY report is never generated again');
    const { rows: afterwards } = await sql<{ attempts: number }>`SELECT attempts FROM reports WHERE id = ${r.id}`.execute(t.server.db.kysely);
    assert.equal(afterwards[0]!.attempts, 1, 'nor even started again');
  });

  test('a missed dispatch is recovered: a PENDING report nobody touched for 30 minutes is dispatched again, a fresher one is not', async () => {
    const jobsFor = async (id: string) => {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'reports.generate' AND data->>'reportId' = ${id}`.execute(t.server.db.kysely);
      return rows[0]!.n;
    };
    const lost = await createReport(t, org.apiKey, activity({ to: '2026-06-01T03:00:00.000Z' }));
    const recent = await createReport(t, org.apiKey, activity({ to: '2026-06-01T02:30:00.000Z' }));
    // Its job never ran (lost with a queue that was reset, say): no lease, no activity since.
    await sql`UPDATE reports SET updated_at = now() - interval '31 minutes' WHERE id = ${lost.id}`.execute(t.server.db.kysely);
    await sql`UPDATE reports SET updated_at = now() - interval '29 minutes' WHERE id = ${recent.id}`.execute(t.server.db.kysely);
    const [lostJobs, recentJobs] = [await jobsFor(lost.id), await jobsFor(recent.id)];
    assert.ok((await t.server.services.reports.recover()) >= 1);
    assert.equal(await jobsFor(lost.id), lostJobs + 1);
    assert.equal(await jobsFor(recent.id), recentJobs);
  });

  test('a report whose workers died ten times is not dispatched forever: the next attempt records internal_error', async () => {
    const r = await createReport(t, org.apiKey, activity({ to: '2026-06-01T03:00:00.000Z' }));
    // Ten attempts took the lease and never finished (each worker was killed).
    await sql`UPDATE reports SET attempts = 10 WHERE id = ${r.id}`.execute(t.server.db.kysely);
    await t.server.services.reports.generate(r.id, { retryCount: 0 });
    const failed = await get(r.id);
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.errorCode, 'internal_error');
    assert.match(failed.errorMessage, /after 10 attempts/);
    assert.equal(failed.artifact, null);
  });
});

describe('a transient failure on the real queue', () => {
  let t: TestServer;
  let org: TestOrganization;
  let dataDir: string;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-retry-'));
    t = await startTestServer({ CORRIDOR_DATA_DIR: dataDir });
    org = await t.newOrganization('Retry');
    await insertTransfers(t.server.db.kysely, org.organizationId, transfersAt(1, 2));
  });
  after(async () => {
    await t?.close();
  });

  test('is retried while the report stays PENDING, and the report then becomes READY', async () => {
    // Artifact storage is unusable: a plain file sits where the reports folder should be.
    const reportsDir = path.join(dataDir, 'reports');
    fs.writeFileSync(reportsDir, 'not a folder');
    const r = await createReport(t, org.apiKey, activity());
    const failedAttempt = () =>
      t.logs.some((l) => l.msg === 'job failed; it will be retried per its queue policy' && (l.job as { name?: string } | undefined)?.name === 'reports.generate');
    for (let i = 0; !failedAttempt(); i++) {
      assert.ok(i < 600, 'the first attempt fails');
      await new Promise((res) => setTimeout(res, 100));
    }
    const meanwhile = (await t.request('GET', `/v1/reports/${r.id}`, { apiKey: org.apiKey })).body;
    assert.equal(meanwhile.status, 'PENDING');
    assert.equal(meanwhile.errorCode, null);
    fs.rmSync(reportsDir);
    const ready = await settledReport(t, org.apiKey, r.id);
    assert.equal(ready.status, 'READY');
    assert.equal(ready.artifact.rowCount, 2);
    const { rows } = await sql<{ attempts: number }>`SELECT attempts FROM reports WHERE id = ${r.id}`.execute(t.server.db.kysely);
    assert.ok(rows[0]!.attempts >= 2);
  });
});
