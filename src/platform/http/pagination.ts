// Keyset pagination: the cursor names the last row seen by (createdAt, id), so pages stay stable
// while rows are added, and no OFFSET scan grows with the page number.
import { ApiError } from './errors.ts';
import { isUuid } from '../ids.ts';

export interface Cursor {
  createdAt: string;
  id: string;
}

export function encodeCursor(row: { createdAt: Date | string; id: string }): string {
  const createdAt = typeof row.createdAt === 'string' ? row.createdAt : row.createdAt.toISOString();
  return Buffer.from(JSON.stringify([createdAt, row.id])).toString('base64url');
}

const invalidCursor = () => new ApiError(400, 'invalid_cursor', 'The cursor is not one this API issued');

function parseCursor(cursor: string): unknown {
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Exactly what encodeCursor writes: toISOString of a year 0001 to 9999, which the database reads back. */
const isIssuedTimestamp = (text: string) => /^\d{4}-/.test(text) && !text.startsWith('0000-') && Number.isFinite(Date.parse(text)) && new Date(text).toISOString() === text;

export function decodeCursor(cursor: string | undefined): Cursor | null {
  if (!cursor) return null;
  const parsed = parseCursor(cursor);
  // Checked as strictly as the database will read them: a forged cursor that got past a looser
  // check reached PostgreSQL as an unreadable timestamp or uuid and answered 500.
  if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && typeof parsed[1] === 'string' && isIssuedTimestamp(parsed[0]) && isUuid(parsed[1])) {
    return { createdAt: parsed[0], id: parsed[1] };
  }
  throw invalidCursor();
}

/**
 * For lists ordered by one key of their own rather than (createdAt, id), such as a version number
 * or a configured provider id: the cursor holds the last key seen under `name`.
 */
export function encodeKeyCursor(name: string, key: string | number): string {
  return Buffer.from(JSON.stringify({ [name]: key })).toString('base64url');
}

/** The key an encodeKeyCursor cursor holds, when `accept` takes it; 400 invalid_cursor otherwise. */
export function decodeKeyCursor<K extends string | number>(cursor: string, name: string, accept: (key: unknown) => key is K): K {
  const parsed = parseCursor(cursor);
  const key = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>)[name] : undefined;
  if (accept(key)) return key;
  throw invalidCursor();
}

/** Given limit+1 fetched rows, returns the page and the cursor for the next one. */
export function pageOf<T extends { createdAt: Date | string; id: string }>(rows: T[], limit: number): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { page, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}
