// One HTTP attempt of one delivery: bounded in time, never following a redirect, reading at most
// 1 KB of the answer. In production every connection goes through the address checks.
import { Agent, request } from 'undici';
import { UnsafeAddressError, productionUrlProblem, safeLookup } from './address-safety.ts';
import type { Resolver } from './address-safety.ts';

export const RESPONSE_BODY_LIMIT_BYTES = 1024;

export interface AttemptOutcome {
  succeeded: boolean;
  statusCode: number | null;
  latencyMs: number;
  /** At most RESPONSE_BODY_LIMIT_BYTES of the response body, as text. */
  responseBody: string | null;
  error: string | null;
  /** The raw Retry-After header of a failed answer. */
  retryAfter: string | null;
}

export interface SenderOptions {
  timeoutMs: number;
  /** Production: refuse loopback, private, link-local and metadata addresses on every connection. */
  safeAddressesOnly: boolean;
  userAgent: string;
  resolver?: Resolver;
}

export class WebhookSender {
  readonly #agent: Agent;
  readonly #options: SenderOptions;

  constructor(options: SenderOptions) {
    this.#options = options;
    this.#agent = new Agent({
      allowH2: false,
      connections: 64,
      keepAliveTimeout: 4_000,
      connect: {
        timeout: options.timeoutMs,
        ...(options.safeAddressesOnly ? { lookup: safeLookup(options.resolver) } : {}),
      },
    });
  }

  async send(target: string, headers: Record<string, string>, body: string): Promise<AttemptOutcome> {
    const { timeoutMs } = this.#options;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failure = (error: string, statusCode: number | null = null): AttemptOutcome => ({ succeeded: false, statusCode, latencyMs: elapsed(), responseBody: null, error, retryAfter: null });

    const url = new URL(target);
    if (this.#options.safeAddressesOnly) {
      // Covers an IP address written into the URL, which never reaches the connect-time lookup.
      const problem = productionUrlProblem(url);
      if (problem) return failure(`address refused: ${problem}`);
    }

    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.#agent,
        headers: { 'content-type': 'application/json', 'user-agent': this.#options.userAgent, ...headers },
        body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= RESPONSE_BODY_LIMIT_BYTES) break;
      }
      const responseBody = Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT_BYTES).toString('utf8').replace(/\u0000/g, '');
      const statusCode = res.statusCode;
      const succeeded = statusCode >= 200 && statusCode < 300;
      const header = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
      };
      let error: string | null = null;
      if (statusCode >= 300 && statusCode < 400) error = `redirect not followed (${statusCode}${header('location') ? ` to ${header('location')}` : ''})`;
      else if (!succeeded) error = `the endpoint answered ${statusCode}`;
      return { succeeded, statusCode, latencyMs: elapsed(), responseBody, error, retryAfter: succeeded ? null : header('retry-after') };
    } catch (err) {
      // The abort signal and undici's own headers/body timers are set to the same limit, and
      // either can fire first: to the customer both mean the endpoint did not answer in time.
      if (signal.aborted || isUndiciTimeout(err)) return failure(`no response within ${timeoutMs} ms`);
      return failure(describeNetworkError(err));
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

function isUndiciTimeout(err: unknown): boolean {
  for (let e = err as (Error & { code?: string; cause?: unknown }) | undefined; e; e = e.cause as typeof e) {
    if (e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return true;
    if (!(e.cause instanceof Error)) break;
  }
  return false;
}

function describeNetworkError(err: unknown): string {
  let e = err as (Error & { code?: string; cause?: unknown }) | undefined;
  // undici wraps the socket error; the innermost one says what happened.
  while (e?.cause instanceof Error) e = e.cause;
  if (e instanceof UnsafeAddressError) return `address refused: ${e.message}`;
  if (e?.code === 'UND_ERR_CONNECT_TIMEOUT') return 'connection timed out';
  return `request failed: ${e?.code ? `${e.code} ` : ''}${e?.message ?? String(err)}`.trim();
}
