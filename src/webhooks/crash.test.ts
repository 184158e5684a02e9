import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase } from '../../test/helpers/database.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createServer } from '../server.ts';
import { startReceiver, waitFor } from './test-receiver.ts';

const EVENTS = 300;
const ANSWERED_BEFORE_KILL = 5;

test('a process killed with deliveries pending delivers every event after restart, each under its own id only', async (t) => {
  const database = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-crash-'));
  // Before the kill the receiver accepts a few deliveries and leaves the rest hanging, so the
  // process dies with attempts in flight and most jobs still queued. After the restart it
  // accepts everything. Only accepted requests count as delivered.
  let restarted = false;
  const accepted = new Set<string>();
  const receiver = await startReceiver((req) => {
    const id = req.headers['webhook-id']!;
    if (restarted || accepted.size < ANSWERED_BEFORE_KILL) {
      accepted.add(id);
      return { status: 200 };
    }
    return { hang: true };
  });
  const env = {
    ...process.env,
    CORRIDOR_DATA_DIR: dataDir,
    CORRIDOR_LOG_LEVEL: 'error',
    CORRIDOR_WEBHOOK_TIMEOUT_MS: '5000',
    ...(database.url ? { DATABASE_URL: database.url } : {}),
  };
  try {
    const child = spawn(process.execPath, [path.join(import.meta.dirname, 'crash-fixture.ts'), receiver.url, String(EVENTS)], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const report = await waitFor('the child to record its events', () => /CRASH-FIXTURE (.*)\n/.exec(out)?.[1], 120_000);
    const { secret, eventIds } = JSON.parse(report) as { secret: string; eventIds: string[] };
    assert.equal(eventIds.length, EVENTS);
    await waitFor('deliveries in flight', () => accepted.size >= ANSWERED_BEFORE_KILL && receiver.received.length > ANSWERED_BEFORE_KILL + 5);
    child.kill('SIGKILL');
    await exited;
    t.diagnostic(`at the kill: ${accepted.size} accepted, ${receiver.received.length - accepted.size} in flight, the rest queued`);
    restarted = true;

    const server = await createServer(loadConfig(env), { logger: createLogger('silent') });
    try {
      await waitFor('every event to be accepted', () => eventIds.every((id) => accepted.has(id)), 240_000);
    } finally {
      await server.close();
    }

    // Every request names its event by the same id in the header and the body, verifies, and no
    // event ever arrived under a second id.
    const idsByEvent = new Map<string, Set<string>>();
    for (const r of receiver.received) {
      const body = new Webhook(secret).verify(r.body, r.headers) as { id: string };
      const ids = idsByEvent.get(body.id) ?? new Set<string>();
      ids.add(r.headers['webhook-id']!);
      idsByEvent.set(body.id, ids);
    }
    assert.deepEqual([...idsByEvent.keys()].sort(), [...eventIds].sort());
    for (const [eventId, ids] of idsByEvent) assert.deepEqual([...ids], [eventId]);
  } finally {
    await receiver.close();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
