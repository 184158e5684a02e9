// Proof-of-payment files on disk. An upload is streamed to a temporary file while it is hashed
// and measured, and its type is decided by its first bytes, never by the client's Content-Type
// or file name. Nothing is ever held in memory whole: a file over the limit is cut off at the
// limit and its partial copy removed.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import type { Readable, TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** SPEC.md Limits: up to 10 MB. */
export const PROOF_MAX_BYTES = 10 * 1024 * 1024;

export const PROOF_CONTENT_TYPES = ['application/pdf', 'image/jpeg', 'image/png'] as const;
export type ProofContentType = (typeof PROOF_CONTENT_TYPES)[number];

const SIGNATURES: Array<{ type: ProofContentType; bytes: Buffer; extension: string }> = [
  { type: 'application/pdf', bytes: Buffer.from('%PDF-', 'latin1'), extension: 'pdf' },
  { type: 'image/jpeg', bytes: Buffer.from([0xff, 0xd8, 0xff]), extension: 'jpg' },
  { type: 'image/png', bytes: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), extension: 'png' },
];
const SNIFF_BYTES = Math.max(...SIGNATURES.map((s) => s.bytes.length));

/** The type a file's first bytes announce, or null when it is none of the accepted ones. */
export function sniffProofType(head: Buffer): ProofContentType | null {
  return SIGNATURES.find((s) => head.length >= s.bytes.length && head.subarray(0, s.bytes.length).equals(s.bytes))?.type ?? null;
}

export const extensionOf = (type: ProofContentType): string => SIGNATURES.find((s) => s.type === type)!.extension;

/** The file itself is not acceptable. */
export class ProofRejected extends Error {}
export class ProofTooLarge extends ProofRejected {}
export class UnsupportedProofType extends ProofRejected {}
export class EmptyProof extends ProofRejected {}
/** The upload itself broke off (malformed multipart, client gone) before the file ended. */
export class UploadInterrupted extends Error {}

export interface ReceivedProof {
  /** Absolute path of the temporary copy; keep() or discard() it. */
  tempPath: string;
  contentType: ProofContentType;
  sizeBytes: number;
  sha256: string;
}

/** Counts, hashes and sniffs bytes as they pass; fails the stream at the limit or on a bad type. */
class ProofInspector extends Transform {
  readonly #maxBytes: number;
  readonly #hash = createHash('sha256');
  #head = Buffer.alloc(0);
  size = 0;
  type: ProofContentType | null = null;

  constructor(maxBytes: number) {
    super();
    this.#maxBytes = maxBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.#maxBytes) return callback(new ProofTooLarge());
    if (this.type === null && this.#head.length < SNIFF_BYTES) {
      this.#head = Buffer.concat([this.#head, chunk.subarray(0, SNIFF_BYTES - this.#head.length)]);
      // Decide as soon as enough bytes arrived, so a wrong file is refused without reading it all.
      if (this.#head.length >= SNIFF_BYTES && !this.#decide()) return callback(new UnsupportedProofType());
    }
    this.#hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.size === 0) return callback(new EmptyProof());
    if (this.type === null && !this.#decide()) return callback(new UnsupportedProofType());
    callback();
  }

  #decide(): boolean {
    this.type = sniffProofType(this.#head);
    return this.type !== null;
  }

  digest(): string {
    return this.#hash.digest('hex');
  }
}

export class ProofFileStore {
  readonly #dir: string;
  readonly #incoming: string;
  readonly #dataDir: string;

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
    this.#dir = path.join(dataDir, 'funding-proofs');
    this.#incoming = path.join(this.#dir, '.incoming');
  }

  get directory(): string {
    return this.#dir;
  }

  /**
   * Streams an upload to a temporary file. `truncated` is the multipart parser's signal that the
   * sender went past the limit: the parser stops handing over bytes at the limit, so this store
   * never sees more than maxBytes either way.
   */
  async receive(source: Readable, maxBytes = PROOF_MAX_BYTES): Promise<ReceivedProof> {
    await fs.promises.mkdir(this.#incoming, { recursive: true });
    const tempPath = path.join(this.#incoming, `${randomUUID()}.part`);
    const inspector = new ProofInspector(maxBytes);
    const onLimit = () => inspector.destroy(new ProofTooLarge());
    let sourceError: unknown = null;
    const onSourceError = (err: unknown) => {
      sourceError ??= err;
    };
    source.once('limit', onLimit);
    source.on('error', onSourceError);
    try {
      await pipeline(source, inspector, fs.createWriteStream(tempPath, { flags: 'wx' }));
      if ((source as Readable & { truncated?: boolean }).truncated) throw new ProofTooLarge();
    } catch (err) {
      await this.discard(tempPath);
      // The pipeline hands our own rejection back to the source too; only a source's own error
      // means the upload broke off.
      if (!(err instanceof ProofRejected) && err === sourceError) throw new UploadInterrupted((err as Error).message ?? 'upload interrupted', { cause: err });
      throw err;
    } finally {
      source.off('limit', onLimit);
      source.off('error', onSourceError);
    }
    return { tempPath, contentType: inspector.type!, sizeBytes: inspector.size, sha256: inspector.digest() };
  }

  /** Moves a received file to its permanent name; returns the path relative to the data dir. */
  async keep(received: ReceivedProof, id: string): Promise<string> {
    const finalPath = path.join(this.#dir, `${id}.${extensionOf(received.contentType)}`);
    await fs.promises.rename(received.tempPath, finalPath);
    return path.relative(this.#dataDir, finalPath);
  }

  async remove(relativePath: string): Promise<void> {
    await fs.promises.rm(path.join(this.#dataDir, relativePath), { force: true });
  }

  async discard(tempPath: string): Promise<void> {
    await fs.promises.rm(tempPath, { force: true });
  }
}
