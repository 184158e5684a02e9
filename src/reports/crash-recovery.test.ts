// A dispatch lost in a crash is recovered: a Corridor process is SIGKILLed in the middle of
// generating a report, a new process starts on the same store, and the report still becomes READY
// with the complete artifact. Runs on the engine the suite runs on (PGlite on disk, or PostgreSQL).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createTestDatabase } from '../../test/helpers/database.ts';
import type { TestDatabase } from '../../test/helpers/database.ts';
import { csvRecords } from '../../test/helpers/reports.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createServer } from '../server.ts';
import type { Server } from '../server.ts';

const CHILD = path.resolve(import.meta.dirname, '../../test/fixtures/report-crash-child.ts');

let database: TestDatabase | null = null;
let restarted: Server | null = null;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-crash-'));

after(async () => {
  await restarted?.close();
  await database?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('a report whose worker was killed mid-generation reaches READY after a restart on the same store', async () => {
  database = await createTestDatabase();
  const env: Record<string, string> = {
    CORRIDOR_DATA_DIR: dataDir,
    CORRIDOR_LOG_LEVEL: 'debug',
    CORRIDOR_RATE_LIMIT_PER_MINUTE: '0',
    CORRIDOR_REPORT_LEASE_SECONDS: '3',
    ...(database.url ? { DATABASE_URL: database.url } : {}),
  };

  // 1. The first process creates the report and generates it slowly: ten rows per page.
  const child = spawn(process.execPath, [CHILD], {
    env: { ...process.env, ...env, CORRIDOR_REPORT_PAGE_SIZE: '10' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));

  const seen = await new Promise<{ created: any; rowsBeforeKill: number; finished: boolean }>((resolve, reject) => {
    let buffer = '';
    let created: any = null;
    let finished = false;
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        let entry: any;
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        if (entry.crashChild === 'created') created = entry;
        if (entry.msg === 'report generated') finished = true;
        // 2. Kill it as soon as generation has visibly started and written pages.
        if (created && entry.msg === 'report page written' && entry.reportId === created.reportId && entry.rows >= 30) {
          child.kill('SIGKILL');
          resolve({ created, rowsBeforeKill: entry.rows as number, finished });
        }
      }
    });
    void exited.then((how) => reject(new Error(`child exited (${String(how)}) before it was killed mid-generation: ${stderr}`)));
  });
  assert.equal(await exited, 'SIGKILL');
  assert.equal(seen.finished, false, 'the first process did not finish the report');
  assert.ok(seen.rowsBeforeKill < seen.created.expectedRows);

  // 3. A new process on the same store, with the normal page size; nothing is done by hand.
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  restarted = await createServer(loadConfig({ ...env, CORRIDOR_LOG_LEVEL: 'info' }), { logger: createLogger('info', sink) });
  const app = restarted.app;
  const apiKey = seen.created.apiKey as string;
  const reportId = seen.created.reportId as string;

  let report: any;
  for (let i = 0; ; i++) {
    const res = await app.inject({ method: 'GET', url: `/v1/reports/${reportId}`, headers: { 'x-api-key': apiKey } });
    assert.equal(res.statusCode, 200, res.body);
    report = JSON.parse(res.body);
    if (report.status !== 'PENDING') break;
    assert.ok(i < 1800, 'the report left PENDING');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(report.status, 'READY', JSON.stringify(report));
  assert.equal(report.artifact.rowCount, seen.created.expectedRows);
  assert.ok(logs.join('').includes('report generation dispatched again after a lost dispatch'));

  const link = await app.inject({ method: 'POST', url: `/v1/reports/${reportId}/download`, headers: { 'x-api-key': apiKey } });
  const url = new URL(JSON.parse(link.body).url as string);
  const file = await app.inject({ method: 'GET', url: url.pathname + url.search });
  assert.equal(file.statusCode, 200);
  const rows = csvRecords(file.body);
  assert.equal(rows.length, seen.created.expectedRows);
  assert.equal(new Set(rows.map((r) => r.eventId)).size, rows.length, 'every status event exactly once');
});
