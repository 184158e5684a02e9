// Many rows as one statement parameter. A batch of writes sends its rows as a single JSON array
// that PostgreSQL unpacks with json_to_recordset: the statement's text is the same for one row or
// fifty (one prepared statement), and each value is encoded once, by JSON.stringify, instead of
// once per row and column as bind parameters (jsonb values would be quoted twice).
import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';

/** Column name → PostgreSQL type, in the order the rows are read. */
export type Columns = Readonly<Record<string, string>>;

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function definition(columns: Columns): string {
  return Object.entries(columns)
    .map(([name, type]) => {
      if (!IDENTIFIER.test(name) || !/^[a-z0-9_ ()[\]]+$/.test(type)) throw new Error(`not a column definition: ${name} ${type}`);
      return `${name} ${type}`;
    })
    .join(', ');
}

/**
 * A JSON document that is already text (a stored response, say): written into the rows as it
 * is, not quoted as a string and not parsed and encoded again. It must be JSON this process made.
 * A json or jsonb column takes it as the document; a text column takes its text unchanged.
 */
export class JsonText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

function encode(rows: readonly object[], columns: Columns): string {
  const documents = Object.keys(columns).filter((name) => columns[name] === 'json' || columns[name] === 'jsonb' || columns[name] === 'text');
  if (!rows.some((row) => documents.some((name) => (row as Record<string, unknown>)[name] instanceof JsonText))) return JSON.stringify(rows);
  return `[${rows
    .map((row) => {
      const plain: Record<string, unknown> = { ...row };
      let spliced = '';
      for (const name of documents) {
        const value = plain[name];
        if (!(value instanceof JsonText)) continue;
        delete plain[name];
        spliced += `,"${name}":${value.text}`;
      }
      const json = JSON.stringify(plain);
      return spliced ? (json === '{}' ? `{${spliced.slice(1)}}` : `${json.slice(0, -1)}${spliced}}`) : json;
    })
    .join(',')}]`;
}

/**
 * `json_to_recordset($n::json) as alias(column type, …)`: a FROM item with one row per object.
 * A jsonb column takes the value as it is (object, array, string); a numeric or timestamptz column
 * takes it from its string form, so money stays a decimal string and never passes through a float.
 */
export function recordset(rows: readonly object[], columns: Columns, alias: string): RawBuilder<unknown> {
  if (!IDENTIFIER.test(alias)) throw new Error(`not an alias: ${alias}`);
  return sql`json_to_recordset(${encode(rows, columns)}::json) as ${sql.raw(alias)}(${sql.raw(definition(columns))})`;
}

/** `insert into table (columns) select columns from json_to_recordset(...)`: every row in one statement. */
export function insertRows(table: string, rows: readonly object[], columns: Columns): RawBuilder<unknown> {
  if (!IDENTIFIER.test(table)) throw new Error(`not a table: ${table}`);
  const names = Object.keys(columns).join(', ');
  return sql`insert into ${sql.raw(table)} (${sql.raw(names)}) select ${sql.raw(names)} from ${recordset(rows, columns, 'r')}`;
}
