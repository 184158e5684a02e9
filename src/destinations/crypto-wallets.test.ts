import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestResponse, TestServer } from '../../test/helpers/server.ts';

const NOT_A_KNOWN_ID = '00000000-0000-4000-8000-000000000000';
const EIP55 = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const EIP55_POLYGON = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359';
const STELLAR_USDC_ISSUER = 'GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN';
const BTC_BECH32 = 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq';
const BTC_P2PKH = '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2';
const BTC_P2SH = '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy';
const BTC_TESTNET = 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx';

type Wallet = { blockchain: string; asset: string; address: string; memo?: string | null; tag?: string | null };

async function setup(t: TestServer, name: string): Promise<{ org: TestOrganization; entityId: string }> {
  const org = await t.newOrganization(name);
  const entity = await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'BUSINESS', legalName: `${name} Treasury Ltd`, country: 'SG' } });
  return { org, entityId: entity.body.id };
}

function expectInvalid(res: TestResponse, path: string, what: string) {
  assert.equal(res.status, 422, `${what}: ${res.text}`);
  assert.equal(res.body.code, 'validation_error', what);
  assert.ok(res.body.details.some((d: { path: string }) => d.path === path), `${what}: expected ${path} in ${res.text}`);
}

describe('crypto wallets (sandbox)', () => {
  let t: TestServer;
  let a: { org: TestOrganization; entityId: string };
  let b: { org: TestOrganization; entityId: string };
  const create = (wallet: Wallet, who = a, extra: Record<string, unknown> = {}) =>
    t.request('POST', '/v1/crypto-wallets', { apiKey: who.org.apiKey, body: { entityId: who.entityId, relationship: 'SELF', ...wallet, ...extra } });

  before(async () => {
    t = await startTestServer();
    a = await setup(t, 'A');
    b = await setup(t, 'B');
  });
  after(async () => t.close());

  test('valid addresses are accepted on every crypto rail of the sandbox network', async () => {
    const cases: Array<[Wallet, string]> = [
      [{ blockchain: 'ETHEREUM', asset: 'USDC', address: EIP55 }, EIP55],
      [{ blockchain: 'ETHEREUM', asset: 'ETH', address: EIP55 }, EIP55],
      [{ blockchain: 'POLYGON', asset: 'USDC', address: EIP55_POLYGON }, EIP55_POLYGON],
      // No checksum claimed (one letter case throughout): accepted and stored checksummed.
      [{ blockchain: 'ETHEREUM', asset: 'USDC', address: EIP55.toLowerCase() }, EIP55],
      [{ blockchain: 'ETHEREUM', asset: 'USDC', address: `0x${EIP55.slice(2).toUpperCase()}` }, EIP55],
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_BECH32 }, BTC_BECH32],
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_BECH32.toUpperCase() }, BTC_BECH32],
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_P2PKH }, BTC_P2PKH],
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_P2SH }, BTC_P2SH],
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_TESTNET }, BTC_TESTNET], // sandbox accepts testnet
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: '1234567890' }, STELLAR_USDC_ISSUER],
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: 'é'.repeat(14) }, STELLAR_USDC_ISSUER], // 28 bytes
    ];
    for (const [wallet, stored] of cases) {
      const res = await create(wallet);
      assert.equal(res.status, 201, `${JSON.stringify(wallet)}: ${res.text}`);
      assert.equal(res.body.address, stored);
      assert.equal(res.body.blockchain, wallet.blockchain);
      assert.equal(res.body.asset, wallet.asset);
      assert.equal(res.body.memo, wallet.memo ?? null);
      assert.equal(res.body.tag, null);
      assert.equal(res.body.version, 1);
      assert.equal(res.body.versionCreatedBy.type, 'API_KEY');
    }
  });

  test('each address and memo rule refuses a real-world bad value with 422 naming the field', async () => {
    const flipped = `0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed`; // one letter's case flipped from EIP55
    const cases: Array<[Wallet, string]> = [
      [{ blockchain: 'ETHEREUM', asset: 'USDC', address: flipped }, 'address'],
      [{ blockchain: 'POLYGON', asset: 'USDC', address: EIP55.slice(0, 41) }, 'address'],
      [{ blockchain: 'ETHEREUM', asset: 'ETH', address: `0x${'g'.repeat(40)}` }, 'address'],
      [{ blockchain: 'ETHEREUM', asset: 'ETH', address: BTC_BECH32 }, 'address'],
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3' }, 'address'], // base58check
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdr' }, 'address'], // bech32
      [{ blockchain: 'BITCOIN', asset: 'BTC', address: EIP55 }, 'address'],
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER }, 'memo'], // memo required
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: null }, 'memo'],
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: 'x'.repeat(29) }, 'memo'], // over 28 bytes
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: 'é'.repeat(15) }, 'memo'], // 15 characters, but 30 bytes
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: '   ' }, 'memo'], // blank
      [{ blockchain: 'STELLAR', asset: 'USDC', address: `${STELLAR_USDC_ISSUER.slice(0, 55)}M`, memo: '1' }, 'address'], // StrKey checksum
      [{ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: '1', tag: '7' }, 'tag'], // no tags on Stellar
      [{ blockchain: 'ETHEREUM', asset: 'USDC', address: EIP55, memo: '12345' }, 'memo'], // no memos on Ethereum
    ];
    for (const [wallet, path] of cases) {
      const res = await create(wallet);
      expectInvalid(res, path, JSON.stringify(wallet));
      assert.deepEqual(res.body.details.map((d: { path: string }) => d.path), [path], `${JSON.stringify(wallet)}: only ${path} is wrong`);
    }
    expectInvalid(await create({ blockchain: 'ETHEREUM', asset: 'USDC', address: EIP55 }, a, { relationship: 'OWN' }), 'relationship', 'relationship');
    expectInvalid(await create({ blockchain: 'ethereum', asset: 'USDC', address: EIP55 }), 'blockchain', 'lower-case blockchain');
  });

  test('a blockchain/asset pair outside the rail directory answers 422 unsupported_route', async () => {
    for (const wallet of [
      { blockchain: 'BITCOIN', asset: 'USDC', address: BTC_BECH32 },
      { blockchain: 'SOLANA', asset: 'USDC', address: 'So11111111111111111111111111111111111111112' },
      { blockchain: 'POLYGON', asset: 'ETH', address: EIP55 },
    ]) {
      const res = await create(wallet);
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.code, 'unsupported_route');
    }
  });

  test('changing address, blockchain or memo makes a new version; the nickname does not; old versions stay readable', async () => {
    const v1 = (await create({ blockchain: 'ETHEREUM', asset: 'USDC', address: EIP55 }, a, { nickname: 'Treasury' })).body;
    const v2 = await t.request('PATCH', `/v1/crypto-wallets/${v1.id}`, { token: a.org.token, body: { address: EIP55_POLYGON } });
    assert.equal(v2.status, 200, v2.text);
    assert.equal(v2.body.id, v1.id);
    assert.equal(v2.body.version, 2);
    assert.equal(v2.body.address, EIP55_POLYGON);
    assert.deepEqual(v2.body.versionCreatedBy, { type: 'USER', id: a.org.userId });

    const renamed = await t.request('PATCH', `/v1/crypto-wallets/${v1.id}`, { apiKey: a.org.apiKey, body: { nickname: 'Ops float' } });
    assert.equal(renamed.body.version, 2);
    assert.equal(renamed.body.nickname, 'Ops float');

    const moved = await t.request('PATCH', `/v1/crypto-wallets/${v1.id}`, { apiKey: a.org.apiKey, body: { blockchain: 'POLYGON' } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.version, 3);
    assert.equal(moved.body.blockchain, 'POLYGON');

    // The address is checked against the new chain when only the blockchain changes.
    expectInvalid(await t.request('PATCH', `/v1/crypto-wallets/${v1.id}`, { apiKey: a.org.apiKey, body: { blockchain: 'BITCOIN', asset: 'BTC' } }), 'address', 'chain without address');
    assert.equal((await t.request('GET', `/v1/crypto-wallets/${v1.id}`, { apiKey: a.org.apiKey })).body.version, 3);

    const old = await t.request('GET', `/v1/crypto-wallets/${v1.id}/versions/1`, { apiKey: a.org.apiKey });
    assert.equal(old.status, 200);
    assert.equal(old.body.address, EIP55);
    assert.equal(old.body.blockchain, 'ETHEREUM');
    assert.equal(old.body.createdBy.type, 'API_KEY');
    const list = await t.request('GET', `/v1/crypto-wallets/${v1.id}/versions`, { apiKey: a.org.apiKey });
    assert.deepEqual(list.body.data.map((v: { version: number; blockchain: string }) => [v.version, v.blockchain]), [[1, 'ETHEREUM'], [2, 'ETHEREUM'], [3, 'POLYGON']]);

    const snap = await t.server.services.destinations.snapshot(a.org.organizationId, { type: 'CRYPTO_WALLET', id: v1.id });
    assert.deepEqual(snap, {
      type: 'CRYPTO_WALLET',
      id: v1.id,
      version: 3,
      relationship: 'SELF',
      entityId: a.entityId,
      rail: { type: 'CRYPTO', blockchain: 'POLYGON', asset: 'USDC' },
      instructions: { address: EIP55_POLYGON, memo: null, tag: null },
    });
    const wallet = await t.server.services.destinations.getCryptoWallet(a.org.organizationId, v1.id);
    assert.equal(wallet.version, 3);
    await assert.rejects(t.server.services.destinations.getCryptoWallet(b.org.organizationId, v1.id), { statusCode: 404 });
  });

  test('a Stellar wallet: a new memo makes a new version, and removing the memo is refused', async () => {
    const v1 = (await create({ blockchain: 'STELLAR', asset: 'USDC', address: STELLAR_USDC_ISSUER, memo: '1001' })).body;
    const v2 = await t.request('PATCH', `/v1/crypto-wallets/${v1.id}`, { apiKey: a.org.apiKey, body: { memo: '1002' } });
    assert.equal(v2.body.version, 2);
    assert.equal(v2.body.memo, '1002');
    expectInvalid(await t.request('PATCH', `/v1/crypto-wallets/${v1.id}`, { apiKey: a.org.apiKey, body: { memo: null } }), 'memo', 'memo removed');
    const same = await t.request('PATCH', `/v1/crypto-wallets/${v1.id}`, { apiKey: a.org.apiKey, body: { memo: '1002' } });
    assert.equal(same.body.version, 2);
    assert.equal((await t.request('GET', `/v1/crypto-wallets/${v1.id}/versions/1`, { apiKey: a.org.apiKey })).body.memo, '1001');
  });

  test("another organization's ids answer 404 on every crypto-wallet endpoint", async () => {
    const mine = (await create({ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_P2PKH })).body;
    for (const id of [mine.id, NOT_A_KNOWN_ID]) {
      for (const [method, url, body] of [
        ['GET', `/v1/crypto-wallets/${id}`],
        ['PATCH', `/v1/crypto-wallets/${id}`, { address: BTC_BECH32 }],
        ['GET', `/v1/crypto-wallets/${id}/versions`],
        ['GET', `/v1/crypto-wallets/${id}/versions/1`],
      ] as const) {
        const res = await t.request(method, url, { apiKey: b.org.apiKey, ...(body ? { body } : {}) });
        assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
        assert.equal(res.body.code, 'not_found');
      }
    }
    const foreign = await create({ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_P2PKH }, { org: b.org, entityId: a.entityId });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.code, 'not_found');
    const list = await t.request('GET', '/v1/crypto-wallets', { apiKey: b.org.apiKey });
    assert.ok(!list.body.data.some((w: { id: string }) => w.id === mine.id));
    for (const entityId of [a.entityId, NOT_A_KNOWN_ID]) {
      const filtered = await t.request('GET', `/v1/crypto-wallets?entityId=${entityId}`, { apiKey: b.org.apiKey });
      assert.equal(filtered.status, 404, filtered.text);
      assert.deepEqual(filtered.body, { code: 'not_found', message: 'Entity not found' });
    }
    assert.equal((await t.request('GET', `/v1/crypto-wallets/${mine.id}`, { apiKey: a.org.apiKey })).body.address, BTC_P2PKH);
    // Fiat and crypto ids are not interchangeable.
    assert.equal((await t.request('GET', `/v1/fiat-accounts/${mine.id}`, { apiKey: a.org.apiKey })).status, 404);
  });

  test('the wallet list holds wallets only and the fiat-account list fiat accounts only', async () => {
    const d = await setup(t, 'D');
    const wallet = (await create({ blockchain: 'BITCOIN', asset: 'BTC', address: BTC_P2PKH }, d)).body;
    const account = await t.request('POST', '/v1/fiat-accounts', {
      apiKey: d.org.apiKey,
      body: { entityId: d.entityId, rail: { country: 'GB', currency: 'GBP', method: 'LOCAL' }, details: { sortCode: '404784', accountNumber: '12345678' }, beneficiary: { name: 'D Treasury Ltd' }, relationship: 'SELF' },
    });
    assert.equal(account.status, 201, account.text);
    for (const query of ['', `?entityId=${d.entityId}`]) {
      const wallets = await t.request('GET', `/v1/crypto-wallets${query}`, { apiKey: d.org.apiKey });
      assert.deepEqual(wallets.body.data.map((w: { id: string }) => w.id), [wallet.id], query);
      assert.equal(wallets.body.meta.total, 1, query);
      const accounts = await t.request('GET', `/v1/fiat-accounts${query}`, { apiKey: d.org.apiKey });
      assert.deepEqual(accounts.body.data.map((a: { id: string }) => a.id), [account.body.id], query);
      assert.equal(accounts.body.meta.total, 1, query);
    }
  });

  test('GET /v1/crypto-wallets lists by entity with cursor pages', async () => {
    const c = await setup(t, 'C');
    const ids: string[] = [];
    for (const address of [EIP55, EIP55_POLYGON, EIP55.toLowerCase()]) ids.push((await create({ blockchain: 'ETHEREUM', asset: 'USDC', address }, c)).body.id);
    const page1 = await t.request('GET', `/v1/crypto-wallets?limit=2&entityId=${c.entityId}`, { apiKey: c.org.apiKey });
    assert.equal(page1.body.meta.total, 3);
    const page2 = await t.request('GET', `/v1/crypto-wallets?limit=2&entityId=${c.entityId}&cursor=${page1.body.meta.nextCursor}`, { apiKey: c.org.apiKey });
    assert.deepEqual([...page1.body.data, ...page2.body.data].map((w: { id: string }) => w.id), ids);
    assert.equal(page2.body.meta.nextCursor, null);
  });

  test('GET /v1/crypto-wallets/schemas lists every crypto rail of the directory with its address format and memo/tag rules', async () => {
    const res = await t.request('GET', '/v1/crypto-wallets/schemas', { apiKey: a.org.apiKey });
    assert.equal(res.status, 200);
    const byChain = new Map(res.body.blockchains.map((c: { blockchain: string }) => [c.blockchain, c]));
    for (const r of t.server.services.rails.cryptoRails()) {
      const chain = byChain.get(r.blockchain) as { assets: string[] } | undefined;
      assert.ok(chain?.assets.includes(r.asset), `${r.blockchain}/${r.asset} is served`);
    }
    for (const [blockchain, assets] of [['ETHEREUM', ['ETH', 'USDC']], ['POLYGON', ['USDC']], ['BITCOIN', ['BTC']], ['STELLAR', ['USDC']]] as const) {
      const chain = byChain.get(blockchain) as { assets: string[]; addressFormat: string; memo: string; tag: string; schema: { required: string[]; properties: Record<string, { format?: string }> } };
      assert.deepEqual([...chain.assets].sort(), [...assets].sort(), blockchain);
      assert.ok(chain.addressFormat.length > 20);
      assert.ok(chain.schema.required.includes('address'));
      assert.equal(chain.tag, 'NOT_SUPPORTED');
    }
    const stellar = byChain.get('STELLAR') as { memo: string; schema: { required: string[] } };
    assert.equal(stellar.memo, 'REQUIRED');
    assert.deepEqual(stellar.schema.required, ['address', 'memo']);
    assert.equal((byChain.get('ETHEREUM') as { memo: string }).memo, 'NOT_SUPPORTED');
    assert.match((byChain.get('BITCOIN') as { addressFormat: string }).addressFormat, /testnet/);
  });
});

