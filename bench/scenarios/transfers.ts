// Quote + transfer creation and transfer reads over real HTTPS against a Corridor child process on
// PostgreSQL. References measured in the same run: pgbench simple-update TPS on the same server
// (for creation) and the rate of unauthenticated GET /health (for reads).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { benchConnections, call, cpuBetween, fmt, insecureAgent, load, loadInterleaved, readCpu, scratchDatabase, startCorridor, withClient } from '../lib.ts';
import type { BenchConnection, BenchContext, BenchResult, CpuReading, LoadResult } from '../lib.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = 5;
const TARGET_CREATE = 0.25;
const TARGET_GET = 0.4;

interface PgbenchRun {
  tps: number;
  cpu: CpuReading | null;
  transactions: number;
}

/** One timed pgbench run (10 s, 2 clients) with the CPU it cost, the machine's and PostgreSQL's. */
async function timedPgbench(url: string, args: string[]): Promise<PgbenchRun> {
  const before = readCpu(undefined);
  const out = execFileSync('pgbench', [...args, '-T', '10', '-c', '2', url], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  // pgbench's backends count once the postmaster has reaped them, a moment after pgbench exits
  // (read at once, their CPU was missing: 0.00 ms per transaction on 2026-11-25).
  await new Promise((r) => setTimeout(r, 500));
  const cpu = cpuBetween(before, readCpu(undefined));
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1];
  const transactions = /number of transactions actually processed: (\d+)/.exec(out)?.[1];
  if (!tps || !transactions) throw new Error(`could not read pgbench output:\n${out}`);
  return { tps: Number(tps), cpu, transactions: Number(transactions) };
}

async function pgbench(url: string, log: (s: string) => void): Promise<PgbenchRun> {
  execFileSync('pgbench', ['-i', '-q', url], { stdio: 'pipe' });
  const run = await timedPgbench(url, ['-N']);
  log(`pgbench -N -T 10 -c 2: ${run.tps} TPS`);
  return run;
}

/** How the processes reach PostgreSQL: a same-host deployment would use the Unix socket. */
function describeConnection(url: string): string {
  const parsed = new URL(url);
  const socket = parsed.searchParams.get('host');
  return socket?.startsWith('/') ? `the server's Unix socket (${socket})` : `TCP to ${parsed.host}`;
}

