// Which rows make one quote + transfer creation, as Corridor wrote them: the template both floors
// of the transfers benchmark copy (bench/stack-floor.ts through its server, bench/database-floor.ts
// through pgbench), so that they write the same rows.

/** Runs one parameterized query and answers its rows. */
export type Query = <R>(text: string, values?: unknown[]) => Promise<R[]>;

export interface CreationTemplate {
  organizationId: string;
  /** The lookup id of a live API key of that organization, so its entity and destination are its own. */
  apiKeyLookupId: string;
  quoteId: string;
  /** The quote's options, by rank; the first is the one the transfer took. */
  optionIds: string[];
  transferId: string;
  /** The transfer's legs, by position. */
  legIds: string[];
  /** The transfer's first timeline item (its creation). */
  timelineItemId: string;
  /** The creation's event (it shares the timeline item's id), or another event where it has none. */
  eventId: string;
}

/** The first transfer created on the database and the rows that came with it. */
export async function creationTemplate(query: Query): Promise<CreationTemplate> {
  const [transfer] = await query<{ id: string; quote_id: string; organization_id: string }>('select id, quote_id, organization_id from transfers order by created_at limit 1');
  if (!transfer) throw new Error('the floors copy a transfer: create one first');
  const [key] = await query<{ lookup_id: string }>('select lookup_id from api_keys where organization_id = $1 and revoked_at is null limit 1', [transfer.organization_id]);
  if (!key) throw new Error(`organization ${transfer.organization_id} has no live API key`);
  const ids = async (text: string, value: string) => (await query<{ id: string }>(text, [value])).map((r) => r.id);
  const [timelineItemId] = await ids('select id from transfer_events where transfer_id = $1 order by sequence limit 1', transfer.id);
  if (!timelineItemId) throw new Error(`transfer ${transfer.id} has no timeline`);
  const [ownEvent] = await ids('select id from events where id = $1', timelineItemId);
  const eventId = ownEvent ?? (await query<{ id: string }>('select id from events limit 1'))[0]?.id;
  if (!eventId) throw new Error('the floors copy an event: there is none');
  return {
    organizationId: transfer.organization_id,
    apiKeyLookupId: key.lookup_id,
    quoteId: transfer.quote_id,
    optionIds: await ids('select id from quote_options where quote_id = $1 order by rank', transfer.quote_id),
    transferId: transfer.id,
    legIds: await ids('select id from transfer_legs where transfer_id = $1 order by position', transfer.id),
    timelineItemId,
    eventId,
  };
}

/** Columns a copy writes: those without a default (serials, transaction ids, timestamps are the database's). */
export async function writableColumns(query: Query, table: string): Promise<{ names: string[]; json: Set<string> }> {
  const rows = await query<{ column_name: string; data_type: string }>(
    `select column_name, data_type from information_schema.columns
     where table_schema = 'public' and table_name = $1 and column_default is null and is_generated = 'NEVER' order by ordinal_position`,
    [table],
  );
  return { names: rows.map((r) => r.column_name), json: new Set(rows.filter((r) => r.data_type === 'json' || r.data_type === 'jsonb').map((r) => r.column_name)) };
}