describe('crypto wallets (production)', () => {
  let t: TestServer;
  let dir: string;
  before(async () => {
    // Production refuses simulators; a declared (DOWN) provider is enough to put BITCOIN/BTC in the directory.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-wallets-'));
    const file = path.join(dir, 'providers.production.json');
    const payout = (blockchain: string, asset: string) => ({ kind: 'PAYOUT', rail: { type: 'CRYPTO', blockchain, asset }, fees: { fixed: '0', percentBps: 0, fxSpreadBps: 0 }, etaSeconds: 600 });
    fs.writeFileSync(
      file,
      JSON.stringify({
        environment: 'production',
        providers: [
          { id: 'btc-custodian', displayName: 'BTC Custodian', adapter: 'custodian-api', availability: 'DOWN', credentials: {}, capabilities: [payout('BITCOIN', 'BTC')] },
        ],
      }),
    );
    t = await startTestServer({ CORRIDOR_ENV: 'production', CORRIDOR_SIGNUP: 'open', CORRIDOR_PROVIDERS_FILE: file });
  });
  after(async () => {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('Bitcoin wallets must be mainnet in production: testnet is refused', async () => {
    const { org, entityId } = await setup(t, 'Prod');
    const post = (address: string) => t.request('POST', '/v1/crypto-wallets', { apiKey: org.apiKey, body: { entityId, blockchain: 'BITCOIN', asset: 'BTC', address, relationship: 'SELF' } });
    assert.equal((await post(BTC_BECH32)).status, 201);
    assert.equal((await post(BTC_P2PKH)).status, 201);
    const testnet = await post(BTC_TESTNET);
    expectInvalid(testnet, 'address', 'testnet in production');
    assert.match(testnet.body.details[0].message, /mainnet/);
    const schemas = await t.request('GET', '/v1/crypto-wallets/schemas', { apiKey: org.apiKey });
    assert.deepEqual(schemas.body.blockchains.map((c: { blockchain: string }) => c.blockchain), ['BITCOIN']);
    assert.doesNotMatch(schemas.body.blockchains[0].addressFormat, /testnet/);
  });
});
