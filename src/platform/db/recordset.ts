// Many rows as one statement parameter. A batch of writes sends its rows as a single JSON array
// (encodeRows) that PostgreSQL unpacks with json_to_recordset: the statement's text is the same
// for one row or fifty (one prepared statement, which can be built once: statement.ts), and each
// value is encoded once, by JSON.stringify, instead of once per row and column as bind
// parameters (jsonb values would be quoted twice).
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

/**
 * The rows as the one JSON parameter recordset() and insertRows() read: the columns' values as
 * JSON encodes them (fields that are not columns are left out), JsonText documents spliced in as
 * they are.
 */
export function encodeRows(rows: readonly object[], columns: Columns): string {
  const names = Object.keys(columns);
  let out = '[';
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>;
    const plain: Record<string, unknown> = {};
    let spliced = '';
    for (const name of names) {
      const value = row[name];
      if (value instanceof JsonText) spliced += `,"${name}":${value.text}`;
      else if (value !== undefined) plain[name] = value;
    }
    const json = JSON.stringify(plain);
    out += (i ? ',' : '') + (spliced ? (json === '{}' ? `{${spliced.slice(1)}}` : `${json.slice(0, -1)}${spliced}}`) : json);
  }
  return `${out}]`;
}

/**
 * `json_to_recordset($n::json) as alias(column type, …)`: a FROM item with one row per object
 * of `rows`, the parameter encodeRows() made (or, in a statement built once, the value standing
 * for it). A jsonb column takes the value as it is (object, array, string); a numeric or
 * timestamptz column takes it from its string form, so money stays a decimal string and never
 * passes through a float.
 */
export function recordset(rows: unknown, columns: Columns, alias: string): RawBuilder<unknown> {
  if (!IDENTIFIER.test(alias)) throw new Error(`not an alias: ${alias}`);
  return sql`json_to_recordset(${rows}::json) as ${sql.raw(alias)}(${sql.raw(definition(columns))})`;
}

/** `insert into table (columns) select columns from json_to_recordset(rows)`: every row in one statement. */
export function insertRows(table: string, rows: unknown, columns: Columns): RawBuilder<unknown> {
  if (!IDENTIFIER.test(table)) throw new Error(`not a table: ${table}`);
  const names = Object.keys(columns).join(', ');
  return sql`insert into ${sql.raw(table)} (${sql.raw(names)}) select ${sql.raw(names)} from ${recordset(rows, columns, 'r')}`;
}

/**
 * A part of a statement that another domain owns (its rows, written by the same statement as the
 * change they belong to): the rows, encoded for this run, and the SQL that writes them, built
 * around the value standing for the rows so that the statement can be built once (statement.ts).
 * `name` tells the parts apart: a statement is built once per set of part names.
 */
export interface StatementPart {
  name: string;
  rows: string;
  sql: (rows: unknown) => RawBuilder<unknown>;
}