/** Waits until the sandbox engine has prepared every created transfer; how many were left, and how long it took. */
async function drainSetup(url: string): Promise<{ backlog: number; seconds: number }> {
  return withClient(url, async (client) => {
    const waiting = async () => Number((await client.query<{ n: string }>("select count(*) as n from transfers where status = 'PENDING_SETUP'")).rows[0]!.n);
    const started = performance.now();
    const backlog = await waiting();
    for (let left = backlog; left > 0; left = await waiting()) {
      if (performance.now() - started > 300_000) throw new Error(`the engine left ${left} transfers in PENDING_SETUP for 5 minutes`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return { backlog, seconds: (performance.now() - started) / 1000 };
  });
}

/** Transactions committed in the database so far (pg_stat_database; its counts lag by up to half a second). */
async function commits(url: string): Promise<number> {
  await new Promise((r) => setTimeout(r, 600));
  return withClient(url, async (client) => Number((await client.query<{ n: string }>('select xact_commit as n from pg_stat_database where datname = current_database()')).rows[0]!.n));
}

/** Vacuumed and checkpointed, as pgbench leaves its own tables before it measures. */
async function settle(url: string): Promise<void> {
  await withClient(url, async (client) => {
    await client.query('VACUUM ANALYZE');
    await client.query('CHECKPOINT');
  });
}

const ms = (seconds: number, count: number) => fmt((seconds * 1000) / count, 2);

/**
 * Where a creation's cost goes, next to a pgbench transaction's: CPU time per operation from
 * /proc over each measured phase (the whole machine, and its PostgreSQL and Corridor processes).
 */
function cpuTable(reference: { cpu: CpuReading | null; transactions: number }, phases: Array<{ name: string; cpu: CpuReading | null; count: number }>): string[] {
  if (!reference.cpu || phases.some((p) => !p.cpu)) return [];
  return [
    '',
    'CPU time per operation over each measured phase (from /proc; "machine" is every process on both vCPUs, the load generators included; ' +
      '"load generator" is the bench process, whose HTTPS clients send the requests):',
    '',
    '| operation | machine ms | PostgreSQL ms | Corridor process ms | load generator ms |',
    '|---|---|---|---|---|',
    `| pgbench simple-update transaction | ${ms(reference.cpu.machine, reference.transactions)} | ${ms(reference.cpu.postgres, reference.transactions)} | | |`,
    ...phases.map((p) => `| ${p.name} | ${ms(p.cpu!.machine, p.count)} | ${ms(p.cpu!.postgres, p.count)} | ${ms(p.cpu!.corridor, p.count)} | ${ms(p.cpu!.client, p.count)} |`),
  ];
}

/**
 * The two requests of a creation, sent by closed-loop worker `worker` on its own connection: a
 * quote (USD ACH to EUR SEPA bound to the saved fiat account) answering its best option, and a
 * transfer on an option, with a fresh Idempotency-Key, answering the transfer's id.
 */
export function creationCalls(connections: BenchConnection[], apiKey: string, entityId: string, accountId: string) {
  const must = async (worker: number, url: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await connections[worker]!.request('POST', url, { 'x-api-key': apiKey, ...headers }, JSON.stringify(body));
    if (res.status >= 300) throw new Error(`POST ${url}: ${res.status} ${res.body.toString()}`);
    return JSON.parse(res.body.toString());
  };
  return {
    quoteOne: async (worker: number): Promise<string> => {
      const quote = await must(worker, '/v1/quotes', {
        entityId,
        from: { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' },
        to: { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' },
        amount: `${100 + Math.floor(Math.random() * 900)}.00`,
        fixedSide: 'FROM',
        destinationFiatAccountId: accountId,
      });
      return quote.options[0].id as string;
    },
    transferOne: async (worker: number, quoteOptionId: string): Promise<string> => {
      const transfer = await must(worker, '/v1/transfers', { quoteOptionId, destination: { type: 'FIAT_ACCOUNT', fiatAccountId: accountId }, entityId }, { 'idempotency-key': randomUUID() });
      return transfer.id as string;
    },
  };
}

const row = (name: string, r: LoadResult) => `| ${name} | ${fmt(r.perSecond)} | ${fmt(r.p50ms, 2)} | ${fmt(r.p99ms, 2)} | ${r.requests} | ${r.errors} |`;

export default async function run(ctx: BenchContext): Promise<BenchResult> {
  const reference = await scratchDatabase(ctx.pgAdminUrl, 'pgbench');
  let pgbenchTps: number;
  let pgbenchCpu: { cpu: CpuReading | null; transactions: number };
  try {
    const measured = await pgbench(reference.url, ctx.log);
    pgbenchTps = measured.tps;
    pgbenchCpu = measured;
  } finally {
    await reference.drop();
  }

  const db = await scratchDatabase(ctx.pgAdminUrl, 'transfers');
  const corridor = await startCorridor({ DATABASE_URL: db.url });
  const agent = insecureAgent(CONCURRENCY);
  const connections = benchConnections(corridor.baseUrl, CONCURRENCY);
  try {
    const base = corridor.baseUrl;
    const auth = { 'x-api-key': corridor.apiKey };
    const must = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await call(agent, base, method, url, { headers: { ...auth, ...headers }, ...(body === undefined ? {} : { body }) });
      if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };

    const entity = await must('POST', '/v1/entities', { type: 'INDIVIDUAL', firstName: 'Ada', lastName: 'Lovelace', country: 'US' });
    const account = await must('POST', '/v1/fiat-accounts', {
      entityId: entity.id,
      rail: { country: 'DE', currency: 'EUR', method: 'SEPA' },
      details: { iban: 'DE89370400440532013000' },
      beneficiary: { name: 'Hans Muster' },
      relationship: 'THIRD_PARTY',
    });
    const created: string[] = [];
    const { quoteOne, transferOne } = creationCalls(connections, corridor.apiKey, entity.id as string, account.id as string);
    const createOne = async (worker: number) => void created.push(await transferOne(worker, await quoteOne(worker)));

    // The reference left the server's write-ahead log to a checkpoint; it is done now, as the
    // reads below start from one, so that it lands on neither measure.
    await withClient(db.url, (client) => client.query('CHECKPOINT'));
    // Warm-up of each path (JIT, connection pools, TLS sessions), then the measured runs.
    const warmup = (await load(CONCURRENCY, 2, createOne)).requests;
    const commitsBefore = await commits(db.url);
    const cpuBefore = readCpu(corridor.child.pid);
    const creation = await load(CONCURRENCY, SECONDS, createOne);
    const creationCpu = cpuBetween(cpuBefore, readCpu(corridor.child.pid));
    const creationCommits = (await commits(db.url)) - commitsBefore;
    ctx.log(`quote+transfer creation: ${fmt(creation.perSecond)}/s p50 ${fmt(creation.p50ms, 2)} ms p99 ${fmt(creation.p99ms, 2)} ms (${creation.errors} errors)`);

    const drain = await drainSetup(db.url);
    ctx.log(`engine: ${drain.backlog} transfers still in PENDING_SETUP when creation stopped, all prepared ${fmt(drain.seconds, 2)} s later`);

    // The same creation taken apart: quote requests alone, then transfer requests alone on the
    // options those quotes made (the engine preparing each transfer meanwhile), each with its CPU.
    const options: string[] = [];
    const quoteAlone = async (worker: number) => void options.push(await quoteOne(worker));
    await load(CONCURRENCY, 2, quoteAlone);
    const quoteCpuBefore = readCpu(corridor.child.pid);
    const quotes = await load(CONCURRENCY, SECONDS, quoteAlone);
    const quoteCpu = cpuBetween(quoteCpuBefore, readCpu(corridor.child.pid));
    ctx.log(`quote request alone: ${fmt(quotes.perSecond)}/s p50 ${fmt(quotes.p50ms, 2)} ms p99 ${fmt(quotes.p99ms, 2)} ms (${quotes.errors} errors)`);
    const transferAlone = async (worker: number) => {
      const option = options.pop();
      if (!option) throw new Error('the quote phase made too few options for this phase');
      created.push(await transferOne(worker, option));
    };
    await load(CONCURRENCY, 2, transferAlone);
    const transferCpuBefore = readCpu(corridor.child.pid);
    const transfers = await load(CONCURRENCY, SECONDS, transferAlone);
    const transferCpu = cpuBetween(transferCpuBefore, readCpu(corridor.child.pid));
    ctx.log(`transfer request alone: ${fmt(transfers.perSecond)}/s p50 ${fmt(transfers.p50ms, 2)} ms p99 ${fmt(transfers.p99ms, 2)} ms (${transfers.errors} errors)`);
    await drainSetup(db.url);

    // What the write phase leaves behind (autovacuum of the new rows, dirty buffers for the next
    // checkpoint) is done now, as pgbench vacuums before it measures, so it does not land on
    // whichever read slices happen to run while it does.
    await settle(db.url);

    const ids = created.slice();
    const getOne = async (worker: number, i: number) => {
      const id = ids[(worker * 7919 + i) % ids.length]!;
      const { status } = await connections[worker]!.request('GET', `/v1/transfers/${id}`, auth);
      if (status !== 200) throw new Error(`GET transfer: ${status}`);
    };
    const healthOne = async (worker: number) => {
      const { status } = await connections[worker]!.request('GET', '/health');
      if (status !== 200) throw new Error(`health: ${status}`);
    };
    await load(CONCURRENCY, 2, getOne);
    await load(CONCURRENCY, 2, healthOne);
    const [reads, health] = (await loadInterleaved(CONCURRENCY, SECONDS, ROUNDS, [getOne, healthOne])) as [LoadResult, LoadResult];
    ctx.log(`GET transfer: ${fmt(reads.perSecond)}/s p50 ${fmt(reads.p50ms, 2)} ms p99 ${fmt(reads.p99ms, 2)} ms (${reads.errors} errors)`);
    ctx.log(`GET /health: ${fmt(health.perSecond)}/s p50 ${fmt(health.p50ms, 2)} ms p99 ${fmt(health.p99ms, 2)} ms`);
    // What one bare HTTPS request costs the machine (server, client and its `select 1`), measured
    // alone: the part of a creation's cost that is HTTPS itself.
    const healthCpuBefore = readCpu(corridor.child.pid);
    const bare = await load(CONCURRENCY, SECONDS / 2, healthOne);
    const healthCpu = cpuBetween(healthCpuBefore, readCpu(corridor.child.pid));

    await corridor.close();

    const createRatio = creation.perSecond / pgbenchTps;
    const half = (name: string, r: LoadResult) =>
      `| ${name} | ${fmt(r.perSecond)} | ${fmt((r.perSecond / pgbenchTps) * 100)}% | ${fmt(r.p50ms, 2)} | ${fmt(r.p99ms, 2)} | ${r.requests} | ${r.errors} |`;
    const getRatio = reads.perSecond / health.perSecond;
    const verdict = (ratio: number, target: number) => `${fmt(ratio * 100)}% (target ≥ ${target * 100}%: ${ratio >= target ? 'met' : 'MISSED'})`;
    ctx.log(`creation / pgbench: ${verdict(createRatio, TARGET_CREATE)}; GET / health: ${verdict(getRatio, TARGET_GET)}`);

    const markdown = [
      `One Corridor process (\`node src/main.ts\`, HTTPS with its self-signed certificate) on a scratch PostgreSQL database, driven by ` +
        `${CONCURRENCY} closed-loop HTTPS clients (keep-alive connections that write each request in one piece, as wrk does: ` +
        `\`BenchConnection\` in bench/lib.ts) for ${SECONDS} s per measure after a 2 s warm-up. A creation is \`POST /v1/quotes\` ` +
        `(USD ACH → EUR SEPA, bound to a saved fiat account) then \`POST /v1/transfers\` with a fresh Idempotency-Key; the sandbox engine ` +
        `prepares each created transfer meanwhile (in this process, from the rows the creation wrote: docs/TRANSFERS.md). Reads are \`GET /v1/transfers/{id}\` over the transfers just created ` +
        `(API key authentication). References in the same run: \`pgbench -i\` then \`pgbench -N -T 10 -c 2\` on a scratch database of the same ` +
        `server, and unauthenticated \`GET /health\` (one \`select 1\`) at the same concurrency. Reads and their reference run in ${ROUNDS} ` +
        `alternating slices each (so load from elsewhere on the machine falls on both alike), and the client receives each body whole ` +
        `without parsing it, as wrk would. Before the reads, the database is vacuumed and checkpointed (as pgbench does before it measures), so ` +
        `the write phase's after-effects land on no read slice. Database connections use ${describeConnection(ctx.pgAdminUrl)}.`,
      '',
      '| measure | per second | p50 ms | p99 ms | requests | errors |',
      '|---|---|---|---|---|---|',
      row('quote + transfer creation', creation),
      row('GET /v1/transfers/{id}', reads),
      row('GET /health (reference)', health),
      `| pgbench simple-update TPS (reference) | ${fmt(pgbenchTps)} | | | | |`,
      '',
      `- creation / pgbench TPS: ${verdict(createRatio, TARGET_CREATE)}`,
      `- GET transfer / GET /health: ${verdict(getRatio, TARGET_GET)}`,
      `- sandbox engine: ${drain.backlog} of the ${creation.requests + warmup} transfers created were still in PENDING_SETUP when creation stopped; ` +
        `it had prepared them all ${fmt(drain.seconds, 2)} s later (it prepares transfers while they are being created, on the same two vCPUs).`,
      `- database transactions committed per creation, the engine's and the job queue's included: ${fmt(creationCommits / creation.requests, 2)} ` +
        `(pg_stat_database; requests arriving together share their statements, see docs/ARCHITECTURE.md, "Requests share their statements").`,
      '',
      `The same creation taken apart, each half measured alone for ${SECONDS} s after its own 2 s warm-up: quote requests, then transfer ` +
        `requests on options those quotes made (the engine preparing each created transfer meanwhile, as above).`,
      '',
      '| measure | per second | share of pgbench TPS | p50 ms | p99 ms | requests | errors |',
      '|---|---|---|---|---|---|---|',
      half('quote request alone', quotes),
      half('transfer request alone', transfers),
      '',
      `- if a pair cost exactly what its two halves cost alone, it would run at 1 / (1/${fmt(quotes.perSecond)} + 1/${fmt(transfers.perSecond)}) = ` +
        `${fmt(1 / (1 / quotes.perSecond + 1 / transfers.perSecond))}/s; measured above: ${fmt(creation.perSecond)}/s.`,
      ...cpuTable(pgbenchCpu, [
        { name: 'quote + transfer creation', cpu: creationCpu, count: creation.requests },
        { name: 'quote request alone', cpu: quoteCpu, count: quotes.requests },
        { name: 'transfer request alone', cpu: transferCpu, count: transfers.requests },
        { name: 'GET /health (one bare HTTPS request)', cpu: healthCpu, count: bare.requests },
      ]),
    ].join('\n');
    return { title: 'Quotes and transfers', markdown };
  } finally {
    for (const connection of connections) connection.close();
    await agent.close();
    await corridor.close();
    await db.drop();
  }
}
