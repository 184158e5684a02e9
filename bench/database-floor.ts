// The database floor: a quote + transfer creation as SQL alone, run by pgbench itself. It is the
// stack floor's "one statement per write" shape (bench/stack-floor.ts) with pgbench's C client in
// place of HTTPS, Fastify, Kysely and node-postgres: the two API key reads and the two writes of
// copies of a real creation's rows (quote and options; idempotency record, option taken,
// transfer, legs, first timeline item, event), each value sent as a bind parameter of a prepared
// statement as node-postgres sends Corridor's. What it reaches is what PostgreSQL allows for
// these rows on this machine before any server, on any stack, does anything at all.
import pg from 'pg';
import { creationTemplate, writableColumns } from './creation-template.ts';
import type { Query } from './creation-template.ts';

type Row = Record<string, string | null>;

/**
 * pgbench reads ":name" as a variable anywhere in a command, string literals included, so colons
 * (in JSON, timestamps) are written as the escape \x3a, which PostgreSQL reads back as a colon.
 */
export function pgbenchLiteral(value: string): string {
  return `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''").replace(/:/g, '\\x3a')}'`;
}

/**
 * The pgbench script (for `pgbench -M prepared -D loaded=0 -f`) of one creation, copied from the
 * rows the stack floor copies too (bench/creation-template.ts). Each client loads the
 * copied values into its variables once, with \gset; every creation then sends them as
 * parameters and makes new ids from a random number, as md5-derived UUIDs.
 */
export async function creationScript(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const query: Query = async <R>(text: string, values: unknown[] = []) => (await client.query(text, values)).rows as R[];
    const variables: Array<[string, string]> = [];
    // One row's writable columns: new ids where given, the copied value (as a variable) elsewhere.
    const copy = async (table: string, prefix: string, column: string, value: string, ids: Record<string, string>) => {
      const { names } = await writableColumns(query, table);
      const [row] = await query<Row>(`select ${names.map((n) => `${n}::text`).join(', ')} from ${table} where ${column} = $1 limit 1`, [value]);
      if (!row) throw new Error(`no ${table} row to copy (${column} = ${value})`);
      const exprs = names.map((n) => {
        if (ids[n]) return ids[n];
        // \gset stores a null as an empty string, so nulls stay literal.
        if (row[n] === null) return 'NULL';
        variables.push([`${prefix}_${n}`, row[n]!]);
        return `:${prefix}_${n}`;
      });
      return { names, values: `(${exprs.join(', ')})` };
    };
    const newId = (tag: string) => `md5(:n::text || '${tag}')::uuid`;

    const copied = await creationTemplate(query);
    variables.push(['key', copied.apiKeyLookupId]);
    const quote = await copy('quotes', 'q', 'id', copied.quoteId, { id: newId('q') });
    const options = [];
    for (const [i, id] of copied.optionIds.entries()) options.push(await copy('quote_options', `o${i}`, 'id', id, { id: newId(`o${i}`), quote_id: newId('q') }));
    const idempotency = await copy('idempotency_records', 'k', 'operation', 'POST /v1/transfers', {
      idempotency_key: ':n::text',
      state: "'COMPLETED'",
      response_body: `jsonb_build_object('id', ${newId('t')}, 'status', 'PENDING_SETUP')`,
    });
    const transfer = await copy('transfers', 't', 'id', copied.transferId, { id: newId('t'), quote_id: newId('q'), quote_option_id: newId('o0') });
    const legs = [];
    for (const [i, id] of copied.legIds.entries()) legs.push(await copy('transfer_legs', `l${i}`, 'id', id, { id: newId(`l${i}`), transfer_id: newId('t') }));
    const item = await copy('transfer_events', 'e', 'id', copied.timelineItemId, { id: newId('e'), transfer_id: newId('t') });
    const event = await copy('events', 'v', 'id', copied.eventId, { id: newId('v') });

    const insert = (table: string, rows: Array<{ names: string[]; values: string }>) => `insert into ${table} (${rows[0]!.names.join(', ')}) values ${rows.map((r) => r.values).join(', ')}`;
    const authenticate =
      "select api_keys.id, api_keys.organization_id, api_keys.secret_hash, api_keys.revoked_at, array_to_string(api_keys.scopes, ' ') as scopes " +
      'from api_keys inner join organizations on organizations.id = api_keys.organization_id where api_keys.lookup_id = :key;';
    return [
      '\\if :loaded = 0',
      `select ${variables.map(([name, value]) => `${pgbenchLiteral(value)} as ${name}`).join(', ')} \\gset`,
      '\\set loaded 1',
      '\\endif',
      '\\set n random(1, 9223372036854775806)',
      authenticate,
      `with new_quote as (${insert('quotes', [quote])} returning id) ${insert('quote_options', options)} returning *;`,
      authenticate,
      `with stored as (${insert('idempotency_records', [idempotency])} returning idempotency_key), ` +
        `taken as (update quote_options set status = 'USED' where id = ${newId('o0')} and status = 'OPEN' returning id), ` +
        `new_transfer as (${insert('transfers', [transfer])} returning id), ` +
        `new_legs as (${insert('transfer_legs', legs)} returning id), ` +
        `timeline_item as (${insert('transfer_events', [item])} returning id) ` +
        `${insert('events', [event])};`,
      '',
    ].join('\n');
  } finally {
    await client.end();
  }
}
