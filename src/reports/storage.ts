// Where report artifacts live: a local folder (default) or an S3-compatible bucket. Generation
// always streams into a spool file first, hashing as it goes; commit then moves it into place
// (rename, or one PutObject with a known length). A generation that dies leaves only a spool
// file, which the expiry job sweeps, never a half-written artifact under a real key.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import type { Readable, Writable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type * as Presigner from '@aws-sdk/s3-request-presigner';

export interface ArtifactUpload {
  /** Write the artifact here and end it. */
  readonly stream: Writable;
  /** After the stream finished: size and hash of what was written. */
  digest(): { sizeBytes: number; sha256: string };
  commit(): Promise<void>;
  abort(): Promise<void>;
}

export interface ArtifactStore {
  readonly kind: 'local' | 's3';
  begin(key: string, contentType: string): Promise<ArtifactUpload>;
  delete(key: string): Promise<void>;
  /**
   * A URL that fetches the object without credentials until expiresAt, or null when this store
   * has no such URLs and the service signs its own download links instead.
   */
  presignedUrl(key: string, download: { fileName: string; contentType: string; expiresInSeconds: number }): Promise<string | null>;
  /** Local store only: the bytes of an artifact, or null when it is gone. */
  open(key: string): Promise<{ stream: Readable; sizeBytes: number } | null>;
  /** Removes spool files of generations that died (older than the given age). */
  sweepSpool(olderThanMs: number): Promise<number>;
}

/** A pass-through that counts and hashes the bytes on their way to the spool file. */
class Digesting extends Transform {
  readonly #hash = createHash('sha256');
  sizeBytes = 0;
  sha256 = '';
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null, data?: Buffer) => void) {
    this.#hash.update(chunk);
    this.sizeBytes += chunk.length;
    done(null, chunk);
  }
  override _flush(done: () => void) {
    this.sha256 = this.#hash.digest('hex');
    done();
  }
}

interface Spool {
  path: string;
  digesting: Digesting;
  sink: fs.WriteStream;
  /** Settles once the spool file is flushed and closed (or failed). */
  closed: Promise<void>;
}

