// A quote, then its transfer, made from what this process read moments before (platform/db/guard.ts):
// when a fact changed behind the process's back (another process, an operator, the database
// clock), the write that trusted it is refused by its guard and the request answers as a fresh
// read would. Each change below is made in the database directly, as another process would make
// it, so that this process's memory of the fact is stale.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { ACH, SEPA_DE, createTransfer, newCustomer, quoteOption } from './test-support.ts';
import type { Customer } from './test-support.ts';

describe('guarded writes: facts this process read lately are checked again by the write', () => {
  let t: TestServer;
  let c: Customer;

  before(async () => {
    t = await startTestServer();
    c = await newCustomer(t, 'Guards');
  });
  after(async () => {
    await t.close();
  });

  const setEntityStatus = (status: string) => t.server.db.kysely.updateTable('entities').set({ status }).where('id', '=', c.entityId).execute();
  const transfersOf = async (optionId: string) =>
    Number((await t.server.db.kysely.selectFrom('transfers').select(sql<string>`count(*)`.as('n')).where('quote_option_id', '=', optionId).executeTakeFirstOrThrow()).n);
  const quote = (amount: string) =>
    t.request('POST', '/v1/quotes', {
      apiKey: c.org.apiKey,
      body: { entityId: c.entityId, from: ACH, to: SEPA_DE, amount, fixedSide: 'FROM', destinationFiatAccountId: c.fiatAccountId },
    });

  test('an entity that stopped being ACTIVE after the quote: the transfer is 422 entity_not_onboarded and nothing is written', async () => {
    const { optionId } = await quoteOption(t, c, '100.00');
    await setEntityStatus('REJECTED');
    try {
      const refused = await createTransfer(t, c, optionId);
      assert.equal(refused.status, 422, refused.text);
      assert.equal(refused.body.code, 'entity_not_onboarded');
      assert.equal(await transfersOf(optionId), 0);
      // The next quote, whose entity and destination this process has just read, is refused too.
      const quoted = await quote('100.00');
      assert.equal(quoted.status, 422, quoted.text);
      assert.equal(quoted.body.code, 'entity_not_onboarded');
    } finally {
      await setEntityStatus('ACTIVE');
    }
    const created = await createTransfer(t, c, optionId);
    assert.equal(created.status, 201, created.text);
  });

  test('a destination given a new version after this process read it: the quote binds the new version, the older option is 409', async () => {
    const { optionId } = await quoteOption(t, c, '100.00');
    // Another process edits the account: a second version, now the current one.
    await sql`insert into destination_versions (destination_id, version, organization_id, relationship, rail, instructions, created_by_type, created_by_id, created_at)
              select destination_id, version + 1, organization_id, relationship, rail, instructions, created_by_type, created_by_id, now()
                from destination_versions where destination_id = ${c.fiatAccountId} and version = (select version from destinations where id = ${c.fiatAccountId})`.execute(t.server.db.kysely);
    await t.server.db.kysely.updateTable('destinations').set({ version: sql`version + 1` }).where('id', '=', c.fiatAccountId).execute();
    const current = Number((await t.server.db.kysely.selectFrom('destinations').select('version').where('id', '=', c.fiatAccountId).executeTakeFirstOrThrow()).version);

    const changed = await createTransfer(t, c, optionId);
    assert.equal(changed.status, 409, changed.text);
    assert.equal(changed.body.code, 'quote_destination_changed');
    assert.equal(await transfersOf(optionId), 0);

    const fresh = await quote('100.00');
    assert.equal(fresh.status, 201, fresh.text);
    const stored = await t.server.db.kysely.selectFrom('quotes').select('destination_version').where('id', '=', fresh.body.id).executeTakeFirstOrThrow();
    assert.equal(Number(stored.destination_version), current);
    const created = await createTransfer(t, c, fresh.body.options[0].id);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.destination.version, current);
  });

  test('an option expired by the database clock, though not yet by this process: 422 quote_expired', async () => {
    const { optionId } = await quoteOption(t, c, '100.00');
    await t.server.db.kysely.updateTable('quote_options').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', optionId).execute();
    const late = await createTransfer(t, c, optionId);
    assert.equal(late.status, 422, late.text);
    assert.equal(late.body.code, 'quote_expired');
    assert.equal(await transfersOf(optionId), 0);
  });

  test('a refused creation in a batch fails only itself: the others of the batch are created', async () => {
    const options = await Promise.all(['101.00', '102.00', '103.00', '104.00'].map(async (amount) => (await quoteOption(t, c, amount)).optionId));
    // One option expires behind the process's back; the four creations are sent together.
    await t.server.db.kysely.updateTable('quote_options').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', options[2]!).execute();
    const answers = await Promise.all(options.map((id) => createTransfer(t, c, id)));
    assert.deepEqual(
      answers.map((a) => a.status),
      [201, 201, 422, 201],
    );
    assert.deepEqual(await Promise.all(options.map(transfersOf)), [1, 1, 0, 1]);
  });
});
