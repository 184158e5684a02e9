// Shared machinery for benchmark scenarios: scratch databases, a real Corridor over HTTPS in a
// child process, and a bounded closed-loop load generator with latency percentiles.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import pg from 'pg';
import { Agent, request } from 'undici';

export interface BenchContext {
  /** A PostgreSQL URL with rights to create databases. */
  pgAdminUrl: string;
  log: (line: string) => void;
}

export interface BenchResult {
  title: string;
  markdown: string;
}

const ROOT = path.resolve(import.meta.dirname, '..');

/** Runs `work` on a fresh connection to `url`, closed afterwards whatever happens. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates a scratch database and returns its URL and a drop function. */
export async function scratchDatabase(adminUrl: string, label: string): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `bench_${label}_${randomBytes(3).toString('hex')}`;
  await withClient(adminUrl, (admin) => admin.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      await withClient(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

export interface RunningCorridor {
  baseUrl: string;
  apiKey: string;
  ownerEmail: string;
  ownerPassword: string;
  dataDir: string;
  child: ChildProcess;
  close(): Promise<void>;
}

/** Starts `node src/main.ts` (the real service, HTTPS) on the given database and waits for its banner. */
export async function startCorridor(env: Record<string, string>): Promise<RunningCorridor> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-bench-'));
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, CORRIDOR_PORT: '0', CORRIDOR_DATA_DIR: dataDir, CORRIDOR_LOG_LEVEL: 'warn', CORRIDOR_RATE_LIMIT_PER_MINUTE: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`corridor did not start:\n${out}`)), 120_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      // The banner is written in one piece ending with a blank line.
      if (/listening on/.test(out) && out.endsWith('\n\n')) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    child.on('exit', (code) => reject(new Error(`corridor exited ${code}:\n${out}`)));
  });
  const baseUrl = /listening on (https:\/\/\S+)/.exec(banner)![1]!;
  return {
    baseUrl,
    apiKey: /API key:\s+(\S+)/.exec(banner)?.[1] ?? '',
    ownerEmail: /owner email:\s+(\S+)/.exec(banner)?.[1] ?? '',
    ownerPassword: /password:\s+(\S+)/.exec(banner)?.[1] ?? '',
    dataDir,
    child,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An HTTPS client that accepts the self-signed sandbox certificate (loopback only). */
export function insecureAgent(connections = 16): Agent {
  return new Agent({ connect: { rejectUnauthorized: false }, connections, pipelining: 1 });
}

export async function call(agent: Agent, baseUrl: string, method: string, urlPath: string, options: { headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await request(`${baseUrl}${urlPath}`, {
    method: method as 'GET',
    dispatcher: agent,
    headers: { ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? (JSON.parse(text)) : null };
}

/**
 * The load generator's HTTPS connection, as wrk's: keep-alive HTTP/1.1, one request at a time,
 * each request written in one piece and each response read whole by its Content-Length (Corridor
 * sends one on every JSON answer), unparsed, so a timed read and its reference weigh alike on the
 * client. It accepts the self-signed sandbox certificate (loopback only). undici, used before,
 * cost the machine twice the client CPU (0.75 against 0.35 ms per creation, 0.18 against 0.09 ms
 * per GET /health, on 2026-11-25): on two vCPUs shared with the server, capacity taken from the
 * server being measured.
 */
export class BenchConnection {
  readonly #host: string;
  readonly #port: number;
  #socket: tls.TLSSocket | null = null;
  #received: Buffer = Buffer.alloc(0);
  #pending: { resolve: (r: { status: number; body: Buffer }) => void; reject: (e: Error) => void } | null = null;

  constructor(baseUrl: string) {
    const url = new URL(baseUrl);
    this.#host = url.hostname;
    this.#port = Number(url.port || 443);
  }

  async #connect(): Promise<tls.TLSSocket> {
    if (this.#socket) return this.#socket;
    const socket = tls.connect({ host: this.#host, port: this.#port, rejectUnauthorized: false });
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    socket.on('data', (chunk: Buffer) => {
      this.#received = this.#received.length ? Buffer.concat([this.#received, chunk]) : chunk;
      this.#readResponse();
    });
    const lost = (err: Error) => {
      if (this.#socket === socket) this.#socket = null;
      this.#received = Buffer.alloc(0);
      this.#settle(null, err);
    };
    socket.on('error', lost);
    socket.on('close', () => lost(new Error('connection closed')));
    this.#socket = socket;
    return socket;
  }

  #settle(response: { status: number; body: Buffer } | null, err?: Error): void {
    const pending = this.#pending;
    this.#pending = null;
    if (!pending) return;
    if (response) pending.resolve(response);
    else pending.reject(err ?? new Error('no response'));
  }

  #readResponse(): void {
    const headEnd = this.#received.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const head = this.#received.toString('latin1', 0, headEnd);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!length) {
      this.#socket?.destroy();
      this.#settle(null, new Error(`response without Content-Length: ${head.split('\r\n')[0]}`));
      return;
    }
    const end = headEnd + 4 + Number(length[1]);
    if (this.#received.length < end) return;
    const body = this.#received.subarray(headEnd + 4, end);
    this.#received = this.#received.subarray(end);
    this.#settle({ status: Number(head.slice(9, 12)), body });
  }

  /** Sends one request and answers its status and whole body (unparsed). */
  async request(method: string, urlPath: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; body: Buffer }> {
    if (this.#pending) throw new Error('a BenchConnection sends one request at a time');
    const socket = this.#socket ?? (await this.#connect());
    let head = `${method} ${urlPath} HTTP/1.1\r\nhost: ${this.#host}:${this.#port}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    if (body !== undefined) head += `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      socket.write(`${head}\r\n${body ?? ''}`);
    });
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = null;
  }
}

/** One BenchConnection per closed-loop worker. */
export function benchConnections(baseUrl: string, count: number): BenchConnection[] {
  return Array.from({ length: count }, () => new BenchConnection(baseUrl));
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50ms: number;
  p99ms: number;
}

/** CPU seconds used so far: the whole machine (all CPUs, busy time), one process, every PostgreSQL process, and this process (the load generator). */
export interface CpuReading {
  machine: number;
  corridor: number;
  postgres: number;
  client: number;
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** A process's own CPU ticks, and those of its children that exited and were waited for. */
function processTicks(pid: string): { comm: string; ticks: number; children: number } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      ticks: Number(fields[11]) + Number(fields[12]),
      children: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return null; // exited between the listing and the read
  }
}

/** Reads /proc (Linux); null elsewhere, and the scenario then leaves the CPU columns out. */
export function readCpu(corridorPid: number | undefined): CpuReading | null {
  if (!fs.existsSync('/proc/stat')) return null;
  const [, ...counters] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const values = counters.map(Number);
  const idle = values[3]! + values[4]!;
  const machine = values.slice(0, 8).reduce((a, b) => a + b, 0) - idle;
  let postgres = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const p = processTicks(pid);
    // Backends that ended (pgbench's, at its exit) count through the postmaster that reaped them.
    if (p?.comm === 'postgres') postgres += p.ticks + p.children;
  }
  const corridor = corridorPid === undefined ? 0 : (processTicks(String(corridorPid))?.ticks ?? 0);
  const client = processTicks(String(process.pid))?.ticks ?? 0;
  return { machine: machine / TICKS_PER_SECOND, corridor: corridor / TICKS_PER_SECOND, postgres: postgres / TICKS_PER_SECOND, client: client / TICKS_PER_SECOND };
}

export function cpuBetween(before: CpuReading | null, after: CpuReading | null): CpuReading | null {
  if (!before || !after) return null;
  return { machine: after.machine - before.machine, corridor: after.corridor - before.corridor, postgres: after.postgres - before.postgres, client: after.client - before.client };
}

type Operation = (worker: number, i: number) => Promise<void>;

interface Slice {
  latencies: number[];
  errors: number;
  seconds: number;
}

async function runSlice(concurrency: number, seconds: number, operation: Operation, into: Slice): Promise<void> {
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const t0 = performance.now();
        try {
          await operation(worker, i);
          into.latencies.push(performance.now() - t0);
        } catch {
          into.errors++;
        }
      }
    }),
  );
  into.seconds += (performance.now() - started) / 1000;
}