/** Opens a spool file behind a digesting stream. */
function openSpool(dir: string): Spool {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${randomUUID()}.partial`);
  const digesting = new Digesting();
  const sink = fs.createWriteStream(file, { flags: 'wx' });
  const closed = new Promise<void>((resolve, reject) => {
    sink.on('close', resolve);
    sink.on('error', reject);
    digesting.on('error', reject);
  });
  closed.catch(() => {});
  sink.on('error', (err) => digesting.destroy(err));
  digesting.pipe(sink);
  return { path: file, digesting, sink, closed };
}

/** An upload through a spool file; place() moves the finished file to its real home. */
function spooledUpload(dir: string, place: (spoolPath: string, sizeBytes: number) => Promise<void>): ArtifactUpload {
  const s = openSpool(dir);
  return {
    stream: s.digesting,
    digest: () => ({ sizeBytes: s.digesting.sizeBytes, sha256: s.digesting.sha256 }),
    commit: async () => {
      await s.closed;
      await place(s.path, s.digesting.sizeBytes);
    },
    abort: async () => {
      s.digesting.destroy();
      s.sink.destroy();
      await s.closed.catch(() => {});
      await fs.promises.rm(s.path, { force: true });
    },
  };
}

async function sweep(dir: string, olderThanMs: number): Promise<number> {
  let removed = 0;
  let names: string[];
  try {
    names = await fs.promises.readdir(dir);
  } catch {
    return 0;
  }
  const cutoff = Date.now() - olderThanMs;
  for (const name of names) {
    if (!name.endsWith('.partial')) continue;
    const file = path.join(dir, name);
    const stat = await fs.promises.stat(file).catch(() => null);
    if (stat && stat.mtimeMs < cutoff) {
      await fs.promises.rm(file, { force: true });
      removed++;
    }
  }
  return removed;
}

const safeKey = (key: string) => {
  if (!/^[A-Za-z0-9][A-Za-z0-9/._-]*$/.test(key) || key.includes('..')) throw new Error(`unsafe artifact key ${key}`);
  return key;
};

export class LocalArtifactStore implements ArtifactStore {
  readonly kind = 'local' as const;
  readonly #root: string;
  readonly #spoolDir: string;

  constructor(root: string) {
    this.#root = root;
    this.#spoolDir = path.join(root, '.spool');
  }

  async begin(key: string): Promise<ArtifactUpload> {
    const target = path.join(this.#root, safeKey(key));
    return spooledUpload(this.#spoolDir, async (spoolPath) => {
      await fs.promises.mkdir(path.dirname(target), { recursive: true });
      await fs.promises.rename(spoolPath, target);
    });
  }

  async delete(key: string): Promise<void> {
    await fs.promises.rm(path.join(this.#root, safeKey(key)), { force: true });
  }

  async presignedUrl(): Promise<string | null> {
    return null;
  }

  async open(key: string): Promise<{ stream: Readable; sizeBytes: number } | null> {
    const file = path.join(this.#root, safeKey(key));
    try {
      const handle = await fs.promises.open(file, 'r');
      const { size } = await handle.stat();
      return { stream: handle.createReadStream(), sizeBytes: size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  sweepSpool(olderThanMs: number): Promise<number> {
    return sweep(this.#spoolDir, olderThanMs);
  }
}

export interface S3Settings {
  bucket: string;
  region: string;
  /** Custom endpoint for S3-compatible stores (MinIO, R2, …); path-style addressing is used with it. */
  endpoint: string | null;
  /** Where artifacts are spooled before upload. */
  spoolDir?: string;
}

/** Credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, profiles, roles). */
export class S3ArtifactStore implements ArtifactStore {
  readonly kind = 's3' as const;
  readonly #settings: S3Settings;
  readonly #bucket: string;
  readonly #spoolDir: string;
  // The AWS SDK is large; a deployment on the local store never loads it.
  #sdk: Promise<{ client: S3Client; s3: typeof S3Sdk; presign: typeof Presigner }> | null = null;

  constructor(settings: S3Settings) {
    this.#settings = settings;
    this.#bucket = settings.bucket;
    this.#spoolDir = settings.spoolDir ?? path.join(os.tmpdir(), 'corridor-report-spool');
  }

  #load() {
    this.#sdk ??= (async () => {
      const [s3, presign] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]);
      const client = new s3.S3Client({
        region: this.#settings.region,
        // Checksums only where S3 requires them: S3-compatible stores often refuse the streaming
        // (aws-chunked) checksum trailers the SDK would otherwise add to uploads.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        ...(this.#settings.endpoint ? { endpoint: this.#settings.endpoint, forcePathStyle: true } : {}),
      });
      return { client, s3, presign };
    })();
    return this.#sdk;
  }

  async begin(key: string, contentType: string): Promise<ArtifactUpload> {
    safeKey(key);
    const { client, s3 } = await this.#load();
    return spooledUpload(this.#spoolDir, async (spoolPath, sizeBytes) => {
      try {
        await client.send(
          new s3.PutObjectCommand({ Bucket: this.#bucket, Key: key, Body: fs.createReadStream(spoolPath), ContentLength: sizeBytes, ContentType: contentType }),
        );
      } finally {
        await fs.promises.rm(spoolPath, { force: true });
      }
    });
  }

  async delete(key: string): Promise<void> {
    const { client, s3 } = await this.#load();
    await client.send(new s3.DeleteObjectCommand({ Bucket: this.#bucket, Key: safeKey(key) }));
  }

  async presignedUrl(key: string, download: { fileName: string; contentType: string; expiresInSeconds: number }): Promise<string> {
    const { client, s3, presign } = await this.#load();
    const command = new s3.GetObjectCommand({
      Bucket: this.#bucket,
      Key: safeKey(key),
      ResponseContentDisposition: `attachment; filename="${download.fileName}"`,
      ResponseContentType: download.contentType,
    });
    return presign.getSignedUrl(client, command, { expiresIn: download.expiresInSeconds });
  }

  async open(): Promise<null> {
    return null;
  }

  sweepSpool(olderThanMs: number): Promise<number> {
    return sweep(this.#spoolDir, olderThanMs);
  }
}

export interface ArtifactStoreSettings {
  reportStorage: 'local' | 's3';
  dataDir: string;
  s3Bucket: string | null;
  s3Region: string | null;
  s3Endpoint: string | null;
}

/** The store CORRIDOR_REPORT_STORAGE selects. */
export function artifactStoreFor(settings: ArtifactStoreSettings): ArtifactStore {
  if (settings.reportStorage === 's3') {
    return new S3ArtifactStore({ bucket: settings.s3Bucket!, region: settings.s3Region!, endpoint: settings.s3Endpoint });
  }
  return new LocalArtifactStore(path.join(settings.dataDir, 'reports'));
}
