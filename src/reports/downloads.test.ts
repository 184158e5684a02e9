// Downloads: signed links that need no other credential and lapse after 15 minutes, new links
// that never recreate the report, seven-day artifact expiry, and the S3-compatible store.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { createReport, csvRecords, settledReport } from '../../test/helpers/reports.ts';
import { insertTransfers } from '../../test/fixtures/report-data.ts';
import { ConfigError, loadConfig } from '../platform/config.ts';
import { artifactStoreFor, S3ArtifactStore } from './storage.ts';

const FROM = '2026-07-01T00:00:00.000Z';
const TO = '2026-07-02T00:00:00.000Z';
const body = { type: 'TRANSFER_STATUS_HISTORY', filters: { from: FROM, to: TO } };
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

async function seed(t: TestServer, org: TestOrganization) {
  await insertTransfers(t.server.db.kysely, org.organizationId, [
    {
      createdAt: '2026-07-01T10:00:00.000Z',
      events: [
        { status: 'PENDING_SETUP', at: '2026-07-01T10:00:00.000Z' },
        { status: 'READY_TO_FUND', at: '2026-07-01T10:01:00.000Z' },
      ],
    },
  ]);
}

async function until(check: () => Promise<boolean>, what: string) {
  for (let i = 0; !(await check()); i++) {
    assert.ok(i < 1200, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('local artifact store and signed links', () => {
  let t: TestServer;
  let org: TestOrganization;
  let dataDir: string;
  let report: any;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-downloads-'));
    t = await startTestServer({ CORRIDOR_DATA_DIR: dataDir });
    org = await t.newOrganization('Downloads');
    await seed(t, org);
    report = await settledReport(t, org.apiKey, (await createReport(t, org.apiKey, body)).id);
    assert.equal(report.status, 'READY');
  });
  after(async () => {
    await t?.close();
  });

  test('the link fetches the artifact with no other credential, as an attachment, and it matches the recorded hash and size', async () => {
    const requestedAt = Date.now();
    const link = await t.request('POST', `/v1/reports/${report.id}/download`, { apiKey: org.apiKey });
    assert.equal(link.status, 200, link.text);
    assert.deepEqual(Object.keys(link.body).sort(), ['expiresAt', 'url']);
    const url = new URL(link.body.url);
    assert.equal(url.protocol, 'https:');
    assert.equal(url.pathname, `/v1/report-downloads/${report.id}`);
    // Valid for 15 minutes from the request, and the expiry in the link is the one announced.
    const expiresAt = Date.parse(link.body.expiresAt);
    assert.equal(Number(url.searchParams.get('expires')), expiresAt);
    assert.ok(expiresAt >= requestedAt + 15 * 60_000 && expiresAt <= Date.now() + 15 * 60_000);

    const res = await t.request('GET', pathOf(link.body.url));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
    assert.equal(res.headers['content-disposition'], `attachment; filename="corridor-report-${report.id}.csv"`);
    assert.equal(res.headers['cache-control'], 'private, no-store');
    assert.equal(sha256(res.text), report.artifact.sha256);
    assert.equal(Buffer.byteLength(res.text), report.artifact.sizeBytes);
    assert.equal(csvRecords(res.text).length, 2);
    // The link is a credential: it is not written to the logs.
    assert.ok(!t.rawLogs.join('\n').includes(url.searchParams.get('signature')!));
  });

  test('a lapsed link answers 403 download_link_expired; a tampered one 403 invalid_download_link', async () => {
    const lapsed = await t.server.services.reports.signedLink(report.id, Date.now() - 1000);
    const expired = await t.request('GET', pathOf(lapsed));
    assert.equal(expired.status, 403);
    assert.equal(expired.body.code, 'download_link_expired');

    const link = (await t.request('POST', `/v1/reports/${report.id}/download`, { apiKey: org.apiKey })).body.url as string;
    const u = new URL(link);
    const tampered = [
      `${u.pathname}?expires=${Number(u.searchParams.get('expires')) + 60_000}&signature=${u.searchParams.get('signature')}`,
      `${u.pathname}?expires=${u.searchParams.get('expires')}&signature=${'A'.repeat(43)}`,
      `/v1/report-downloads/00000000-0000-4000-8000-000000000000${u.search}`,
    ];
    for (const p of tampered) {
      const res = await t.request('GET', p);
      assert.equal(res.status, 403, p);
      assert.equal(res.body.code, 'invalid_download_link');
    }
    const noSignature = await t.request('GET', u.pathname);
    assert.equal(noSignature.status, 422);
  });

  test('a link never outlives the artifact: near the end of retention it expires with it', async () => {
    const r = await settledReport(t, org.apiKey, (await createReport(t, org.apiKey, body)).id);
    // Five minutes of the seven days are left.
    await sql`UPDATE reports SET artifact_expires_at = now() + interval '5 minutes' WHERE id = ${r.id}`.execute(t.server.db.kysely);
    const artifactExpiresAt = (await t.request('GET', `/v1/reports/${r.id}`, { apiKey: org.apiKey })).body.artifact.expiresAt;
    const link = await t.request('POST', `/v1/reports/${r.id}/download`, { apiKey: org.apiKey });
    assert.equal(link.status, 200, link.text);
    assert.equal(link.body.expiresAt, artifactExpiresAt);
    assert.equal(Number(new URL(link.body.url).searchParams.get('expires')), Date.parse(artifactExpiresAt));
  });

  test('asking for a new link never recreates the report', async () => {
    const { rows: before } = await sql<{ attempts: number; n: number }>`
      SELECT attempts, (SELECT count(*)::int FROM pgboss.job WHERE name = 'reports.generate') AS n FROM reports WHERE id = ${report.id}`.execute(t.server.db.kysely);
    const first = await t.request('POST', `/v1/reports/${report.id}/download`, { apiKey: org.apiKey });
    const second = await t.request('POST', `/v1/reports/${report.id}/download`, { apiKey: org.apiKey });
    for (const link of [first, second]) assert.equal((await t.request('GET', pathOf(link.body.url))).status, 200);
    const again = (await t.request('GET', `/v1/reports/${report.id}`, { apiKey: org.apiKey })).body;
    assert.deepEqual(again, report);
    const { rows: afterwards } = await sql<{ attempts: number; n: number }>`
      SELECT attempts, (SELECT count(*)::int FROM pgboss.job WHERE name = 'reports.generate') AS n FROM reports WHERE id = ${report.id}`.execute(t.server.db.kysely);
    assert.deepEqual(afterwards, before);
  });

  test('seven days after generation the artifact is gone: 410 artifact_expired, the record stays, the scheduled job deletes the file', async () => {
    const r = await settledReport(t, org.apiKey, (await createReport(t, org.apiKey, body)).id);
    const issued = (await t.request('POST', `/v1/reports/${r.id}/download`, { apiKey: org.apiKey })).body.url as string;
    const { rows } = await sql<{ artifact_key: string }>`SELECT artifact_key FROM reports WHERE id = ${r.id}`.execute(t.server.db.kysely);
    const file = path.join(dataDir, 'reports', rows[0]!.artifact_key);
    assert.ok(fs.existsSync(file));

    // Seven days pass.
    await sql`UPDATE reports SET generated_at = generated_at - interval '7 days', artifact_expires_at = artifact_expires_at - interval '7 days' WHERE id = ${r.id}`.execute(t.server.db.kysely);
    const link = await t.request('POST', `/v1/reports/${r.id}/download`, { apiKey: org.apiKey });
    assert.equal(link.status, 410);
    assert.equal(link.body.code, 'artifact_expired');
    const old = await t.request('GET', pathOf(issued));
    assert.equal(old.status, 410);
    assert.equal(old.body.code, 'artifact_expired');

    await t.server.queue.send('reports.expire-artifacts', {});
    await until(async () => {
      const { rows: d } = await sql<{ deleted: Date | null }>`SELECT artifact_deleted_at AS deleted FROM reports WHERE id = ${r.id}`.execute(t.server.db.kysely);
      return d[0]!.deleted !== null;
    }, 'the expiry job');
    assert.ok(!fs.existsSync(file), 'the artifact file is deleted');
    const record = await t.request('GET', `/v1/reports/${r.id}`, { apiKey: org.apiKey });
    assert.equal(record.status, 200);
    assert.equal(record.body.status, 'READY');
    assert.equal(record.body.id, r.id);
    assert.equal((await t.request('POST', `/v1/reports/${r.id}/download`, { apiKey: org.apiKey })).status, 410);
    // The other report's artifact is untouched.
    assert.equal((await t.request('POST', `/v1/reports/${report.id}/download`, { apiKey: org.apiKey })).status, 200);
  });
});

/** Just enough of S3's path-style REST API to store, serve and delete objects. */
function fakeS3() {
  const objects = new Map<string, { body: Buffer; contentType: string }>();
  const requests: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, headers: req.headers });
      const key = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
      if (req.method === 'PUT') {
        objects.set(key, { body: Buffer.concat(chunks), contentType: String(req.headers['content-type']) });
        res.writeHead(200, { ETag: '"etag"' }).end();
      } else if (req.method === 'GET') {
        const o = objects.get(key);
        if (!o) res.writeHead(404).end();
        else res.writeHead(200, { 'Content-Type': o.contentType }).end(o.body);
      } else if (req.method === 'DELETE') {
        objects.delete(key);
        res.writeHead(204).end();
      } else res.writeHead(405).end();
    });
  });
  return { server, objects, requests };
}