function summarize(slice: Slice): LoadResult {
  const latencies = slice.latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]! : NaN);
  return { requests: latencies.length, errors: slice.errors, seconds: slice.seconds, perSecond: latencies.length / slice.seconds, p50ms: pct(50), p99ms: pct(99) };
}

/**
 * Runs `operation` from `concurrency` closed-loop workers for `seconds`, then reports the rate
 * and latency percentiles. An operation that throws counts as an error, not a latency sample.
 */
export async function load(concurrency: number, seconds: number, operation: Operation): Promise<LoadResult> {
  const slice: Slice = { latencies: [], errors: 0, seconds: 0 };
  await runSlice(concurrency, seconds, operation, slice);
  return summarize(slice);
}

/**
 * Measures a path and its reference in alternating slices (`rounds` of each, `seconds` in all per
 * operation), so that load from elsewhere on a shared machine, which comes and goes over seconds,
 * falls on both alike instead of on whichever happened to run at that moment.
 */
export async function loadInterleaved(concurrency: number, seconds: number, rounds: number, operations: Operation[]): Promise<LoadResult[]> {
  const slices: Slice[] = operations.map(() => ({ latencies: [], errors: 0, seconds: 0 }));
  for (let r = 0; r < rounds; r++) {
    for (const [k, operation] of operations.entries()) await runSlice(concurrency, seconds / rounds, operation, slices[k]!);
  }
  return slices.map(summarize);
}

export const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
