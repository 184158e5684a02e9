import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { EmptyProof, ProofFileStore, ProofTooLarge, UnsupportedProofType, sniffProofType } from './proof-files.ts';

let dataDir: string;
before(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-proofs-'));
});
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(300, 7)]);
const filesUnder = (dir: string): string[] =>
  fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name) : [];

/** A stream that hands out `chunks` one at a time, as a network upload would. */
const chunked = (data: Buffer, size: number) => Readable.from((function* () {
  for (let i = 0; i < data.length; i += size) yield data.subarray(i, i + size);
})());

test('magic bytes decide the type', () => {
  assert.equal(sniffProofType(Buffer.from('%PDF-1.7\n')), 'application/pdf');
  assert.equal(sniffProofType(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10])), 'image/jpeg');
  assert.equal(sniffProofType(PNG), 'image/png');
  assert.equal(sniffProofType(Buffer.from('%PDF')), null);
  assert.equal(sniffProofType(Buffer.from('GIF89a')), null);
  assert.equal(sniffProofType(Buffer.from([0x89, 0x50, 0x4e, 0x47])), null, 'a truncated PNG signature is not a PNG');
});

test('a received file is hashed, measured and kept under funding-proofs/', async () => {
  const store = new ProofFileStore(dataDir);
  const received = await store.receive(chunked(PNG, 3));
  assert.equal(received.contentType, 'image/png');
  assert.equal(received.sizeBytes, PNG.length);
  assert.equal(received.sha256, createHash('sha256').update(PNG).digest('hex'));
  const relative = await store.keep(received, 'abc');
  assert.equal(relative, path.join('funding-proofs', 'abc.png'));
  assert.deepEqual(fs.readFileSync(path.join(dataDir, relative)), PNG);
  assert.deepEqual(filesUnder(path.join(dataDir, 'funding-proofs', '.incoming')), []);
});

test('a file over the limit fails at the limit and leaves nothing behind', async () => {
  const store = new ProofFileStore(dataDir);
  let produced = 0;
  // An endless PDF: the store must stop pulling at the limit rather than read it all.
  const endless = new Readable({
    read() {
      const chunk = produced === 0 ? Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(1000)]) : Buffer.alloc(1000);
      produced += chunk.length;
      this.push(chunk);
    },
  });
  await assert.rejects(store.receive(endless, 50_000), ProofTooLarge);
  // What the stream buffers between source, hasher and file (their high-water marks) is read ahead; nothing more.
  assert.ok(produced < 50_000 + 256 * 1024, `read ${produced} bytes`);
  assert.deepEqual(filesUnder(path.join(dataDir, 'funding-proofs', '.incoming')), []);
});

test('a file of another type is refused from its first bytes, and an empty one too', async () => {
  const store = new ProofFileStore(dataDir);
  await assert.rejects(store.receive(Readable.from([Buffer.from('just some text, not a receipt')])), UnsupportedProofType);
  await assert.rejects(store.receive(Readable.from([Buffer.from([0xff, 0xd8])])), UnsupportedProofType, 'two bytes are not a JPEG');
  await assert.rejects(store.receive(Readable.from([])), EmptyProof);
  assert.deepEqual(filesUnder(path.join(dataDir, 'funding-proofs', '.incoming')), []);
});

test('a tiny file whose first bytes match is accepted (JPEG needs only three)', async () => {
  const store = new ProofFileStore(dataDir);
  const received = await store.receive(Readable.from([Buffer.from([0xff, 0xd8, 0xff])]));
  assert.equal(received.contentType, 'image/jpeg');
  assert.equal(received.sizeBytes, 3);
  await store.discard(received.tempPath);
});