describe('S3-compatible artifact store', () => {
  const s3 = fakeS3();
  let endpoint: string;
  let t: TestServer;
  let org: TestOrganization;
  const savedEnv = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

  before(async () => {
    await new Promise<void>((r) => s3.server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(s3.server.address() as AddressInfo).port}`;
    // Credentials come from the standard AWS environment.
    process.env.AWS_ACCESS_KEY_ID = 'AKIACORRIDORTEST';
    process.env.AWS_SECRET_ACCESS_KEY = 'corridor-test-secret';
    t = await startTestServer({
      CORRIDOR_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-s3-')),
      CORRIDOR_REPORT_STORAGE: 's3',
      CORRIDOR_S3_BUCKET: 'corridor-reports',
      CORRIDOR_S3_REGION: 'eu-west-1',
      CORRIDOR_S3_ENDPOINT: endpoint,
    });
    org = await t.newOrganization('S3 reports');
    await seed(t, org);
  });
  after(async () => {
    await t?.close();
    s3.server.close();
    process.env.AWS_ACCESS_KEY_ID = savedEnv.id;
    process.env.AWS_SECRET_ACCESS_KEY = savedEnv.secret;
    if (savedEnv.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    if (savedEnv.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
  });

  test('generation uploads through the same interface; the download is a presigned GET valid for 15 minutes; expiry deletes the object', async () => {
    const r = await settledReport(t, org.apiKey, (await createReport(t, org.apiKey, body)).id);
    assert.equal(r.status, 'READY', JSON.stringify(r));
    const put = s3.requests.find((q) => q.method === 'PUT')!;
    assert.ok(put, 'the artifact was uploaded');
    assert.match(put.url, new RegExp(`^/corridor-reports/reports/${org.organizationId}/${r.id}/[0-9a-f-]+\\.csv`));
    assert.match(String(put.headers.authorization), /^AWS4-HMAC-SHA256 Credential=AKIACORRIDORTEST\/\d{8}\/eu-west-1\/s3\/aws4_request/);
    const stored = [...s3.objects.values()][0]!;
    assert.equal(sha256(stored.body), r.artifact.sha256);
    assert.equal(stored.contentType, 'text/csv; charset=utf-8');

    const link = await t.request('POST', `/v1/reports/${r.id}/download`, { apiKey: org.apiKey });
    assert.equal(link.status, 200);
    const url = new URL(link.body.url);
    assert.equal(url.origin, endpoint);
    assert.equal(url.searchParams.get('X-Amz-Expires'), '900');
    assert.ok(url.searchParams.get('X-Amz-Signature'));
    assert.equal(url.searchParams.get('response-content-disposition'), `attachment; filename="corridor-report-${r.id}.csv"`);
    const fetched = await fetch(url);
    assert.equal(fetched.status, 200);
    assert.equal(sha256(Buffer.from(await fetched.arrayBuffer())), r.artifact.sha256);

    await sql`UPDATE reports SET artifact_expires_at = now() - interval '1 second' WHERE id = ${r.id}`.execute(t.server.db.kysely);
    await t.server.queue.send('reports.expire-artifacts', {});
    await until(async () => s3.requests.some((q) => q.method === 'DELETE'), 'the object deletion');
    assert.equal(s3.objects.size, 0);
    assert.equal((await t.request('POST', `/v1/reports/${r.id}/download`, { apiKey: org.apiKey })).body.code, 'artifact_expired');
  });

  test('presigned URLs for AWS S3 itself are built offline: virtual-hosted bucket, region, 15-minute expiry, attachment name', async () => {
    const store = new S3ArtifactStore({ bucket: 'acme-reports', region: 'us-east-2', endpoint: null });
    const url = new URL(await store.presignedUrl('reports/o/r/t.csv', { fileName: 'corridor-report-r.csv', contentType: 'text/csv', expiresInSeconds: 900 }));
    assert.equal(url.host, 'acme-reports.s3.us-east-2.amazonaws.com');
    assert.equal(url.pathname, '/reports/o/r/t.csv');
    assert.equal(url.searchParams.get('X-Amz-Algorithm'), 'AWS4-HMAC-SHA256');
    assert.equal(url.searchParams.get('X-Amz-Expires'), '900');
    assert.match(url.searchParams.get('X-Amz-Credential')!, /^AKIACORRIDORTEST\/\d{8}\/us-east-2\/s3\/aws4_request$/);
    assert.match(url.searchParams.get('X-Amz-Signature')!, /^[0-9a-f]{64}$/);
    assert.equal(url.searchParams.get('response-content-type'), 'text/csv');
  });

  test('configuration selects the store and refuses s3 without a bucket', () => {
    const base = { CORRIDOR_DATA_DIR: os.tmpdir() };
    assert.equal(artifactStoreFor(loadConfig(base)).kind, 'local');
    assert.equal(artifactStoreFor(loadConfig({ ...base, CORRIDOR_REPORT_STORAGE: 's3', CORRIDOR_S3_BUCKET: 'b', CORRIDOR_S3_REGION: 'eu-west-1' })).kind, 's3');
    assert.throws(() => loadConfig({ ...base, CORRIDOR_REPORT_STORAGE: 's3' }), (err: unknown) => err instanceof ConfigError && /CORRIDOR_S3_BUCKET/.test(err.message));
    assert.throws(() => loadConfig({ ...base, CORRIDOR_REPORT_STORAGE: 'ftp' }), ConfigError);
  });
});
