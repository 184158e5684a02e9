// The real entry point (`node src/main.ts`, as `npm start` runs it) in a child process, for tests
// of what only the whole process does: configuration errors, first-start credentials, the data-dir
// lock, signals and shutdown.
import { after } from 'node:test';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const MAIN = path.join(ROOT, 'src/main.ts');

const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Environment for a child: only what a user would set, never the parent's CORRIDOR_* or DATABASE_URL. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('CORRIDOR_') && k !== 'DATABASE_URL' && !k.startsWith('NODE_TEST')) env[k] = v;
  return { ...env, CORRIDOR_LOG_LEVEL: 'warn', ...extra };
}

export interface Started {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Spawns the service with `env` added to childEnv(); it is killed after the test file if still running. */
export function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Waits until the service printed its banner (bounded), or fails with what it printed. */
export async function ready(s: Started, timeoutMs = 180_000): Promise<{ base: string }> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void s.exited.then((c) => (exitCode = c));
  while (Date.now() < deadline) {
    const m = s.stdout().match(/is listening on (https:\/\/[\d.]+:\d+)/);
    // The banner is written in one piece; wait for its blank closing line.
    if (m && s.stdout().endsWith('\n\n')) return { base: m[1]! };
    if (exitCode !== undefined) throw new Error(`exited ${exitCode}\nstdout: ${s.stdout()}\nstderr: ${s.stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not ready in time\nstdout: ${s.stdout()}\nstderr: ${s.stderr()}`);
}

export async function stop(s: Started, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  s.child.kill(signal);
  return s.exited;
}
