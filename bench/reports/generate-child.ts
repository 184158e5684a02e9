// Runs one report generation in its own process, the way the service runs it on PostgreSQL (in a
// worker thread with bounded heap), so the process's peak memory (maxRSS) is the generation's:
// prints {rows, seconds, cpuSeconds, maxRssBytes, sizeBytes} as JSON.
import pg from 'pg';
import { createLogger } from '../../src/platform/logger.ts';
import { runInWorker } from '../../src/reports/generation-worker.ts';

const [url, reportId, dataDir, pageSize, maxTransfers, maxRows] = process.argv.slice(2) as [string, string, string, string, string, string];
const started = performance.now();
const cpuBefore = process.cpuUsage();
await runInWorker(
  {
    databaseUrl: url,
    logLevel: 'warn',
    store: { reportStorage: 'local', dataDir, s3Bucket: null, s3Region: null, s3Endpoint: null },
    limits: { maxMatchingTransfers: Number(maxTransfers), maxOutputRows: Number(maxRows) },
    leaseSeconds: 60,
    pageSize: Number(pageSize),
    retryLimit: 0,
    retentionMs: 7 * 24 * 3600 * 1000,
  },
  reportId,
  { retryCount: 0 },
  createLogger('warn'),
);
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
const client = new pg.Client({ connectionString: url });
await client.connect();
const { rows } = await client.query<{ status: string; error_code: string | null; error_message: string | null; artifact_row_count: string; artifact_size_bytes: string }>(
  'SELECT status, error_code, error_message, artifact_row_count, artifact_size_bytes FROM reports WHERE id = $1',
  [reportId],
);
await client.end();
const report = rows[0];
if (report?.status !== 'READY') throw new Error(`report ended ${report?.status}: ${report?.error_code} ${report?.error_message}`);
process.stdout.write(
  JSON.stringify({
    rows: Number(report.artifact_row_count),
    sizeBytes: Number(report.artifact_size_bytes),
    seconds,
    // CPU time of the whole process (all threads): steadier than wall time on a shared machine.
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    // resourceUsage reports kilobytes.
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
  }) + '\n',
);
