// Shutdown is bounded: requests still running after the drain period lose their connection (a
// client that stopped reading a download cannot hold the process open), and a second SIGTERM or
// Ctrl-C exits at once. A large artifact read by a paused client keeps a request running.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTestServer } from './helpers/server.ts';
import { createReport, settledReport } from './helpers/reports.ts';
import { ready, start } from './helpers/main-process.ts';

const BIG = 256 * 1024 * 1024;
const dirs: string[] = [];

after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-shutdown-'));
  dirs.push(dir);
  return dir;
};

/** Replaces every stored artifact under the data dir with BIG bytes, so no socket buffer holds it. */
function inflateArtifacts(dataDir: string): number {
  let n = 0;
  for (const entry of fs.readdirSync(path.join(dataDir, 'reports'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.parentPath.includes('.spool')) continue;
    fs.truncateSync(path.join(entry.parentPath, entry.name), BIG);
    n++;
  }
  return n;
}

/** Starts a download and stops reading once the headers are in; resolves with the paused response. */
function pausedDownload(get: typeof http.get, url: string, options: https.RequestOptions = {}): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(url, options, (res) => {
      res.pause();
      resolve(res);
    }).on('error', reject);
  });
}

test('close() ends a request whose client stopped reading once the drain period is over', { timeout: 180_000 }, async () => {
  const dataDir = tempDir();
  const t = await startTestServer({ CORRIDOR_DATA_DIR: dataDir }, { drainMs: 200 });
  await t.server.app.listen({ host: '127.0.0.1', port: 0 });
  const port = (t.server.app.server.address() as AddressInfo).port;
  const org = await t.newOrganization('Shutdown');
  const report = await settledReport(t, org.apiKey, (await createReport(t, org.apiKey, { type: 'TRANSFER_STATUS_HISTORY', filters: { from: '2026-07-01T00:00:00Z', to: '2026-07-02T00:00:00Z' } })).id);
  assert.equal(report.status, 'READY', JSON.stringify(report));
  assert.equal(inflateArtifacts(dataDir), 1);
  const link = await t.request('POST', `/v1/reports/${report.id}/download`, { apiKey: org.apiKey });
  const { pathname, search } = new URL(link.body.url as string);

  const res = await pausedDownload(http.get, `http://127.0.0.1:${port}${pathname}${search}`);
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-length'], String(BIG));

  // Without a bound this waits for the client, which never reads.
  await t.close();
  let received = 0;
  res.on('data', (chunk: Buffer) => (received += chunk.length));
  res.on('error', () => {});
  await new Promise((resolve) => res.once('close', resolve).resume());
  assert.ok(received < BIG, `the connection was closed before the whole body was sent (${received} bytes)`);
});

test('a second SIGTERM during a shutdown that is still draining exits at once with code 1', { timeout: 300_000 }, async () => {
  const dataDir = path.join(tempDir(), 'data');
  const service = start({ CORRIDOR_DATA_DIR: dataDir, CORRIDOR_PORT: '0', CORRIDOR_LOG_LEVEL: 'info', CORRIDOR_RATE_LIMIT_PER_MINUTE: '0' });
  const { base } = await ready(service);
  const apiKey = service.stdout().match(/API key:\s+(\S+)/)![1]!;
  const insecure = new https.Agent({ rejectUnauthorized: false });
  const call = (method: string, url: string, body?: unknown) =>
    new Promise<any>((resolve, reject) => {
      const headers: Record<string, string> = { 'x-api-key': apiKey };
      if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': 'shutdown' });
      const req = https.request(`${base}${url}`, { method, headers, agent: insecure }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(JSON.parse(text)));
      });
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });

  const created = await call('POST', '/v1/reports', { type: 'TRANSFER_STATUS_HISTORY', filters: { from: '2026-07-01T00:00:00Z', to: '2026-07-02T00:00:00Z' } });
  let report = created;
  for (let i = 0; report.status === 'PENDING'; i++) {
    assert.ok(i < 1200, 'the report left PENDING');
    await new Promise((r) => setTimeout(r, 100));
    report = await call('GET', `/v1/reports/${created.id}`);
  }
  assert.equal(report.status, 'READY', JSON.stringify(report));
  assert.equal(inflateArtifacts(dataDir), 1);
  const link = await call('POST', `/v1/reports/${created.id}/download`);
  const res = await pausedDownload(https.get, link.url as string, { agent: insecure });
  assert.equal(res.statusCode, 200);

  // The first signal starts a shutdown that waits for the download; the second does not wait.
  service.child.kill('SIGTERM');
  while (!service.stdout().includes('"msg":"shutting down"')) await new Promise((r) => setTimeout(r, 20));
  service.child.kill('SIGTERM');
  assert.equal(await service.exited, 1);
  assert.match(service.stderr(), /SIGTERM again: exiting without waiting for the shutdown to finish/);
  res.destroy();
  insecure.destroy();
});
