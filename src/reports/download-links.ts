// Signed download links for artifacts in the local store: HMAC-SHA256 over the report id and the
// link's expiry, with a key kept in the database so every process on the same store agrees. The
// link is the credential, so it is short-lived (15 minutes) and carries nothing else.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';

export const DOWNLOAD_LINK_TTL_MS = 15 * 60 * 1000;

export type LinkVerdict = 'valid' | 'expired' | 'invalid';

export class DownloadLinkSigner {
  readonly #db: Kysely<any>;
  #key: Buffer | null = null;

  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  async #secret(): Promise<Buffer> {
    if (this.#key) return this.#key;
    // First use creates the key; a concurrent first use on another process keeps whichever won.
    await sql`INSERT INTO report_download_keys (id, secret) VALUES (1, ${randomBytes(32)}) ON CONFLICT (id) DO NOTHING`.execute(this.#db);
    const { rows } = await sql<{ secret: Uint8Array }>`SELECT secret FROM report_download_keys WHERE id = 1`.execute(this.#db);
    this.#key = Buffer.from(rows[0]!.secret);
    return this.#key;
  }

  async sign(reportId: string, expiresAtMs: number): Promise<string> {
    return createHmac('sha256', await this.#secret()).update(`report-download:v1:${reportId}:${expiresAtMs}`).digest('base64url');
  }

  async verify(reportId: string, expiresAtMs: number, signature: string, now: Date): Promise<LinkVerdict> {
    const expected = Buffer.from(await this.sign(reportId, expiresAtMs));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    return now.getTime() < expiresAtMs ? 'valid' : 'expired';
  }
}
