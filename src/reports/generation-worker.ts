// Report generation in a worker thread (PostgreSQL only). Formatting a million rows is seconds of
// CPU and allocates gigabytes of short-lived objects; in its own thread it neither stalls the API's
// event loop nor lets V8 grow the main heap for it, and resourceLimits keep its memory bounded
// whatever the size of the report. PGlite has one in-process session, so it generates in-process.
//
// This file is both sides: runInWorker() in the service's thread, and the worker's entry point.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Writable } from 'node:stream';
import type { Logger } from '../platform/logger.ts';
import type { GenerationAttempt, ReportGeneratorOptions } from './generation.ts';
import type { ArtifactStoreSettings } from './storage.ts';

export interface WorkerGenerationSettings extends Pick<ReportGeneratorOptions, 'limits' | 'leaseSeconds' | 'pageSize' | 'retryLimit' | 'retentionMs'> {
  databaseUrl: string;
  store: ArtifactStoreSettings;
  logLevel: string;
}

interface WorkerInput {
  settings: WorkerGenerationSettings;
  reportId: string;
  attempt: GenerationAttempt;
}

type WorkerMessage = { log: string } | { done: true } | { failed: { message: string; stack?: string } };

/**
 * The V8 heap a generation may use. The young generation is kept small: generation allocates
 * a great deal but keeps little, and V8 would otherwise grow it to its maximum and keep it.
 */
const RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 64, maxOldGenerationSizeMb: 192 };

const LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Runs one generation attempt in a fresh worker; rejects as the in-process run would (transient failure). */
export function runInWorker(settings: WorkerGenerationSettings, reportId: string, attempt: GenerationAttempt, log: Logger): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { settings, reportId, attempt } satisfies WorkerInput,
      resourceLimits: RESOURCE_LIMITS,
    });
    let settled = false;
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve();
    };
    worker.on('message', (m: WorkerMessage) => {
      if ('log' in m) {
        // The worker's log lines go out through the service's logger, fields intact.
        const { level, msg, time: _t, pid: _p, hostname: _h, service: _s, ...fields } = JSON.parse(m.log) as Record<string, unknown>;
        log[LEVELS[level as number] ?? 'info'](fields, typeof msg === 'string' ? msg : '');
      } else if ('failed' in m) {
        const err = new Error(m.failed.message);
        if (m.failed.stack) err.stack = m.failed.stack;
        finish(err);
      } else finish(null);
    });
    worker.on('error', (err) => finish(err));
    worker.on('exit', (code) => finish(code === 0 ? null : new Error(`report generation worker exited with code ${code}`)));
  });
}

async function workerMain(input: WorkerInput): Promise<void> {
  const port = parentPort!;
  const [{ openDatabase }, { createLogger }, { ReportGenerator }, { ReportRepository }, { TransferReporting }, { artifactStoreFor }] = await Promise.all([
    import('../platform/db/database.ts'),
    import('../platform/logger.ts'),
    import('./generation.ts'),
    import('./repository.ts'),
    import('../transfers/reporting.ts'),
    import('./storage.ts'),
  ]);
  const lines = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) port.postMessage({ log: line } satisfies WorkerMessage);
      done();
    },
  });
  const s = input.settings;
  // One connection for the cursor, one for the limit counts that run beside it, one for the lease.
  const db = await openDatabase({ url: s.databaseUrl, poolSize: 3 });
  try {
    const generator = new ReportGenerator({
      repo: new ReportRepository(db.kysely),
      readModel: new TransferReporting(db.kysely, { cursorPool: db.pool }),
      store: artifactStoreFor(s.store),
      log: createLogger(s.logLevel, lines),
      limits: s.limits,
      leaseSeconds: s.leaseSeconds,
      pageSize: s.pageSize,
      retryLimit: s.retryLimit,
      retentionMs: s.retentionMs,
      now: () => new Date(),
    });
    await generator.run(input.reportId, input.attempt);
  } finally {
    await db.close();
  }
}

if (!isMainThread && parentPort && (workerData as Partial<WorkerInput> | null)?.reportId) {
  workerMain(workerData as WorkerInput).then(
    () => parentPort!.postMessage({ done: true } satisfies WorkerMessage),
    (err: Error) => parentPort!.postMessage({ failed: { message: err.message, ...(err.stack ? { stack: err.stack } : {}) } } satisfies WorkerMessage),
  );
}
