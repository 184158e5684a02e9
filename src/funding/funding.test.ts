import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isValidIBAN } from 'ibantools';
import { clabe } from 'clabe-validator';
import { getAddressInfo, validate as validateBitcoin } from 'bitcoin-address-validation';
import { getPixPayloadInfo, isValidPixKey, isValidPixPayload } from '@brazilian-utils/brazilian-utils';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { SEPA_DE, createTransfer, driveToRest, fund, getTransfer, newCustomer, newTransfer, waitFor } from '../transfers/test-support.ts';
import type { Customer } from '../transfers/test-support.ts';

const TTL_SECONDS = 7200;
const MB = 1024 * 1024;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const RAILS = {
  ACH: { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' },
  SEPA_FR: { type: 'FIAT', country: 'FR', currency: 'EUR', method: 'SEPA' },
  SPEI: { type: 'FIAT', country: 'MX', currency: 'MXN', method: 'SPEI' },
  PIX: { type: 'FIAT', country: 'BR', currency: 'BRL', method: 'PIX' },
  ETHEREUM_USDC: { type: 'CRYPTO', blockchain: 'ETHEREUM', asset: 'USDC' },
  BITCOIN: { type: 'CRYPTO', blockchain: 'BITCOIN', asset: 'BTC' },
  STELLAR_USDC: { type: 'CRYPTO', blockchain: 'STELLAR', asset: 'USDC' },
} as const;

/** EIP-55 re-derived here from the spec: a letter is upper case when its keccak nibble is ≥ 8. */
function isEip55(address: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return false;
  const lower = address.slice(2).toLowerCase();
  const hash = Buffer.from(keccak_256(new TextEncoder().encode(lower))).toString('hex');
  return [...lower].every((ch, i) => (/[a-f]/.test(ch) ? (parseInt(hash[i]!, 16) >= 8 ? ch.toUpperCase() : ch) === address[i + 2] : true));
}

function multipart(parts: Array<{ name: string; filename?: string; contentType?: string; data: Buffer | string }>) {
  const boundary = `----corridor${randomUUID()}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.contentType ? `Content-Type: ${p.contentType}\r\n` : ''}\r\n`));
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { rawBody: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n'), Buffer.alloc(2000, 0x20), Buffer.from('\n%%EOF\n')]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0'), Buffer.alloc(5000, 0x11), Buffer.from([0xff, 0xd9])]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('\0\0\0\rIHDR'), Buffer.alloc(700, 0x42)]);
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('funding', () => {
  let t: TestServer;
  let a: Customer;
  let b: Customer;
  let dataDir: string;

  const proofFiles = (): string[] => {
    const dir = path.join(dataDir, 'funding-proofs');
    return fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name)) : [];
  };

  /** A transfer from `from` to the customer's SEPA account, created through the API and ready to fund. */
  async function readyTransfer(c: Customer, from: object, amount: string): Promise<any> {
    const quote = await t.request('POST', '/v1/quotes', {
      apiKey: c.org.apiKey,
      body: { entityId: c.entityId, from, to: SEPA_DE, amount, fixedSide: 'FROM', destinationFiatAccountId: c.fiatAccountId },
    });
    assert.equal(quote.status, 201, quote.text);
    assert.ok(quote.body.options.length > 0, `no option from ${JSON.stringify(from)}: ${quote.text}`);
    const created = await createTransfer(t, c, quote.body.options[0].id);
    assert.equal(created.status, 201, created.text);
    return waitFor(t, c, created.body.id, (tr) => tr.status !== 'PENDING_SETUP');
  }

  const openSession = (c: Customer, transferId: string) => t.request('POST', `/v1/transfers/${transferId}/funding-session`, { apiKey: c.org.apiKey });
  const uploadProof = (c: Customer, transferId: string, form: ReturnType<typeof multipart>) =>
    t.request('POST', `/v1/transfers/${transferId}/funding-proof`, { apiKey: c.org.apiKey, ...form });

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-funding-'));
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '1000', CORRIDOR_DATA_DIR: dataDir, CORRIDOR_FUNDING_SESSION_TTL_SECONDS: String(TTL_SECONDS) });
    a = await newCustomer(t, 'Funding A');
    b = await newCustomer(t, 'Funding B');
  });
  after(async () => {
    await t?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('ACH: opening a session answers 201 with unique instructions and moves the transfer to AWAITING_FUNDS', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '1500.00');
    assert.equal(tr.status, 'READY_TO_FUND');
    const res = await openSession(a, tr.id);
    assert.equal(res.status, 201, res.text);
    const s = res.body;
    assert.equal(s.transferId, tr.id);
    assert.equal(s.status, 'ACTIVE');
    assert.match(s.expiresAt, ISO_MS);
    assert.equal(Date.parse(s.expiresAt) - Date.parse(s.createdAt), TTL_SECONDS * 1000, 'expiresAt follows CORRIDOR_FUNDING_SESSION_TTL_SECONDS');
    const i = s.instructions;
    assert.equal(i.type, 'FIAT');
    assert.deepEqual(i.rail, RAILS.ACH);
    assert.equal(i.exactAmount, tr.quoted.sourceAmount);
    assert.equal(i.exactAmount, '1500.00');
    assert.equal(i.currency, 'USD');
    assert.equal(i.beneficiary.name, tr.legs.find((l: any) => l.kind === 'COLLECTION').provider);
    assert.match(i.routingNumber, /^\d{9}$/);
    const d = [...i.routingNumber].map(Number);
    assert.equal((3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + d[2]! + d[5]! + d[8]!) % 10, 0, 'ABA checksum');
    assert.match(i.accountNumber, /^\d{8,17}$/);
    assert.match(i.reference, /^[A-Z0-9]{1,35}$/);

    const after = await getTransfer(t, a, tr.id);
    assert.equal(after.status, 'AWAITING_FUNDS');
    assert.equal(after.blockingParty, 'CUSTOMER');
    assert.equal(after.version, tr.version + 1);
    assert.deepEqual(after.awaitingFundsInstructions, i);
    const last = after.timeline.at(-1);
    assert.deepEqual([last.previousStatus, last.status], ['READY_TO_FUND', 'AWAITING_FUNDS']);
  });

  test('repeating the request returns the same open session (200) and changes nothing', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '210.00');
    const first = await openSession(a, tr.id);
    assert.equal(first.status, 201, first.text);
    const version = (await getTransfer(t, a, tr.id)).version;
    for (let n = 0; n < 3; n++) {
      const again = await openSession(a, tr.id);
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body, first.body);
    }
    const concurrent = await Promise.all([openSession(a, tr.id), openSession(a, tr.id)]);
    assert.deepEqual(concurrent.map((r) => [r.status, r.body.id]), [[200, first.body.id], [200, first.body.id]]);
    assert.equal((await getTransfer(t, a, tr.id)).version, version);
  });

  test('simultaneous first requests open exactly one session', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '230.00');
    const results = await Promise.all(Array.from({ length: 5 }, () => openSession(a, tr.id)));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 201], results.map((r) => r.text).join('\n'));
    assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
    const after = await getTransfer(t, a, tr.id);
    assert.equal(after.version, tr.version + 1, 'one transition');
  });

  test('SEPA, SPEI and PIX sessions carry a valid IBAN, CLABE and PIX copia-e-cola with the exact amount', async () => {
    const sepa = await readyTransfer(a, RAILS.SEPA_FR, '800.00');
    const s1 = (await openSession(a, sepa.id)).body.instructions;
    assert.ok(isValidIBAN(s1.iban), s1.iban);
    assert.equal(s1.iban.slice(0, 2), 'FR');
    assert.match(s1.bic, /^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$/);
    assert.equal(s1.currency, 'EUR');
    assert.equal(s1.exactAmount, '800.00');

    const spei = await readyTransfer(a, RAILS.SPEI, '17100.00');
    const s2 = (await openSession(a, spei.id)).body.instructions;
    const check = clabe.validate(s2.clabe);
    assert.ok(check.ok, check.message);
    assert.equal(s2.currency, 'MXN');
    assert.equal(s2.exactAmount, spei.quoted.sourceAmount);

    const pix = await readyTransfer(a, RAILS.PIX, '5400.00');
    const s3 = (await openSession(a, pix.id)).body.instructions;
    assert.equal(s3.pixKeyType, 'EVP');
    assert.ok(isValidPixKey(s3.pixKey), s3.pixKey);
    assert.ok(isValidPixPayload(s3.pixCopiaECola), s3.pixCopiaECola);
    const info = getPixPayloadInfo(s3.pixCopiaECola) as unknown as { key: string; txid: string };
    assert.equal(info.key, s3.pixKey);
    assert.equal(info.txid, s3.reference);
    assert.ok(s3.pixCopiaECola.includes(`54${String(s3.exactAmount.length).padStart(2, '0')}${s3.exactAmount}`), 'exact amount in the BR Code');
  });

  test('crypto sessions: ETHEREUM USDC with a checksummed address, BITCOIN bech32, STELLAR shared account with a memo', async () => {
    const eth = await readyTransfer(a, RAILS.ETHEREUM_USDC, '300.00');
    const e = (await openSession(a, eth.id)).body.instructions;
    assert.deepEqual([e.type, e.blockchain, e.asset], ['CRYPTO', 'ETHEREUM', 'USDC']);
    assert.ok(isEip55(e.depositAddress), e.depositAddress);
    assert.notEqual(e.depositAddress, e.depositAddress.toLowerCase(), 'mixed case carries the checksum');
    assert.equal(e.exactAmount, '300.000000');
    assert.equal(e.memo, undefined);

    const btc = await readyTransfer(a, RAILS.BITCOIN, '0.01');
    const bi = (await openSession(a, btc.id)).body.instructions;
    assert.ok(validateBitcoin(bi.depositAddress), bi.depositAddress);
    assert.equal(getAddressInfo(bi.depositAddress).type, 'p2wpkh');
    assert.equal(getAddressInfo(bi.depositAddress).bech32, true);
    assert.equal(bi.exactAmount, '0.01000000');

    const xlm = await readyTransfer(a, RAILS.STELLAR_USDC, '150.00');
    const st = (await openSession(a, xlm.id)).body.instructions;
    assert.match(st.depositAddress, /^G[A-Z2-7]{55}$/);
    assert.match(st.memo, /^\d+$/);
    assert.equal(st.memoType, 'ID');
  });

  test('two transfers on the same rail never share a reference, account, address or memo', async () => {
    for (const rail of [RAILS.ACH, RAILS.ETHEREUM_USDC, RAILS.STELLAR_USDC]) {
      const [x, y] = [await readyTransfer(a, rail, '120.00'), await readyTransfer(a, rail, '120.00')];
      const [ix, iy] = [(await openSession(a, x.id)).body.instructions, (await openSession(a, y.id)).body.instructions];
      if (ix.type === 'FIAT') {
        assert.notEqual(ix.reference, iy.reference);
        assert.notEqual(ix.accountNumber, iy.accountNumber);
      } else if (ix.memo) {
        assert.equal(ix.depositAddress, iy.depositAddress, 'Stellar shares one account');
        assert.notEqual(ix.memo, iy.memo);
      } else {
        assert.notEqual(ix.depositAddress.toLowerCase(), iy.depositAddress.toLowerCase());
      }
    }
  });

  test('the database refuses to hand out a reference or deposit address twice', async () => {
    const rows = await t.server.db.kysely.selectFrom('funding_sessions').select(['reference', 'deposit_key']).execute();
    assert.equal(new Set(rows.map((r: any) => r.reference)).size, rows.length);
    assert.equal(new Set(rows.map((r: any) => r.deposit_key)).size, rows.length);
    const [existing] = rows as any[];
    const tr = await readyTransfer(a, RAILS.ACH, '99.00');
    const insert = (over: object) =>
      t.server.db.kysely
        .insertInto('funding_sessions')
        .values({ id: randomUUID(), organization_id: a.org.organizationId, transfer_id: tr.id, status: 'EXPIRED', reference: `CRD${randomUUID().slice(0, 8)}`, deposit_key: randomUUID(), instructions: '{}', expires_at: new Date(), ...over })
        .execute();
    await assert.rejects(insert({ reference: existing.reference }), /unique|duplicate/i);
    await assert.rejects(insert({ deposit_key: existing.deposit_key }), /unique|duplicate/i);
  });

  test('after the funds arrive the session is done: no instructions on the transfer, and a new request is 409 transfer_already_funded', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '400.00');
    assert.equal((await openSession(a, tr.id)).status, 201);
    await fund(t, a, tr.id);
    const funded = await getTransfer(t, a, tr.id);
    assert.notEqual(funded.status, 'AWAITING_FUNDS');
    assert.equal(funded.awaitingFundsInstructions, undefined);
    const again = await openSession(a, tr.id);
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.code, 'transfer_already_funded');
    const session = await t.server.db.kysely.selectFrom('funding_sessions').select('status').where('transfer_id', '=', tr.id).executeTakeFirstOrThrow();
    assert.equal(session.status, 'COMPLETED');
  });

  test('in review the answer is 409 transfer_in_review; once the transfer has ended after its funds arrived, transfer_already_funded', async () => {
    const review = await readyTransfer(a, RAILS.ACH, '420.93');
    await fund(t, a, review.id);
    assert.equal((await driveToRest(t, a, review.id)).status, 'IN_REVIEW');
    const inReview = await openSession(a, review.id);
    assert.equal(inReview.status, 409, inReview.text);
    assert.equal(inReview.body.code, 'transfer_in_review');
    for (const [amount, status] of [['430.00', 'COMPLETED'], ['440.92', 'RETURNED'], ['450.94', 'REFUNDED']] as const) {
      const tr = await readyTransfer(a, RAILS.ACH, amount);
      await fund(t, a, tr.id);
      assert.equal((await driveToRest(t, a, tr.id)).status, status);
      const res = await openSession(a, tr.id);
      assert.equal(res.status, 409, `${status}: ${res.text}`);
      assert.equal(res.body.code, 'transfer_already_funded', status);
    }
  });

  test('a canceled transfer takes no session: 409 transfer_closed', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '410.00');
    const cancel = await t.request('POST', `/v1/transfers/${tr.id}/cancel`, { apiKey: a.org.apiKey });
    assert.equal(cancel.status, 200, cancel.text);
    const res = await openSession(a, tr.id);
    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.code, 'transfer_closed');
  });

  test('the expiry job returns the transfer to READY_TO_FUND; the next session has new instructions', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '620.00');
    const first = (await openSession(a, tr.id)).body;
    // Let the session's time run out rather than wait the configured TTL.
    await t.server.db.kysely.updateTable('funding_sessions').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', first.id).execute();
    await t.server.queue.send('funding.expire-sessions', {});
    const back = await waitFor(t, a, tr.id, (x) => x.status === 'READY_TO_FUND', 30_000);
    assert.equal(back.blockingParty, 'CUSTOMER');
    assert.equal(back.awaitingFundsInstructions, undefined);
    const last = back.timeline.at(-1);
    assert.deepEqual([last.previousStatus, last.status, last.reason], ['AWAITING_FUNDS', 'READY_TO_FUND', 'funding_session_expired']);

    const second = await openSession(a, tr.id);
    assert.equal(second.status, 201, second.text);
    assert.notEqual(second.body.id, first.id);
    assert.notEqual(second.body.instructions.reference, first.instructions.reference);
    assert.notEqual(second.body.instructions.accountNumber, first.instructions.accountNumber);
    assert.equal((await getTransfer(t, a, tr.id)).status, 'AWAITING_FUNDS');
    const old = await t.server.db.kysely.selectFrom('funding_sessions').select('status').where('id', '=', first.id).executeTakeFirstOrThrow();
    assert.equal(old.status, 'EXPIRED');
  });

  test('a session past its time is never handed out again, even before the job runs', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '630.00');
    const first = (await openSession(a, tr.id)).body;
    await t.server.db.kysely.updateTable('funding_sessions').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', first.id).execute();
    assert.equal((await getTransfer(t, a, tr.id)).awaitingFundsInstructions, undefined);
    const second = await openSession(a, tr.id);
    assert.equal(second.status, 201, second.text);
    assert.notEqual(second.body.instructions.reference, first.instructions.reference);
    const after = await getTransfer(t, a, tr.id);
    assert.equal(after.status, 'AWAITING_FUNDS');
    assert.deepEqual(after.timeline.slice(-2).map((e: any) => [e.status, e.reason]), [['READY_TO_FUND', 'funding_session_expired'], ['AWAITING_FUNDS', 'funding_session_opened']]);
  });

  test('proofs: PDF, JPEG and PNG are stored with their size and SHA-256, and the transfer does not change', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '700.00');
    await openSession(a, tr.id);
    const before = await getTransfer(t, a, tr.id);
    for (const [file, name, type] of [[PDF, 'receipt.pdf', 'application/pdf'], [JPEG, 'photo.jpg', 'image/jpeg'], [PNG, 'screen.png', 'image/png']] as const) {
      const res = await uploadProof(a, tr.id, multipart([{ name: 'file', filename: name, contentType: type, data: file }]));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body).sort(), ['contentType', 'fileName', 'id', 'sha256', 'sizeBytes', 'transferId', 'uploadedAt']);
      assert.equal(res.body.transferId, tr.id);
      assert.equal(res.body.fileName, name);
      assert.equal(res.body.contentType, type);
      assert.equal(res.body.sizeBytes, file.length);
      assert.equal(res.body.sha256, sha256(file));
      assert.match(res.body.uploadedAt, ISO_MS);
      const stored = proofFiles().find((f) => path.basename(f).startsWith(res.body.id));
      assert.ok(stored, 'kept under funding-proofs/');
      assert.equal(sha256(fs.readFileSync(stored)), sha256(file));
    }
    const after = await getTransfer(t, a, tr.id);
    assert.equal(after.status, 'AWAITING_FUNDS');
    assert.equal(after.version, before.version);
    assert.deepEqual(after.timeline, before.timeline);
  });

  test('a proof on a READY_TO_FUND transfer leaves it READY_TO_FUND', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '701.00');
    const res = await uploadProof(a, tr.id, multipart([{ name: 'file', filename: 'r.pdf', data: PDF }]));
    assert.equal(res.status, 200, res.text);
    const after = await getTransfer(t, a, tr.id);
    assert.deepEqual([after.status, after.version], ['READY_TO_FUND', tr.version]);
  });

  test('the type comes from the bytes: a PNG named .pdf and sent as application/pdf is recorded as image/png', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '702.00');
    const res = await uploadProof(a, tr.id, multipart([{ name: 'file', filename: 'invoice.pdf', contentType: 'application/pdf', data: PNG }]));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.contentType, 'image/png');
    assert.equal(res.body.fileName, 'invoice.pdf');
    assert.ok(proofFiles().some((f) => path.basename(f) === `${res.body.id}.png`));
  });

  test('anything else is 415 unsupported_file_type, whatever its name, and nothing is kept', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '703.00');
    const filesBefore = proofFiles();
    for (const data of ['Paid on Monday, honest.', Buffer.from('GIF89a\x01\x00\x01\x00'), Buffer.from('PK\x03\x04 zip')]) {
      const res = await uploadProof(a, tr.id, multipart([{ name: 'file', filename: 'receipt.pdf', contentType: 'application/pdf', data }]));
      assert.equal(res.status, 415, res.text);
      assert.equal(res.body.code, 'unsupported_file_type');
    }
    assert.deepEqual(proofFiles(), filesBefore);
  });

  test('over 10 MB is 413 file_too_large and no file is left on disk; exactly 10 MB is accepted', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '704.00');
    const filesBefore = proofFiles();
    const big = Buffer.concat([PDF.subarray(0, 9), Buffer.alloc(11 * MB - 9, 0x20)]);
    const res = await uploadProof(a, tr.id, multipart([{ name: 'file', filename: 'big.pdf', data: big }]));
    assert.equal(res.status, 413, res.text);
    assert.equal(res.body.code, 'file_too_large');
    assert.deepEqual(proofFiles(), filesBefore, 'no partial file left behind');
    const records = await t.server.db.kysely.selectFrom('funding_proofs').select('id').where('transfer_id', '=', tr.id).execute();
    assert.equal(records.length, 0);

    const limit = Buffer.concat([PDF.subarray(0, 9), Buffer.alloc(10 * MB - 9, 0x20)]);
    const ok = await uploadProof(a, tr.id, multipart([{ name: 'file', filename: 'limit.pdf', data: limit }]));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.sizeBytes, 10 * MB);
  });

  test('over a real connection, an endless upload is cut off at the limit: 413 and the connection closed long before it ends', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '708.00');
    const filesBefore = proofFiles();
    await t.server.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.server.app.server.address() as AddressInfo;
    const offered = 1024 * MB;
    let sent = 0;
    const answer = await new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      const boundary = 'corridor-endless';
      const req = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: `/v1/transfers/${tr.id}/funding-proof`, headers: { 'x-api-key': a.org.apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` } },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
        },
      );
      req.on('error', reject);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="endless.pdf"\r\n\r\n%PDF-1.4\n`);
      const chunk = Buffer.alloc(MB, 0x20);
      const pump = () => {
        while (sent < offered && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        if (!req.destroyed) req.end(`\r\n--${boundary}--\r\n`);
      };
      pump();
    });
    assert.equal(answer.status, 413, answer.body);
    assert.equal(JSON.parse(answer.body).code, 'file_too_large');
    assert.equal(answer.connection, 'close');
    assert.ok(sent < offered / 4, `the client got to send ${sent / MB} MB of ${offered / MB} MB`);
    assert.deepEqual(proofFiles(), filesBefore);
  });

  test('the file must come as a file part named file; a JSON body is 415', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '705.00');
    const noFile = await uploadProof(a, tr.id, multipart([{ name: 'note', data: 'no file here' }]));
    assert.equal(noFile.status, 422, noFile.text);
    assert.equal(noFile.body.code, 'validation_error');
    assert.equal(noFile.body.details[0].path, 'file');
    const wrongField = await uploadProof(a, tr.id, multipart([{ name: 'document', filename: 'r.pdf', data: PDF }]));
    assert.equal(wrongField.status, 422, wrongField.text);
    assert.equal(wrongField.body.details[0].path, 'file');
    const empty = await uploadProof(a, tr.id, multipart([{ name: 'file', filename: 'empty.pdf', data: Buffer.alloc(0) }]));
    assert.equal(empty.status, 422, empty.text);
    const json = await t.request('POST', `/v1/transfers/${tr.id}/funding-proof`, { apiKey: a.org.apiKey, body: { file: 'JVBERi0=' } });
    assert.equal(json.status, 415, json.text);
    assert.equal(json.body.code, 'unsupported_media_type');
    // Regression: the raw file sent with its own type was told to "Send the body as application/json".
    for (const type of ['application/pdf', 'image/png', 'text/plain']) {
      const raw = await t.request('POST', `/v1/transfers/${tr.id}/funding-proof`, { apiKey: a.org.apiKey, rawBody: PDF, headers: { 'content-type': type } });
      assert.equal(raw.status, 415, raw.text);
      assert.deepEqual(raw.body, { code: 'unsupported_media_type', message: 'Send the body as multipart/form-data' });
    }
    // JSON routes still name JSON.
    const onJsonRoute = await t.request('POST', '/v1/quotes', { apiKey: a.org.apiKey, rawBody: 'x', headers: { 'content-type': 'text/plain' } });
    assert.deepEqual(onJsonRoute.body, { code: 'unsupported_media_type', message: 'Send the body as application/json' });
  });

  test("another organization's transfer is 404 for sessions and proofs, and nothing is written", async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '706.00');
    const filesBefore = proofFiles();
    const session = await openSession(b, tr.id);
    assert.equal(session.status, 404, session.text);
    assert.equal(session.body.code, 'not_found');
    const proof = await uploadProof(b, tr.id, multipart([{ name: 'file', filename: 'r.pdf', data: PDF }]));
    assert.equal(proof.status, 404, proof.text);
    assert.deepEqual(proofFiles(), filesBefore);
    assert.equal((await getTransfer(t, a, tr.id)).status, 'READY_TO_FUND');
    assert.equal((await openSession(a, randomUUID())).status, 404);
    assert.equal((await openSession(a, 'not-a-transfer')).status, 404);
  });

  test('both endpoints need transfers:write', async () => {
    const tr = await readyTransfer(a, RAILS.ACH, '707.00');
    const key = await t.request('POST', '/v1/api-keys', { token: a.org.token, body: { name: 'read only', scopes: ['transfers:read'] } });
    assert.equal(key.status, 201, key.text);
    const session = await t.request('POST', `/v1/transfers/${tr.id}/funding-session`, { apiKey: key.body.secret });
    assert.equal(session.status, 403, session.text);
    const proof = await t.request('POST', `/v1/transfers/${tr.id}/funding-proof`, { apiKey: key.body.secret, ...multipart([{ name: 'file', filename: 'r.pdf', data: PDF }]) });
    assert.equal(proof.status, 403, proof.text);
  });

  test('the OpenAPI document describes the multipart upload and both responses', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const upload = doc.paths['/v1/transfers/{transferId}/funding-proof'].post;
    assert.ok(upload.requestBody.content['multipart/form-data'], JSON.stringify(upload.requestBody));
    assert.ok(upload.responses['413'] && upload.responses['415']);
    assert.ok(doc.paths['/v1/transfers/{transferId}/funding-session'].post.responses['201']);
  });
});

describe('funding while the transfer is still being set up', () => {
  let t: TestServer;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-funding-'));
  after(async () => {
    await t?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('PENDING_SETUP is 409 transfer_not_ready_to_fund; once READY_TO_FUND the session opens', async () => {
    // A slow sandbox: the transfer stays in PENDING_SETUP until the test advances it.
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '0.01', CORRIDOR_DATA_DIR: dataDir });
    const c = await newCustomer(t, 'Funding setup');
    const tr = await newTransfer(t, c, '321.00');
    assert.equal(tr.status, 'PENDING_SETUP');
    const early = await t.request('POST', `/v1/transfers/${tr.id}/funding-session`, { apiKey: c.org.apiKey });
    assert.equal(early.status, 409, early.text);
    assert.equal(early.body.code, 'transfer_not_ready_to_fund');
    const ready = await driveToRest(t, c, tr.id);
    assert.equal(ready.status, 'READY_TO_FUND');
    const res = await t.request('POST', `/v1/transfers/${tr.id}/funding-session`, { apiKey: c.org.apiKey });
    assert.equal(res.status, 201, res.text);
  });
});
