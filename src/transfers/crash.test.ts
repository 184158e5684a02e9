import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createTestDatabase } from '../../test/helpers/database.ts';
import type { TestDatabase } from '../../test/helpers/database.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createServer } from '../server.ts';
import type { Server } from '../server.ts';

describe('crash safety', () => {
  let database: TestDatabase | null = null;
  let dataDir: string | null = null;
  let server: Server | null = null;
  after(async () => {
    await server?.close();
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('a transfer whose process is SIGKILLed mid-execution completes after a restart on the same store', async () => {
    database = await createTestDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-crash-'));
    const store = database.url ? { DATABASE_URL: database.url } : {};
    const env = { ...process.env, ...store, CORRIDOR_DATA_DIR: dataDir, CORRIDOR_PORT: '0' };

    // Slow steps in the child, so it dies with the transfer half executed.
    const child = spawn(process.execPath, [path.join(import.meta.dirname, 'crash-child.ts')], {
      env: { ...env, CORRIDOR_SANDBOX_SPEED: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    assert.equal(exit.signal, 'SIGKILL', `the child should have killed itself: ${exit.code}\n${out}\n${err}`);
    const { transferId, apiKey } = JSON.parse(out.trim().split('\n').pop()!) as { transferId: string; apiKey: string };

    // Same store, fast steps, no graceful hand-over: whatever the child left is all there is.
    const config = loadConfig({ ...env, CORRIDOR_SANDBOX_SPEED: '1000', CORRIDOR_LOG_LEVEL: 'error', CORRIDOR_RATE_LIMIT_PER_MINUTE: '0' });
    server = await createServer(config, { logger: createLogger('error', new Writable({ write: (_c, _e, done) => done() })) });
    const get = async () => {
      const res = await server!.app.inject({ method: 'GET', url: `/v1/transfers/${transferId}`, headers: { 'x-api-key': apiKey } });
      assert.equal(res.statusCode, 200, res.body);
      return JSON.parse(res.body);
    };
    const atRestart = await get();
    assert.equal(atRestart.status, 'IN_PROGRESS', 'the child died mid-execution');

    const deadline = Date.now() + 90_000;
    let transfer = atRestart;
    while (transfer.status === 'IN_PROGRESS') {
      assert.ok(Date.now() < deadline, `still ${transfer.status} at v${transfer.version} after the restart`);
      await new Promise((r) => setTimeout(r, 100));
      transfer = await get();
    }
    assert.equal(transfer.status, 'COMPLETED');
    assert.ok(transfer.version > atRestart.version);
    assert.ok(transfer.legs.every((l: { status: string }) => l.status === 'COMPLETED'));
    assert.deepEqual(transfer.timeline.map((e: { version: number }) => e.version), Array.from({ length: transfer.version }, (_, i) => i + 1));
    // Nothing was lost or posted twice: the delivered amount is exactly the quoted one.
    const balances = await server.services.ledger.transferBalances(transferId);
    for (const b of balances) if (b.account === 'CUSTOMER_FUNDS_HELD' || b.account === 'PAYOUT_IN_TRANSIT') assert.equal(b.balance, 0n);
    const delivered = balances.find((b) => b.account === 'BENEFICIARY_EXTERNAL')!;
    assert.equal(transfer.actual.destinationAmount, transfer.quoted.destinationAmount);
    assert.ok(delivered.balance > 0n);
  });
});
