// The database floor: a quote + transfer creation as SQL alone, run by pgbench itself. It is the
// stack floor's "one statement per write" shape (bench/stack-floor.ts) with pgbench's C client in
// place of HTTPS, Fastify, Kysely and node-postgres: the two API key reads and the two writes of
// copies of a real creation's rows (quote and options; idempotency record, option taken,
// transfer, legs, first timeline item, event), each value sent as a bind parameter of a prepared
// statement as node-postgres sends Corridor's. What it reaches is what PostgreSQL allows for
// these rows on this machine before any server, on any stack, does anything at all.
import pg from 'pg';

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
 * first transfer on the database (the one the stack floor copies too). Each client loads the
 * copied values into its variables once, with \gset; every creation then sends them as
 * parameters and makes new ids from a random number, as md5-derived UUIDs.
 */
export async function creationScript(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const variables: Array<[string, string]> = [];
    const columnsOf = async (table: string) =>
      (await client.query<{ column_name: string }>(
        `select column_name from information_schema.columns
         where table_schema = 'public' and table_name = $1 and column_default is null and is_generated = 'NEVER' order by ordinal_position`,
        [table],
      )).rows.map((r) => r.column_name);
    // One row's writable columns: new ids where given, the copied value (as a variable) elsewhere.
    const copy = async (table: string, prefix: string, where: string, values: unknown[], ids: Record<string, string>) => {
      const names = await columnsOf(table);
      const row = (await client.query<Row>(`select ${names.map((n) => `${n}::text`).join(', ')} from ${table} where ${where} limit 1`, values)).rows[0];
      if (!row) throw new Error(`no ${table} row to copy (${where})`);
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

    const first = (await client.query<{ id: string; quote_id: string; organization_id: string }>('select id, quote_id, organization_id from transfers order by created_at limit 1')).rows[0];
    if (!first) throw new Error('the database floor copies a transfer: create one first');
    const key = (await client.query<{ lookup_id: string }>('select lookup_id from api_keys where organization_id = $1 and revoked_at is null limit 1', [first.organization_id])).rows[0]!;
    variables.push(['key', key.lookup_id]);

    const quote = await copy('quotes', 'q', 'id = $1', [first.quote_id], { id: newId('q') });
    const optionIds = (await client.query<{ id: string }>('select id from quote_options where quote_id = $1 order by rank', [first.quote_id])).rows;
    const options = [];
    for (const [i, o] of optionIds.entries()) options.push(await copy('quote_options', `o${i}`, 'id = $1', [o.id], { id: newId(`o${i}`), quote_id: newId('q') }));
    const idempotency = await copy('idempotency_records', 'k', "operation = 'POST /v1/transfers'", [], {
      idempotency_key: ':n::text',
      state: "'COMPLETED'",
      response_body: `jsonb_build_object('id', ${newId('t')}, 'status', 'PENDING_SETUP')`,
    });
    const transfer = await copy('transfers', 't', 'id = $1', [first.id], { id: newId('t'), quote_id: newId('q'), quote_option_id: newId('o0') });
    const legIds = (await client.query<{ id: string }>('select id from transfer_legs where transfer_id = $1 order by position', [first.id])).rows;
    const legs = [];
    for (const [i, l] of legIds.entries()) legs.push(await copy('transfer_legs', `l${i}`, 'id = $1', [l.id], { id: newId(`l${i}`), transfer_id: newId('t') }));
    const item = await copy('transfer_events', 'e', 'transfer_id = $1 order by sequence', [first.id], { id: newId('e'), transfer_id: newId('t') });
    const event = await copy('events', 'v', 'true', [], { id: newId('v') });

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
