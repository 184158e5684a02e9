// Webhook delivery: events recorded in their own transactions (as the transfer engine does) on
// PostgreSQL, delivered to a local receiver. Measures delivered events per second and the lag from
// each event's commit to its receipt. The reference is the same receiver driven directly by an HTTP
// client with the same signing and concurrency: the ceiling with no database or queue in between.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createServer } from '../../src/server.ts';
import type { Server } from '../../src/server.ts';
import { signedHeaders } from '../../src/webhooks/signing.ts';
import { startReceiver } from '../../src/webhooks/test-receiver.ts';
import { fmt, scratchDatabase } from '../lib.ts';
import type { BenchContext, BenchResult } from '../lib.ts';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000);
const WRITERS = 8;
const CONCURRENCY = 16;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function recordEvents(server: Server, organizationId: string, count: number, committed: Map<string, number>): Promise<number> {
  let written = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (written < count) {
        written++;
        const event = await server.db.kysely.transaction().execute((trx) =>
          server.services.events.record(trx, {
            organizationId,
            type: 'transfer.status_changed',
            data: { transferId: randomUUID(), status: 'IN_PROGRESS', previousStatus: 'AWAITING_FUNDS', blockingParty: 'PROVIDER', version: 2 },
          }),
        );
        committed.set(event.id, performance.now());
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

async function allReceived(ids: Iterable<string>, receipts: Map<string, number>): Promise<number> {
  const wanted = [...ids];
  const deadline = Date.now() + 10 * 60_000;
  while (!wanted.every((id) => receipts.has(id))) {
    if (Date.now() > deadline) throw new Error(`only ${wanted.filter((id) => receipts.has(id)).length}/${wanted.length} delivered`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Math.max(...wanted.map((id) => receipts.get(id)!));
}

export default async function run(ctx: BenchContext): Promise<BenchResult> {
  const db = await scratchDatabase(ctx.pgAdminUrl, 'webhooks');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-bench-webhooks-'));
  const receipts = new Map<string, number>();
  const receiver = await startReceiver((req) => {
    const id = req.headers['webhook-id']!;
    if (!receipts.has(id)) receipts.set(id, performance.now());
    return { status: 200 };
  });
  const config = loadConfig({ DATABASE_URL: db.url, CORRIDOR_DATA_DIR: dataDir, CORRIDOR_LOG_LEVEL: 'silent' });
  const logger = createLogger('silent');
  let server = await createServer(config, { logger });
  try {
    // Reference: the receiver's own capacity, signed requests straight from a client.
    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const agent = new Agent({ connections: CONCURRENCY });
    const post = async (count: number) => {
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < count) {
            next++;
            const body = JSON.stringify({ id: randomUUID(), type: 'transfer.status_changed', createdAt: new Date().toISOString(), data: {} });
            const res = await request(receiver.url, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', ...signedHeaders([secret], randomUUID(), new Date(), body) }, body });
            await res.body.dump();
          }
        }),
      );
      return count / ((performance.now() - started) / 1000);
    };
    await post(500); // warm-up
    const refPerSecond = await post(EVENTS);
    await agent.close();
    receipts.clear();
    ctx.log(`reference: ${fmt(refPerSecond)} signed POSTs/s straight to the receiver`);

    const org = server.firstOrganization!;
    const created = await server.app.inject({
      method: 'POST',
      url: '/v1/webhook-endpoints',
      headers: { 'x-api-key': org.apiKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ url: receiver.url, eventTypes: ['transfer.status_changed'] }),
    });
    if (created.statusCode !== 201) throw new Error(`endpoint: ${created.body}`);

    // Streaming: writers record as fast as they can while the same process delivers.
    const committed = new Map<string, number>();
    const recordSeconds = await recordEvents(server, org.organizationId, EVENTS, committed);
    await allReceived(committed.keys(), receipts);
    const lags = [...committed].map(([id, at]) => receipts.get(id)! - at).sort((a, b) => a - b);
    ctx.log(`streaming: recorded ${fmt(EVENTS / recordSeconds)} events/s; lag p50 ${fmt(percentile(lags, 50))} ms, p99 ${fmt(percentile(lags, 99))} ms`);

    // Backlog: events recorded while no process delivers, then drained by a fresh process.
    await server.close();
    server = await createServer(config, { logger, workers: false });
    const backlog = new Map<string, number>();
    await recordEvents(server, org.organizationId, EVENTS, backlog);
    await server.close();
    server = await createServer(config, { logger });
    const drainStart = performance.now();
    const drained = await allReceived(backlog.keys(), receipts);
    const drainPerSecond = EVENTS / ((drained - drainStart) / 1000);
    ctx.log(`backlog: ${EVENTS} events drained at ${fmt(drainPerSecond)} events/s`);

    const markdown = [
      `Events recorded each in its own transaction by ${WRITERS} concurrent writers (fan-out to the endpoint's delivery and its job happens in that ` +
        `transaction), delivered by one Corridor process to one endpoint on a local receiver that answers 200 at once. ` +
        `Streaming: ${EVENTS} events recorded as fast as the writers go while the process delivers; lag is from each event's commit to its receipt. ` +
        `Backlog: ${EVENTS} events recorded while no process delivers, then drained by a freshly started one.`,
      '',
      '| measure | value |',
      '|---|---|',
      `| streaming: events recorded per second (with fan-out) | ${fmt(EVENTS / recordSeconds)} |`,
      `| streaming: lag from commit to receipt, p50 | ${fmt(percentile(lags, 50))} ms |`,
      `| streaming: lag from commit to receipt, p99 | ${fmt(percentile(lags, 99))} ms |`,
      `| streaming: lag, max | ${fmt(lags.at(-1) ?? NaN)} ms |`,
      `| backlog: events delivered per second | ${fmt(drainPerSecond)} |`,
      `| reference: signed POSTs per second straight to the receiver (${CONCURRENCY} in flight) | ${fmt(refPerSecond)} |`,
      `| backlog delivery rate / reference | ${fmt(drainPerSecond / refPerSecond, 3)} |`,
    ].join('\n');
    return { title: 'Webhook delivery', markdown };
  } finally {
    await server.close();
    await receiver.close();
    await db.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
