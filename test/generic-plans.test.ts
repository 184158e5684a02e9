// On PostgreSQL every parameterized query is a named prepared statement, and after five runs the
// server may keep one generic plan for it, made without the parameters' values. A partial index
// (WHERE status = 'OPEN') is then usable only if the query says its predicate in literals: with a
// parameter, the generic plan scans the whole table. The engine's setup page was such a query: on a
// table growing under load, its cost grew with every transfer ever created.
//
// Each query below is captured as its repository runs it, prepared, and explained with generic
// plans forced and sequential scans priced out. Its plan must know the status (a literal, not $n)
// and scan no table whole; on these near-empty tables the planner may still prefer another index
// to the partial one, which is its choice to make once the status is known.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely';
import type { CompiledQuery } from 'kysely';
import { FundingRepository } from '../src/funding/repository.ts';
import { QuoteRepository } from '../src/quotes/repository.ts';
import { TransferRepository } from '../src/transfers/repository.ts';
import { startTestServer } from './helpers/server.ts';
import type { TestServer } from './helpers/server.ts';

describe('generic plans of queries that need a partial index', () => {
  let t: TestServer;
  let captured: CompiledQuery[] = [];
  let logged: Kysely<any>;

  before(async () => {
    t = await startTestServer();
    const { pool, pglite } = t.server.db;
    const log = (event: { query: CompiledQuery }) => void captured.push(event.query);
    logged = new Kysely<any>({ dialect: pool ? new PostgresDialect({ pool }) : new PGliteDialect({ pglite: pglite! }), log });
  });
  after(() => t.close());

  const literal = (value: unknown): string => {
    if (value === null) return 'null';
    if (value instanceof Date) return `'${value.toISOString()}'`;
    if (typeof value === 'number' || typeof value === 'bigint') return String(value);
    if (typeof value === 'string') return `'${value.replace(/'/g, "''")}'`;
    throw new Error(`no literal for ${typeof value}`);
  };

  /** The generic plan of every statement `run` executes, as EXPLAIN prints it. */
  async function genericPlans(run: () => Promise<unknown>): Promise<string[]> {
    captured = [];
    await run();
    const plans: string[] = [];
    await t.server.db.kysely.transaction().execute(async (trx) => {
      await sql`set local plan_cache_mode = force_generic_plan`.execute(trx);
      await sql`set local enable_seqscan = off`.execute(trx);
      for (const [i, query] of captured.entries()) {
        await sql.raw(`prepare generic_${i} as ${query.sql}`).execute(trx);
        const args = query.parameters.length ? `(${query.parameters.map(literal).join(', ')})` : '';
        const { rows } = await sql.raw<{ 'QUERY PLAN': string }>(`explain execute generic_${i}${args}`).execute(trx);
        plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
        await sql.raw(`deallocate generic_${i}`).execute(trx);
      }
    });
    assert.ok(plans.length, 'the repository ran a query');
    return plans;
  }

  /** The plan knows the status it filters on, and reads the table through an index. */
  const assertStatusKnown = (plan: string) => {
    assert.doesNotMatch(plan, /status\)? = \$\d|status = ANY \(\$\d/, `the status is a parameter:\n${plan}`);
    assert.doesNotMatch(plan, /Seq Scan/, `a table is read whole:\n${plan}`);
  };

  test("the setup job's pages and the engine's sweep know the status they look for", async () => {
    const transfers = new TransferRepository(logged);
    for (const plan of await genericPlans(() => transfers.pendingSetup(null, 25))) assertStatusKnown(plan);
    const after = { updated_at: new Date(), id: '00000000-0000-4000-8000-000000000000' };
    for (const plan of await genericPlans(() => transfers.pendingSetup(after, 25))) assertStatusKnown(plan);
    for (const plan of await genericPlans(() => transfers.engineOwned(new Date(), 1000))) assertStatusKnown(plan);
  });

  test('the quote expiry job uses the index of open options', async () => {
    const quotes = new QuoteRepository(logged);
    for (const plan of await genericPlans(() => quotes.expireDue())) {
      assertStatusKnown(plan);
      assert.match(plan, /quote_options_open_expiry/, plan);
    }
  });

  test("a transfer's active funding session, and the sessions due, use their partial indexes", async () => {
    const funding = new FundingRepository(logged);
    const id = '00000000-0000-4000-8000-000000000000';
    for (const run of [() => funding.findActive(id), () => funding.findActiveInOrganization(id, id)]) {
      for (const plan of await genericPlans(run)) {
        assertStatusKnown(plan);
        assert.match(plan, /funding_sessions_one_active/, plan);
      }
    }
    for (const plan of await genericPlans(() => funding.listDue(new Date(), 100))) {
      assertStatusKnown(plan);
      assert.match(plan, /funding_sessions_due/, plan);
    }
  });
});
