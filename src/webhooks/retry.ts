// When a failed delivery is tried again (DECISIONS.md §10: the first retry within 10 seconds,
// later ones backing off over about three days).
//
// Retry n (1-based) waits min(5 s × 4^(n-1), 12 h), spread by ±20 % jitter so that deliveries that
// failed together (an endpoint outage) do not all come back in the same second:
//   5 s, 20 s, 80 s, 5.3 min, 21 min, 85 min, 5.7 h, then 12 h six times.
// That is 13 retries (14 attempts) over about 3.3 days.

export const FIRST_RETRY_SECONDS = 5;
export const BACKOFF_FACTOR = 4;
export const MAX_BACKOFF_SECONDS = 12 * 3600;
export const RETRY_LIMIT = 13;
export const JITTER = 0.2;
/** A receiver's Retry-After can push a retry later, but never further than this. */
export const MAX_RETRY_AFTER_SECONDS = 12 * 3600;
/**
 * DECISIONS.md §10 promises the first retry within 10 seconds, so on the first retry a
 * Retry-After is honoured only up to here; from the second on, up to MAX_RETRY_AFTER_SECONDS.
 */
export const FIRST_RETRY_DEADLINE_SECONDS = 10;

/** The nominal wait before retry n (1-based), without jitter. */
export function backoffSeconds(retry: number): number {
  return Math.min(FIRST_RETRY_SECONDS * BACKOFF_FACTOR ** (retry - 1), MAX_BACKOFF_SECONDS);
}

/**
 * Seconds asked for by a Retry-After header (delta-seconds or an HTTP date), or null when the
 * header is absent or unreadable.
 */
export function parseRetryAfter(header: string | null | undefined, now: Date): number | null {
  if (!header) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

/**
 * Milliseconds to wait before retry n. `scale` shrinks the backoff (tests only); Retry-After is
 * honoured as asked, up to FIRST_RETRY_DEADLINE_SECONDS on the first retry and
 * MAX_RETRY_AFTER_SECONDS on later ones, and never shortens the backoff.
 */
export function retryDelayMs(retry: number, options: { retryAfter?: string | null; now: Date; scale?: number; random?: () => number }): number {
  const random = options.random ?? Math.random;
  const jitter = 1 - JITTER + 2 * JITTER * random();
  const backoff = backoffSeconds(retry) * 1000 * jitter * (options.scale ?? 1);
  const asked = parseRetryAfter(options.retryAfter, options.now);
  const ceiling = retry === 1 ? FIRST_RETRY_DEADLINE_SECONDS : MAX_RETRY_AFTER_SECONDS;
  const honoured = asked === null ? 0 : Math.min(asked, ceiling) * 1000;
  return Math.round(Math.max(backoff, honoured));
}
