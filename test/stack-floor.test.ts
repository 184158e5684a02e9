// The stack floor (bench/stack-floor.ts) is the reference issue 4's creation target is judged
// against in `npm run bench transfers`; these tests keep it honest: each shape answers the two
// requests of a creation and writes the rows a Corridor creation writes, on a database Corridor's
// migrations made. PostgreSQL only, as the benchmark is.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { creationScript } from '../bench/database-floor.ts';
import { insecureAgent, startStackFloor } from '../bench/lib.ts';
import { creationCalls } from '../bench/scenarios/transfers.ts';
import { newCustomer, newTransfer, waitFor } from '../src/transfers/test-support.ts';
import type { Customer } from '../src/transfers/test-support.ts';
import { startTestServer } from './helpers/server.ts';
import type { TestServer } from './helpers/server.ts';

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

describe('the stack floor of the transfers benchmark', { skip: !onPostgres && 'set TEST_DATABASE_URL: the floor runs on PostgreSQL, as the benchmark does' }, () => {
  let t: TestServer;
  let c: Customer;
  let template: { id: string; legs: number };

  before(async () => {
    t = await startTestServer();
    c = await newCustomer(t, 'Floor');
    const transfer = await newTransfer(t, c, '150.00');
    // The floor copies this transfer; prepared first, so that the engine leaves its copies alone.
    await waitFor(t, c, transfer.id as string, (x) => x.status === 'READY_TO_FUND');
    template = { id: transfer.id as string, legs: (transfer.legs as unknown[]).length };
  });
  after(async () => {
    await t?.close();
  });

  const count = async (query: ReturnType<typeof sql<{ n: number }>>) => (await query.execute(t.server.db.kysely)).rows[0]!.n;

  for (const shape of ['corridor', 'fewest', 'single'] as const) {
    test(`${shape}: a quote and a transfer write what a Corridor creation writes, and the option is taken`, async () => {
      const floor = await startStackFloor(t.server.config.databaseUrl!, shape);
      const agent = insecureAgent(1);
      try {
        const events = await count(sql<{ n: number }>`select count(*)::int as n from events`);
        const { quoteOne, transferOne } = creationCalls(agent, floor.baseUrl, floor.apiKey, c.entityId, c.fiatAccountId);
        const optionId = await quoteOne();
        const transferId = await transferOne(optionId);

        const [row] = (await sql<{ organization_id: string; quote_option_id: string; option_status: string }>`
          select t.organization_id, t.quote_option_id, o.status as option_status
          from transfers t join quote_options o on o.id = t.quote_option_id where t.id = ${transferId}`.execute(t.server.db.kysely)).rows;
        assert.ok(row, 'the transfer row exists');
        assert.equal(row.organization_id, c.org.organizationId);
        assert.equal(row.quote_option_id, optionId);
        assert.equal(row.option_status, 'USED');
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from quote_options where quote_id = (select quote_id from quote_options where id = ${optionId})`), await count(sql<{ n: number }>`select count(*)::int as n from quote_options where quote_id = (select quote_id from transfers where id = ${template.id})`));
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from transfer_legs where transfer_id = ${transferId}`), template.legs);
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from transfer_events where transfer_id = ${transferId}`), 1);
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from events`), events + 1);
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from idempotency_records where response_body->>'id' = ${transferId} and state = 'COMPLETED' and response_status = 201`), 1);
      } finally {
        await agent.close();
        await floor.close();
      }
    });
  }

  test('database floor: pgbench runs the SQL of two creations, and each writes what a Corridor creation writes', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-database-floor-test-'));
    try {
      const script = path.join(dir, 'creation.sql');
      fs.writeFileSync(script, await creationScript(t.server.config.databaseUrl!));
      const before = (await sql<{ id: string }>`select id from transfers`.execute(t.server.db.kysely)).rows.map((r) => r.id);
      const events = await count(sql<{ n: number }>`select count(*)::int as n from events`);
      const out = execFileSync('pgbench', ['-n', '-M', 'prepared', '-D', 'loaded=0', '-f', script, '-t', '2', '-c', '1', t.server.config.databaseUrl!], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      assert.match(out, /number of transactions actually processed: 2\/2/);

      const copies = (await sql<{ id: string; organization_id: string; quote_id: string; quote_option_id: string; option_status: string }>`
        select t.id, t.organization_id, t.quote_id, t.quote_option_id, o.status as option_status
        from transfers t join quote_options o on o.id = t.quote_option_id
        where t.id <> all(${before}::uuid[])`.execute(t.server.db.kysely)).rows;
      assert.equal(copies.length, 2, 'one transfer per creation');
      const optionsPerQuote = await count(sql<{ n: number }>`select count(*)::int as n from quote_options where quote_id = (select quote_id from transfers where id = ${template.id})`);
      for (const copy of copies) {
        assert.equal(copy.organization_id, c.org.organizationId);
        assert.equal(copy.option_status, 'USED');
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from quote_options where quote_id = ${copy.quote_id}`), optionsPerQuote);
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from transfer_legs where transfer_id = ${copy.id}`), template.legs);
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from transfer_events where transfer_id = ${copy.id}`), 1);
        assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from idempotency_records where response_body->>'id' = ${copy.id} and state = 'COMPLETED' and response_status = 201`), 1);
      }
      assert.equal(await count(sql<{ n: number }>`select count(*)::int as n from events`), events + 2);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
