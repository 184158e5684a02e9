// Ids are UUIDs in the canonical 8-4-4-4-12 form, the only form PostgreSQL's uuid type and every
// route accept. Checking before a lookup turns a malformed id into the caller's 404 (or 422/400)
// instead of a database error.
import { randomUUID } from 'node:crypto';

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (text: string): boolean => UUID_PATTERN.test(text);

/**
 * A new row id: a UUIDv7 (RFC 9562), whose first 48 bits are the Unix time in milliseconds and
 * whose other 74 free bits are random. Ids made one after another sort together, so a table's
 * B-tree indexes on them grow at their right edge instead of at random pages: a busy table's
 * inserts touch a few hot pages rather than one cold page each (and, after each checkpoint, copy
 * far fewer whole pages into the write-ahead log). The time in an id is not a secret; nothing
 * about it is guessable beyond the millisecond.
 */
export function newId(now = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  const random = randomUUID();
  // randomUUID: xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx (V the variant); keep its random bits after the time.
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15, 18)}-${random.slice(19)}`;
}
