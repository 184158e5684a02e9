// Regression: the engine's step jobs were fetched one per fetch, and pg-boss waits a polling
// interval after each fetch, so however many transfers were due the engine prepared 8 a second
// (4 workers x 1 job per 0.5 s). Steps due together must be taken together.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { createTransfer, newCustomer, quoteOption, waitFor } from './test-support.ts';
import type { Customer } from './test-support.ts';

const TRANSFERS = 12;

describe('sandbox engine steps', () => {
  let t: TestServer;
  let c: Customer;

  before(async () => {
    // Each step waits 5 s / speed: long enough for all the transfers below to be created before
    // their first step is due, so those steps come due within moments of each other.
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '2' });
    c = await newCustomer(t, 'Engine batches');
  });
  after(async () => t?.close());

  test('steps that are due together are fetched together, not one per polling interval', async () => {
    const options = [];
    for (let i = 0; i < TRANSFERS; i++) options.push((await quoteOption(t, c, `${100 + i}.00`)).optionId);
    const created = await Promise.all(options.map((optionId) => createTransfer(t, c, optionId)));
    for (const res of created) assert.equal(res.status, 201, res.text);
    const ids = created.map((res) => res.body.id as string);
    for (const id of ids) await waitFor(t, c, id, (tr) => tr.status === 'READY_TO_FUND');

    // One fetch marks every job it takes as started in one statement, so they share started_on.
    const { rows } = await sql<{ jobs: number; fetches: number }>`
      select count(*)::int as jobs, count(distinct started_on)::int as fetches
        from pgboss.job
       where name = 'transfers.step' and data->>'transferId' in (${sql.join(ids)})`.execute(t.server.db.kysely);
    const { jobs, fetches } = rows[0]!;
    assert.ok(jobs >= TRANSFERS, `${jobs} step jobs for ${TRANSFERS} transfers`);
    assert.ok(fetches < jobs, `${jobs} steps were taken in ${fetches} fetches: one job per fetch`);
  });
});
