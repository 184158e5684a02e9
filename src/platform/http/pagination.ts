// Keyset pagination: the cursor names the last row seen by (createdAt, id), so pages stay stable
// while rows are added, and no OFFSET scan grows with the page number.
import { ApiError } from './errors.ts';

export interface Cursor {
  createdAt: string;
  id: string;
}

export function encodeCursor(row: { createdAt: Date | string; id: string }): string {
  const createdAt = typeof row.createdAt === 'string' ? row.createdAt : row.createdAt.toISOString();
  return Buffer.from(JSON.stringify([createdAt, row.id])).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): Cursor | null {
  if (!cursor) return null;
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && typeof parsed[1] === 'string' && !Number.isNaN(Date.parse(parsed[0])) && /^[0-9a-f-]{36}$/i.test(parsed[1])) {
      return { createdAt: parsed[0], id: parsed[1] };
    }
  } catch {
    // fall through
  }
  throw new ApiError(400, 'invalid_cursor', 'The cursor is not one this API issued');
}

/** Given limit+1 fetched rows, returns the page and the cursor for the next one. */
export function pageOf<T extends { createdAt: Date | string; id: string }>(rows: T[], limit: number): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { page, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}
