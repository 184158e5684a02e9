// The durable job queue (issue point 4): a job enqueued by a process that then crashes is run
// after a restart, on PGlite and on PostgreSQL; and a job sent inside a transaction exists
// exactly when the transaction commits.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { createServer } from '../server.ts';
import type { Server } from '../server.ts';
import { createTestDatabase } from '../../test/helpers/database.ts';
import { startTestServer } from '../../test/helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/enqueue-then-crash.ts');

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Runs the crashing child on a store and checks the job it left behind is run by a restart. */
async function crashThenRestart(store: Record<string, string>): Promise<void> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('CORRIDOR_') && k !== 'DATABASE_URL' && !k.startsWith('NODE_TEST')) env[k] = v;
  const child = spawnSync(process.execPath, [FIXTURE], { cwd: ROOT, env: { ...env, ...store, CORRIDOR_LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 180_000 });
  assert.equal(child.signal, 'SIGKILL', `the child crashed on purpose\nstdout: ${child.stdout}\nstderr: ${child.stderr}`);
  const { jobId, state, organizationId } = JSON.parse(child.stdout.trim()) as { jobId: string; state: string; organizationId: string };
  assert.match(jobId, /^[0-9a-f-]{36}$/);
  assert.equal(state, 'created', 'nobody worked the job before the crash');

  let server: Server | null = null;
  try {
    server = await createServer(loadConfig({ ...store, CORRIDOR_LOG_LEVEL: 'silent' }), { logger: createLogger('silent') });
    const s = server;
    const job = await waitFor('the job to complete', async () => {
      const found = await s.queue.boss.getJobById('idempotency.prune', jobId);
      return found?.state === 'completed' ? found : null;
    });
    assert.equal(job.id, jobId);
    const keys = await s.db.kysely.selectFrom('idempotency_records').select('idempotency_key').where('organization_id', '=', organizationId).execute();
    assert.deepEqual(keys.map((k) => k.idempotency_key), ['live-key'], 'the job pruned the expired record and kept the live one');
  } finally {
    await server?.close();
  }
}

describe('a job enqueued before a crash runs after a restart', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  test('embedded PGlite in a data dir', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-queue-'));
    dirs.push(dir);
    await crashThenRestart({ CORRIDOR_DATA_DIR: dir });
  });

  test('PostgreSQL', { skip: !process.env.TEST_DATABASE_URL && 'set TEST_DATABASE_URL to run on PostgreSQL' }, async () => {
    const database = await createTestDatabase();
    try {
      await crashThenRestart({ DATABASE_URL: database.url! });
    } finally {
      await database.drop();
    }
  });
});

describe('enqueuing inside a transaction', () => {
  test('the job exists if and only if the transaction commits', async () => {
    const t = await startTestServer({}, { workers: false });
    try {
      const { queue, db } = t.server;
      let rolledBackId: string | null = null;
      await assert.rejects(
        db.kysely.transaction().execute(async (trx) => {
          rolledBackId = await queue.send('idempotency.prune', {}, { trx });
          throw new Error('change abandoned');
        }),
        /change abandoned/,
      );
      assert.ok(rolledBackId);
      assert.equal(await queue.boss.getJobById('idempotency.prune', rolledBackId), null);

      const committedId = await db.kysely.transaction().execute(async (trx) => queue.send('idempotency.prune', {}, { trx }));
      const committed = await queue.boss.getJobById('idempotency.prune', committedId!);
      assert.equal(committed?.state, 'created');
    } finally {
      await t.close();
    }
  });
});
