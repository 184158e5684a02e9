/** ISO 8601 UTC with milliseconds, the one timestamp format of the API. */
export const iso = (d: Date | string): string => (typeof d === 'string' ? new Date(d) : d).toISOString();
export const isoOrNull = (d: Date | string | null | undefined): string | null => (d == null ? null : iso(d));
