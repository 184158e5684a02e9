// Regression: the engine's step jobs were fetched one per fetch, and pg-boss waits a polling
// interval after each fetch, so however many transfers were due the engine prepared 8 a second
// (4 workers x 1 job per 0.5 s). Steps due together must be taken together. Setup has no job per
// transfer at all: a process running the engine prepares what it created from the rows it wrote,
// and otherwise creations ask for the one setup job, which prepares every transfer waiting.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { isGuardRefusal } from '../platform/db/guard.ts';
import { assertHistoryConsistent, createTransfer, fund, getTransfer, newCustomer, quoteOption, waitFor } from './test-support.ts';
import type { Customer } from './test-support.ts';

const TRANSFERS = 12;

describe('sandbox engine steps', () => {
  let t: TestServer;
  let c: Customer;

  before(async () => {
    // Each step waits 5 s / speed: long enough for all the transfers below to be funded before
    // their first execution step is due, so those steps come due within moments of each other.
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '2' });
    c = await newCustomer(t, 'Engine batches');
  });
  after(async () => t?.close());

  const jobCount = async (name: string) =>
    (await sql<{ n: number }>`select count(*)::int as n from pgboss.job where name = ${name}`.execute(t.server.db.kysely)).rows[0]!.n;

  test('transfers created together are prepared together, without a setup job each, and their steps are fetched together', async () => {
    const options = [];
    for (let i = 0; i < TRANSFERS; i++) options.push((await quoteOption(t, c, `${100 + i}.00`)).optionId);
    const setupJobsBefore = await jobCount('transfers.setup');
    const created = await Promise.all(options.map((optionId) => createTransfer(t, c, optionId)));
    for (const res of created) assert.equal(res.status, 201, res.text);
    const ids = created.map((res) => res.body.id as string);
    for (const id of ids) {
      // Prepared together, each is prepared exactly as alone: its collection leg handed to the
      // provider, then READY_TO_FUND, each change with its timeline item and its event.
      const transfer = await waitFor(t, c, id, (tr) => tr.status === 'READY_TO_FUND');
      assert.deepEqual(
        transfer.timeline.map((e: any) => [e.type, e.status, e.leg?.status ?? null]),
        [
          ['STATUS', 'PENDING_SETUP', null],
          ['LEG', 'PENDING_SETUP', 'PROCESSING'],
          ['STATUS', 'READY_TO_FUND', null],
        ],
      );
      assert.match(transfer.legs[0].providerReference, /^SIM-/);
      await assertHistoryConsistent(t, transfer);
    }
    // This process runs the engine: each creation batch is set up from the rows it wrote, with no
    // job, and the setups of a batch commit together (their READY_TO_FUND events share a transaction).
    const setupJobs = (await jobCount('transfers.setup')) - setupJobsBefore;
    assert.ok(setupJobs < TRANSFERS, `${TRANSFERS} transfers created together queued ${setupJobs} setup jobs`);
    const { rows: commits } = await sql<{ n: number }>`
      select count(distinct transaction_id)::int as n from events
       where type = 'transfer.status_changed' and data->>'status' = 'READY_TO_FUND' and data->>'transferId' in (${sql.join(ids)})`.execute(t.server.db.kysely);
    assert.ok(commits[0]!.n < TRANSFERS, `${TRANSFERS} transfers created together were prepared in ${commits[0]!.n} transactions`);

    // Funded together, their first execution steps come due together.
    for (const id of ids) assert.equal((await fund(t, c, id)).status, 'IN_PROGRESS');
    // The first execution step hands the leg after the collection to its provider.
    for (const id of ids) await waitFor(t, c, id, (tr) => tr.legs[1].status !== 'PENDING');
    // One fetch marks every job it takes as started in one statement, so they share started_on.
    const { rows } = await sql<{ jobs: number; fetches: number }>`
      select count(*)::int as jobs, count(distinct started_on)::int as fetches
        from pgboss.job
       where name = 'transfers.step' and started_on is not null and data->>'transferId' in (${sql.join(ids)})`.execute(t.server.db.kysely);
    const { jobs, fetches } = rows[0]!;
    assert.ok(jobs >= TRANSFERS, `${jobs} step jobs for ${TRANSFERS} transfers`);
    assert.ok(fetches < jobs, `${jobs} steps were taken in ${fetches} fetches: one job per fetch`);
  });

  test('a batch of steps: setups, steps already taken, unknown and repeated ids each settle once', async () => {
    const options = [];
    for (let i = 0; i < 3; i++) options.push((await quoteOption(t, c, `${200 + i}.00`)).optionId);
    const created = await Promise.all(options.map((optionId) => createTransfer(t, c, optionId)));
    const ids = created.map((res) => res.body.id as string);
    const prepared = ids[0]!;
    await waitFor(t, c, prepared, (tr) => tr.status === 'READY_TO_FUND');

    // The queue's own steps for these transfers may run at the same moment: one process never
    // runs two steps of one transfer at once, so each is prepared once whoever comes first.
    const batch = [...ids, randomUUID(), ids[1]!];
    const outcomes = await t.server.services.engine.stepAll(batch);
    assert.deepEqual(outcomes, batch.map(() => null));
    for (const id of ids) {
      const transfer = await getTransfer(t, c, id);
      assert.equal(transfer.status, 'READY_TO_FUND');
      assert.equal(transfer.timeline.filter((e: any) => e.status === 'READY_TO_FUND' && e.type === 'STATUS').length, 1);
      await assertHistoryConsistent(t, transfer);
    }
  });
});

