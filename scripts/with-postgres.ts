// Runs a command with TEST_DATABASE_URL pointing at a local PostgreSQL, starting the server if
// nothing answers. Used by `npm run test:postgres` and .ci/run.
import { spawnSync } from 'node:child_process';
import { DEFAULT_POSTGRES_URL, ensurePostgres } from './postgres.ts';

const url = process.env.TEST_DATABASE_URL ?? DEFAULT_POSTGRES_URL;
try {
  await ensurePostgres(url);
} catch (err) {
  console.error(`FATAL: ${(err as Error).message}`);
  process.exit(1);
}
const [command, ...args] = process.argv.slice(2);
const result = spawnSync(command!, args, { stdio: 'inherit', env: { ...process.env, TEST_DATABASE_URL: url } });
process.exit(result.status ?? 1);
