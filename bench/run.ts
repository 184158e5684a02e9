// `npm run bench [scenario …]`: runs every bench/scenarios/*.ts (or the named ones) against the
// local PostgreSQL and rewrites docs/BENCHMARKS.md with the machine, the date, the command and
// each scenario's results next to the reference it measured in the same run.
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_POSTGRES_URL, ensurePostgres } from '../scripts/postgres.ts';
import type { BenchContext, BenchResult } from './lib.ts';

const root = path.resolve(import.meta.dirname, '..');
const wanted = process.argv.slice(2);
const scenarioDir = path.join(root, 'bench', 'scenarios');
const files = fs
  .readdirSync(scenarioDir)
  .filter((f) => f.endsWith('.ts'))
  .sort()
  .filter((f) => !wanted.length || wanted.includes(path.basename(f, '.ts')));

const pgAdminUrl = process.env.BENCH_DATABASE_URL ?? DEFAULT_POSTGRES_URL;
await ensurePostgres(pgAdminUrl);
const ctx: BenchContext = { pgAdminUrl, log: (line) => console.log(`  ${line}`) };

const results: Array<{ name: string; result: BenchResult }> = [];
for (const file of files) {
  const name = path.basename(file, '.ts');
  console.log(`== ${name}`);
  const mod = (await import(path.join(scenarioDir, file))) as { default: (c: BenchContext) => Promise<BenchResult> };
  results.push({ name, result: await mod.default(ctx) });
}

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
const pgVersion = (() => {
  try {
    return execSync(`psql "${pgAdminUrl}" -Atc "show server_version"`, { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
})();
const header = [
  '# Benchmarks',
  '',
  'Numbers from `npm run bench` (each scenario measures its own reference in the same run, so the',
  'ratio is what to compare across machines; absolute numbers move with the machine and its load).',
  'These machines are shared with other tenants: within one hour the same build measured pgbench at',
  '1,400 to 4,000 TPS and the same report generation at 4.1 to 6 s of CPU, so a ratio can move by a',
  'quarter between runs. Each section says when it was measured; `npm run bench NAME` re-measures',
  'one scenario and keeps the others. Latest run:',
  '',
  `- date: ${new Date().toISOString()}`,
  `- command: \`npm run bench${wanted.length ? ` ${wanted.join(' ')}` : ''}\``,
  `- machine: ${os.cpus().length} × ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${os.platform()} ${os.release()}`,
  `- Node ${process.version}, PostgreSQL ${pgVersion}`,
  '',
];
const target = path.join(root, 'docs', 'BENCHMARKS.md');
// Scenarios not run this time keep their previous section, so one scenario can be re-measured alone.
const previous = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
const sections = new Map<string, string>();
for (const m of previous.matchAll(/<!-- bench:(\w[\w-]*):start -->\n([\s\S]*?)<!-- bench:\1:end -->/g)) sections.set(m[1]!, m[2]!);
for (const { name, result } of results) sections.set(name, `## ${result.title}\n\n${result.markdown.trim()}\n\n_measured ${new Date().toISOString()}_\n`);
const body = [...sections.entries()].map(([name, text]) => `<!-- bench:${name}:start -->\n${text}<!-- bench:${name}:end -->`).join('\n\n');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, `${header.join('\n')}\n${body}\n`);
console.log(`wrote ${path.relative(root, target)}`);