describe('sandbox engine: setups taken in one batch', () => {
  let t: TestServer;
  let c: Customer;

  before(async () => {
    // No workers: the transfers stay PENDING_SETUP until the test hands them to stepAll or
    // setUpPending (nothing takes the setup job the creations ask for).
    t = await startTestServer({}, { workers: false });
    c = await newCustomer(t, 'Engine setup batches');
  });
  after(async () => t?.close());

  async function pendingTransfers(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await createTransfer(t, c, (await quoteOption(t, c, `${300 + i}.00`)).optionId);
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.status, 'PENDING_SETUP');
      ids.push(res.body.id as string);
    }
    return ids;
  }

  const statuses = async (ids: string[]) => Promise.all(ids.map(async (id) => (await getTransfer(t, c, id)).status as string));

  test('the setups of a batch commit together; unknown and repeated ids are answered too', async () => {
    const ids = await pendingTransfers(3);
    const batch = [...ids, randomUUID(), ids[1]!];
    assert.deepEqual(await t.server.services.engine.stepAll(batch), batch.map(() => null));
    assert.deepEqual(await statuses(ids), ['READY_TO_FUND', 'READY_TO_FUND', 'READY_TO_FUND']);
    for (const id of ids) await assertHistoryConsistent(t, await getTransfer(t, c, id));
    const { rows } = await sql<{ transactions: number }>`
      select count(distinct xmin::text)::int as transactions from transfers where id in (${sql.join(ids)})`.execute(t.server.db.kysely);
    assert.equal(rows[0]!.transactions, 1, 'the three setups were written by one transaction');
  });

  const waitingSetupJobs = async () =>
    (await sql<{ n: number }>`select count(*)::int as n from pgboss.job where name = 'transfers.setup' and state = 'created'`.execute(t.server.db.kysely)).rows[0]!.n;

  test('creations ask for one setup job between them; the sweep asks again for transfers left waiting', async () => {
    await sql`delete from pgboss.job where name = 'transfers.setup'`.execute(t.server.db.kysely);
    const options = [];
    for (let i = 0; i < 3; i++) options.push((await quoteOption(t, c, `${400 + i}.00`)).optionId);
    const created = await Promise.all(options.map((optionId) => createTransfer(t, c, optionId)));
    for (const res of created) assert.equal(res.status, 201, res.text);
    // The request is sent shortly after the creations commit; nothing works it in this process.
    const deadline = Date.now() + 10_000;
    while ((await waitingSetupJobs()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    assert.equal(await waitingSetupJobs(), 1);

    // A process that died before sending leaves its transfers waiting: the sweep queues the job.
    await sql`delete from pgboss.job where name = 'transfers.setup'`.execute(t.server.db.kysely);
    await t.server.services.engine.sweep();
    assert.equal(await waitingSetupJobs(), 1);
    await t.server.services.engine.setUpPending();
    assert.deepEqual(await statuses(created.map((res) => res.body.id as string)), ['READY_TO_FUND', 'READY_TO_FUND', 'READY_TO_FUND']);
  });

  test('the setup job prepares every transfer waiting, and fails (to run again) while one cannot be prepared', async () => {
    const ids = await pendingTransfers(3);
    const db = t.server.db.kysely;
    const { rows } = await sql<{ provider_id: string }>`select provider_id from transfer_legs where transfer_id = ${ids[1]!} and kind = 'COLLECTION'`.execute(db);
    await sql`update transfer_legs set provider_id = 'sim-not-configured' where transfer_id = ${ids[1]!} and kind = 'COLLECTION'`.execute(db);
    await assert.rejects(t.server.services.engine.setUpPending(), /1 transfer\(s\) could not be prepared: .*sim-not-configured/);
    assert.deepEqual(await statuses(ids), ['READY_TO_FUND', 'PENDING_SETUP', 'READY_TO_FUND']);
    await sql`update transfer_legs set provider_id = ${rows[0]!.provider_id} where transfer_id = ${ids[1]!} and kind = 'COLLECTION'`.execute(db);
    await t.server.services.engine.setUpPending();
    assert.deepEqual(await statuses(ids), ['READY_TO_FUND', 'READY_TO_FUND', 'READY_TO_FUND']);
    await assertHistoryConsistent(t, await getTransfer(t, c, ids[1]!));
  });

  test('a transfer whose provider refuses the hand-off fails alone; the rest are prepared', async () => {
    const ids = await pendingTransfers(3);
    await sql`update transfer_legs set provider_id = 'sim-not-configured' where transfer_id = ${ids[0]!} and kind = 'COLLECTION'`.execute(t.server.db.kysely);
    const outcomes = await t.server.services.engine.stepAll(ids);
    assert.match(outcomes[0]?.message ?? '', /sim-not-configured/);
    assert.deepEqual(outcomes.slice(1), [null, null]);
    assert.deepEqual(await statuses(ids), ['PENDING_SETUP', 'READY_TO_FUND', 'READY_TO_FUND']);
  });

  test('when the shared transaction fails, each transfer is prepared on its own and only the bad one fails', async () => {
    const ids = await pendingTransfers(3);
    const db = t.server.db.kysely;
    // The database refuses any timeline item of one transfer, which fails the shared transaction.
    await sql`create function refuse_timeline() returns trigger language plpgsql as $$
      begin raise exception 'timeline refused for %', new.transfer_id; end $$`.execute(db);
    await sql`create trigger refuse_timeline before insert on transfer_events for each row
      when (new.transfer_id = ${sql.lit(ids[1]!)}::uuid) execute function refuse_timeline()`.execute(db);
    try {
      const outcomes = await t.server.services.engine.stepAll(ids);
      assert.equal(outcomes[0], null);
      assert.match(outcomes[1]?.message ?? '', /timeline refused/);
      assert.equal(outcomes[2], null);
      assert.deepEqual(await statuses(ids), ['READY_TO_FUND', 'PENDING_SETUP', 'READY_TO_FUND']);
      for (const id of [ids[0]!, ids[2]!]) await assertHistoryConsistent(t, await getTransfer(t, c, id));
    } finally {
      await sql`drop trigger refuse_timeline on transfer_events`.execute(db);
      await sql`drop function refuse_timeline()`.execute(db);
    }
    // Nothing half-done was left behind: the refused transfer is prepared on its next step.
    assert.deepEqual(await t.server.services.engine.stepAll([ids[1]!]), [null]);
    await assertHistoryConsistent(t, await getTransfer(t, c, ids[1]!));
  });

  test('a batched write that matches fewer rows than it changes fails whole: a leg of another transfer is not written', async () => {
    const [id] = await pendingTransfers(1);
    const repo = t.server.services.transfers.repository;
    const row = (await repo.find(id!))!;
    const [leg] = await repo.legs(id!);
    const now = new Date();
    const write = (legTransferId: string) =>
      t.server.db.kysely.transaction().execute((trx) =>
        repo.writeChanges(trx, {
          items: [],
          legs: [{ ...leg!, transfer_id: legTransferId, status: 'PROCESSING', updated_at: now }],
          transfers: [{ ...row, version: row.version + 1, updated_at: now }],
        }),
      );
    await assert.rejects(write(randomUUID()), /matched 1 and 0/);
    assert.equal((await repo.find(id!))!.version, row.version, 'the transfer was not changed either');
    assert.equal((await repo.legs(id!))[0]!.status, 'PENDING');
    // The same write with the leg's own transfer goes through.
    await write(id!);
    assert.equal((await repo.find(id!))!.version, row.version + 1);
  });

  test('a setup made from the rows a creation wrote is written whole, or not at all once the transfer has moved on', async () => {
    const [moved, kept] = await pendingTransfers(2);
    const rows = await t.server.services.transfers.repository.findManyWithLegs([moved!, kept!]);
    const setupOf = (id: string) => {
      const { legs, ...locked } = rows.find((r) => r.id === id)!;
      return { locked, legs, handed: null };
    };
    // Another change got there first: the version the setup was made from is gone.
    await t.server.db.kysely.updateTable('transfers').set({ version: sql`version + 1` }).where('id', '=', moved!).execute();
    await assert.rejects(t.server.services.transfers.completeCreatedSetups([setupOf(kept!), setupOf(moved!)]), (err) => isGuardRefusal(err));
    assert.deepEqual(await statuses([moved!, kept!]), ['PENDING_SETUP', 'PENDING_SETUP'], 'neither setup was written');
    const timeline = async (id: string) => (await getTransfer(t, c, id)).timeline.length;
    assert.deepEqual([await timeline(moved!), await timeline(kept!)], [1, 1]);

    assert.equal(await t.server.services.transfers.completeCreatedSetups([setupOf(kept!)]), true);
    const ready = await getTransfer(t, c, kept!);
    assert.equal(ready.status, 'READY_TO_FUND');
    assert.equal(ready.version, 2);
    await assertHistoryConsistent(t, ready);
    const events = await sql<{ n: number }>`select count(*)::int as n from events where data->>'transferId' = ${kept!} and data->>'status' = 'READY_TO_FUND'`.execute(t.server.db.kysely);
    assert.equal(events.rows[0]!.n, 1, 'the status event is written with the change');
  });
});
