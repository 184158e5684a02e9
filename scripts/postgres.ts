// Finds the local PostgreSQL used by tests and benchmarks, starting it when nothing answers.
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';

export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

export async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Resolves when PostgreSQL answers at url; starts the local cluster once if needed; throws otherwise. */
export async function ensurePostgres(url: string): Promise<void> {
  if (await reachable(url)) return;
  const versions = fs.existsSync('/etc/postgresql') ? fs.readdirSync('/etc/postgresql') : [];
  if (versions.length) {
    console.error(`PostgreSQL not answering at ${url}; starting it`);
    try {
      execSync(`pg_ctlcluster --skip-systemctl-redirect ${versions[0]} main start`, { stdio: 'inherit' });
    } catch {
      // checked below
    }
    for (let i = 0; i < 20 && !(await reachable(url)); i++) await new Promise((r) => setTimeout(r, 500));
  }
  if (!(await reachable(url))) throw new Error(`cannot connect to PostgreSQL at ${url}`);
}
