/** ISO 8601 UTC with milliseconds, the one timestamp format of the API. */
export const iso = (d: Date | string): string => (typeof d === 'string' ? new Date(d) : d).toISOString();
export const isoOrNull = (d: Date | string | null | undefined): string | null => (d == null ? null : iso(d));

/**
 * The first whole millisecond at or after an ISO 8601 instant. Stored timestamps have millisecond
 * precision, so a half-open window [from, to) given with finer fractions selects exactly the same
 * rows as [ceil(from), ceil(to)); Date.parse alone truncates, which would take in a row just
 * before `from` and leave out one just before `to`.
 */
export function ceilToMillisecond(text: string): Date {
  const truncated = Date.parse(text);
  const beyondMillis = /T\d\d:\d\d:\d\d\.\d{3}(\d+)/.exec(text)?.[1];
  return new Date(beyondMillis && /[1-9]/.test(beyondMillis) ? truncated + 1 : truncated);
}
