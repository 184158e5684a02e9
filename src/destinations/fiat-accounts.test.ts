import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestResponse, TestServer } from '../../test/helpers/server.ts';

const NOT_A_KNOWN_ID = '00000000-0000-4000-8000-000000000000';
const PERSON = { name: 'Ada Lovelace', type: 'INDIVIDUAL' };
const ADDRESS = { line1: '1 Main Street', city: 'Springfield', postalCode: '12345', country: 'US' };

type Rail = { country: string; currency: string; method: string };
const rail = (key: string): Rail => {
  const [country, currency, method] = key.split('/') as [string, string, string];
  return { country, currency, method };
};

/** Every fiat rail of the sandbox network (notes/SANDBOX_NETWORK.md) with a valid destination on it. */
const VALID: Record<string, { details: Record<string, unknown>; beneficiary: Record<string, unknown> }> = {
  'US/USD/ACH': { details: { routingNumber: '021000021', accountNumber: '123456789', accountType: 'CHECKING' }, beneficiary: PERSON },
  'US/USD/WIRE': { details: { routingNumber: '026009593', accountNumber: '123456789' }, beneficiary: { ...PERSON, address: ADDRESS } },
  'DE/EUR/SEPA': { details: { iban: 'DE89370400440532013000', bic: 'DEUTDEFF' }, beneficiary: PERSON },
  'FR/EUR/SEPA': { details: { iban: 'FR1420041010050500013M02606', bic: 'BNPAFRPP' }, beneficiary: PERSON },
  'ES/EUR/SEPA': { details: { iban: 'ES9121000418450200051332' }, beneficiary: PERSON },
  'NL/EUR/SEPA': { details: { iban: 'NL91ABNA0417164300' }, beneficiary: PERSON },
  'IT/EUR/SEPA': { details: { iban: 'IT60X0542811101000000123456' }, beneficiary: PERSON },
  'GB/GBP/LOCAL': { details: { sortCode: '404784', accountNumber: '12345678' }, beneficiary: PERSON },
  'BR/BRL/PIX': { details: { pixKey: '529.982.247-25', pixKeyType: 'CPF' }, beneficiary: PERSON },
  'MX/MXN/SPEI': { details: { clabe: '002010077777777771' }, beneficiary: PERSON },
  'NG/NGN/LOCAL': { details: { bankCode: '058', accountNumber: '0123456785' }, beneficiary: PERSON },
  'KE/KES/LOCAL': { details: { phoneNumber: '+254712345678', network: 'MPESA' }, beneficiary: PERSON },
  'PH/PHP/LOCAL': { details: { bankCode: 'BNORPHMM', accountNumber: '1234567890' }, beneficiary: PERSON },
  'AR/ARS/LOCAL': { details: { cbu: '2850590940090418135201' }, beneficiary: PERSON },
  'SG/SGD/SWIFT': { details: { bic: 'DBSSSGSG', accountNumber: '0123456789' }, beneficiary: { ...PERSON, address: { ...ADDRESS, country: 'SG' } } },
  'AE/AED/SWIFT': { details: { bic: 'EBILAEAD', iban: 'AE070331234567890123456' }, beneficiary: { ...PERSON, address: { ...ADDRESS, country: 'AE' } } },
  'JP/JPY/SWIFT': { details: { bic: 'BOTKJPJT', accountNumber: '1234567' }, beneficiary: { ...PERSON, address: { ...ADDRESS, country: 'JP' } } },
  'CH/CHF/SWIFT': { details: { bic: 'UBSWCHZH80A', iban: 'CH9300762011623852957' }, beneficiary: { ...PERSON, address: { ...ADDRESS, country: 'CH' } } },
};

/**
 * [rail, change to a valid destination, the one field path the 422 must name]: one failing case per rule.
 * The change is merged into the valid details (undefined removes a field); a beneficiary replaces the valid one.
 */
const INVALID: Array<[string, { details?: Record<string, unknown>; beneficiary?: Record<string, unknown> }, string]> = [
  ['US/USD/ACH', { details: { routingNumber: '021000022' } }, 'details.routingNumber'], // ABA checksum
  ['US/USD/ACH', { details: { routingNumber: '02100002' } }, 'details.routingNumber'], // 8 digits
  ['US/USD/ACH', { details: { routingNumber: '500000005' } }, 'details.routingNumber'], // checksum fits, but 50 is no assigned prefix
  ['US/USD/ACH', { details: { accountNumber: undefined } }, 'details.accountNumber'], // missing
  ['US/USD/ACH', { details: { accountType: 'BROKERAGE' } }, 'details.accountType'],
  ['US/USD/WIRE', { beneficiary: PERSON }, 'beneficiary.address'], // address required on WIRE
  ['US/USD/WIRE', { beneficiary: { ...PERSON, address: { ...ADDRESS, country: 'XX' } } }, 'beneficiary.address.country'], // ISO 3166
  ['DE/EUR/SEPA', { details: { iban: 'DE89370400440532013001' } }, 'details.iban'], // flipped digit
  ['DE/EUR/SEPA', { details: { iban: 'FR1420041010050500013M02606' } }, 'details.iban'], // IBAN of another country
  ['DE/EUR/SEPA', { details: { bic: 'DEUTZZFF' } }, 'details.bic'], // no such country
  ['DE/EUR/SEPA', { details: { bic: 'BNPAFRPP' } }, 'details.bic'], // BIC of another country
  ['DE/EUR/SEPA', { details: { iban: undefined } }, 'details.iban'], // missing
  ['DE/EUR/SEPA', { details: { accountNumber: '1' } }, 'details.accountNumber'], // not a SEPA field
  ['DE/EUR/SEPA', { beneficiary: { type: 'INDIVIDUAL' } }, 'beneficiary.name'],
  ['GB/GBP/LOCAL', { details: { sortCode: '40-47-84' } }, 'details.sortCode'],
  ['GB/GBP/LOCAL', { details: { accountNumber: '1234567' } }, 'details.accountNumber'],
  ['BR/BRL/PIX', { details: { pixKey: '529.982.247-26', pixKeyType: 'CPF' } }, 'details.pixKey'], // CPF check digit
  ['BR/BRL/PIX', { details: { pixKey: '11.222.333/0001-82', pixKeyType: 'CNPJ' } }, 'details.pixKey'], // CNPJ check digit
  ['BR/BRL/PIX', { details: { pixKey: '529.982.247-25', pixKeyType: 'EMAIL' } }, 'details.pixKey'], // kind mismatch
  ['BR/BRL/PIX', { details: { pixKey: 'fulano@example', pixKeyType: 'EMAIL' } }, 'details.pixKey'],
  ['BR/BRL/PIX', { details: { pixKey: '+5511387654321', pixKeyType: 'PHONE' } }, 'details.pixKey'], // landline
  ['BR/BRL/PIX', { details: { pixKey: 'not-a-uuid', pixKeyType: 'EVP' } }, 'details.pixKey'],
  ['MX/MXN/SPEI', { details: { clabe: '002010077777777772' } }, 'details.clabe'], // CLABE check digit
  ['NG/NGN/LOCAL', { details: { accountNumber: '0123456789' } }, 'details.accountNumber'], // NUBAN check digit
  ['NG/NGN/LOCAL', { details: { bankCode: '044' } }, 'details.accountNumber'], // valid for 058, not for 044
  ['KE/KES/LOCAL', { details: { phoneNumber: '+255712345678' } }, 'details.phoneNumber'], // Tanzanian number
  ['KE/KES/LOCAL', { details: { phoneNumber: '+254201234567' } }, 'details.phoneNumber'], // Nairobi landline, no mobile wallet
  ['KE/KES/LOCAL', { details: { network: 'MTN' } }, 'details.network'],
  ['PH/PHP/LOCAL', { details: { bankCode: 'DEUTDEFF' } }, 'details.bankCode'], // not a PH bank
  ['AR/ARS/LOCAL', { details: { cbu: '2850590940090418135202' } }, 'details.cbu'], // CBU check digit
  ['SG/SGD/SWIFT', { details: { bic: 'DEUTDEFF' } }, 'details.bic'], // BIC of another country
  ['SG/SGD/SWIFT', { beneficiary: PERSON }, 'beneficiary.address'], // address required on SWIFT
  ['AE/AED/SWIFT', { details: { iban: undefined } }, 'details.iban'], // AE uses IBANs
  ['CH/CHF/SWIFT', { details: { iban: 'CH9300762011623852958' } }, 'details.iban'],
  ['CH/CHF/SWIFT', { details: { iban: 'DE89370400440532013000' } }, 'details.iban'], // IBAN of another country
];

describe('fiat accounts', () => {
  let t: TestServer;
  let a: TestOrganization;
  let b: TestOrganization;
  let entityA: string;
  let entityB: string;

  const create = (org: TestOrganization, key: string, change: { details?: Record<string, unknown>; beneficiary?: Record<string, unknown> } = {}, extra: Record<string, unknown> = {}) =>
    t.request('POST', '/v1/fiat-accounts', {
      apiKey: org.apiKey,
      body: {
        entityId: org === a ? entityA : entityB,
        rail: rail(key),
        details: { ...VALID[key]!.details, ...change.details },
        beneficiary: change.beneficiary ?? VALID[key]!.beneficiary,
        relationship: 'THIRD_PARTY',
        ...extra,
      },
    });

  const expectInvalid = (res: TestResponse, path: string, what: string) => {
    assert.equal(res.status, 422, `${what}: ${res.text}`);
    assert.equal(res.body.code, 'validation_error', what);
    assert.ok(res.body.details.some((d: { path: string }) => d.path === path), `${what}: expected ${path} in ${res.text}`);
  };

  before(async () => {
    t = await startTestServer();
    a = await t.newOrganization('A');
    b = await t.newOrganization('B');
    const entity = (org: TestOrganization) => t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'INDIVIDUAL', firstName: 'Ada', lastName: 'Lovelace', country: 'GB' } });
    entityA = (await entity(a)).body.id;
    entityB = (await entity(b)).body.id;
  });
  after(async () => t.close());

  test('a valid destination is accepted on every fiat rail of the sandbox network', async () => {
    for (const key of Object.keys(VALID)) {
      const res = await create(a, key);
      assert.equal(res.status, 201, `${key}: ${res.text}`);
      assert.deepEqual(res.body.rail, rail(key));
      assert.equal(res.body.version, 1);
      assert.equal(res.body.entityId, entityA);
      assert.equal(res.body.relationship, 'THIRD_PARTY');
      assert.equal(res.body.versionCreatedBy.type, 'API_KEY');
    }
  });

  test('each validation rule refuses a real-world bad value with 422 naming the field', async () => {
    for (const [key, change, path] of INVALID) {
      const res = await create(a, key, change);
      expectInvalid(res, path, `${key} ${JSON.stringify(change)}`);
      assert.deepEqual(res.body.details.map((d: { path: string }) => d.path), [path], `${key}: only ${path} is wrong`);
    }
  });

  test('identifiers are stored in their canonical form: compact IBAN, PIX key in DICT form', async () => {
    const sepa = await create(a, 'DE/EUR/SEPA', { details: { iban: 'de89 3704 0044 0532 0130 00', bic: 'deutdeff' } });
    assert.equal(sepa.status, 201, sepa.text);
    assert.deepEqual(sepa.body.details, { iban: 'DE89370400440532013000', bic: 'DEUTDEFF' });
    const cases: Array<[Record<string, string>, string]> = [
      [{ pixKey: '529.982.247-25', pixKeyType: 'CPF' }, '52998224725'],
      [{ pixKey: '11.222.333/0001-81', pixKeyType: 'CNPJ' }, '11222333000181'],
      [{ pixKey: 'Fulano@Example.COM', pixKeyType: 'EMAIL' }, 'fulano@example.com'],
      [{ pixKey: '+55 (11) 98765-4321', pixKeyType: 'PHONE' }, '+5511987654321'],
      [{ pixKey: '71C7D9BE-4B85-4E43-9F1C-1F3B8B4E9A2D', pixKeyType: 'EVP' }, '71c7d9be-4b85-4e43-9f1c-1f3b8b4e9a2d'],
    ];
    for (const [details, stored] of cases) {
      const res = await create(a, 'BR/BRL/PIX', { details });
      assert.equal(res.status, 201, `${JSON.stringify(details)}: ${res.text}`);
      assert.equal(res.body.details.pixKey, stored);
    }
  });

  test('a rail outside the rail directory answers 422 unsupported_route; a malformed rail names the field', async () => {
    for (const key of ['US/USD/SEPA', 'BE/EUR/SEPA', 'FR/EUR/ACH', 'GB/EUR/LOCAL']) {
      const res = await t.request('POST', '/v1/fiat-accounts', { apiKey: a.apiKey, body: { entityId: entityA, rail: rail(key), details: {}, beneficiary: PERSON, relationship: 'SELF' } });
      assert.equal(res.status, 422, `${key}: ${res.text}`);
      assert.equal(res.body.code, 'unsupported_route', key);
    }
    const cases: Array<[Rail, string]> = [
      [{ country: 'XX', currency: 'EUR', method: 'SEPA' }, 'rail.country'],
      [{ country: 'DE', currency: 'EUX', method: 'SEPA' }, 'rail.currency'],
      [{ country: 'DE', currency: 'EUR', method: 'BANK' }, 'rail.method'],
    ];
    for (const [r, path] of cases) {
      expectInvalid(await t.request('POST', '/v1/fiat-accounts', { apiKey: a.apiKey, body: { entityId: entityA, rail: r, details: {}, beneficiary: PERSON, relationship: 'SELF' } }), path, path);
    }
    expectInvalid(await create(a, 'DE/EUR/SEPA', {}, { relationship: 'FRIEND' }), 'relationship', 'relationship');
  });

  test('PATCH of instructions creates version 2 with the same id; version 1 stays readable with the old instructions', async () => {
    const v1 = (await create(a, 'DE/EUR/SEPA', {}, { nickname: 'Rent' })).body;
    const patched = await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { token: a.token, body: { details: { iban: 'DE75512108001245126199' } } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.id, v1.id);
    assert.equal(patched.body.version, 2);
    // PATCH replaces the named field as a whole: the BIC of version 1 is gone.
    assert.deepEqual(patched.body.details, { iban: 'DE75512108001245126199' });
    assert.deepEqual(patched.body.versionCreatedBy, { type: 'USER', id: a.userId });
    assert.equal(patched.body.nickname, 'Rent');
    assert.equal(patched.body.createdAt, v1.createdAt);
    assert.equal(patched.body.updatedAt, patched.body.versionCreatedAt, 'the edit is the last change');

    const current = await t.request('GET', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey });
    assert.equal(current.body.version, 2);
    const old = await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions/1`, { apiKey: a.apiKey });
    assert.equal(old.status, 200);
    assert.deepEqual(old.body.details, { iban: 'DE89370400440532013000', bic: 'DEUTDEFF' });
    assert.equal(old.body.createdBy.type, 'API_KEY');
    assert.equal(old.body.createdAt, v1.versionCreatedAt);

    const versions = await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions`, { apiKey: a.apiKey });
    assert.equal(versions.status, 200);
    assert.deepEqual(versions.body.data.map((v: { version: number }) => v.version), [1, 2]);
    assert.equal(versions.body.meta.total, 2);
    const firstPage = await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions?limit=1`, { apiKey: a.apiKey });
    assert.deepEqual(firstPage.body.data.map((v: { version: number }) => v.version), [1]);
    const secondPage = await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions?limit=1&cursor=${firstPage.body.meta.nextCursor}`, { apiKey: a.apiKey });
    assert.deepEqual(secondPage.body.data.map((v: { version: number }) => v.version), [2]);
    assert.equal(secondPage.body.meta.nextCursor, null);
    assert.equal((await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions/3`, { apiKey: a.apiKey })).status, 404);
    // Regression: a version number past PostgreSQL's integer, in the path or in a hand-made cursor, answered 500.
    const huge = await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions/2147483648`, { apiKey: a.apiKey });
    assert.equal(huge.status, 422, huge.text);
    assert.equal(huge.body.details[0].path, 'path.version');
    assert.equal((await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions/2147483647`, { apiKey: a.apiKey })).status, 404);
    for (const v of [2147483648, 1e300]) {
      const cursor = Buffer.from(JSON.stringify({ v })).toString('base64url');
      const res = await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions?cursor=${cursor}`, { apiKey: a.apiKey });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'invalid_cursor');
    }

    // The transfer engine's view: the snapshot of the current version and of a past one.
    const destinations = t.server.services.destinations;
    const snap = await destinations.snapshot(a.organizationId, { type: 'FIAT_ACCOUNT', id: v1.id });
    assert.deepEqual(snap, {
      type: 'FIAT_ACCOUNT',
      id: v1.id,
      version: 2,
      relationship: 'THIRD_PARTY',
      entityId: entityA,
      rail: { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' },
      instructions: { details: { iban: 'DE75512108001245126199' }, beneficiary: PERSON },
    });
    const snap1 = await destinations.snapshot(a.organizationId, { type: 'FIAT_ACCOUNT', id: v1.id, version: 1 });
    assert.deepEqual(snap1.instructions, { details: { iban: 'DE89370400440532013000', bic: 'DEUTDEFF' }, beneficiary: PERSON });
    await assert.rejects(destinations.snapshot(b.organizationId, { type: 'FIAT_ACCOUNT', id: v1.id }), { statusCode: 404 });
    await assert.rejects(destinations.getFiatAccount(b.organizationId, v1.id), { statusCode: 404 });
  });

  test('PATCH of the nickname only, or of unchanged instructions, keeps the version', async () => {
    const v1 = (await create(a, 'GB/GBP/LOCAL')).body;
    const renamed = await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { nickname: 'Savings' } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.version, 1);
    assert.equal(renamed.body.nickname, 'Savings');
    const same = await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { details: { accountNumber: '12345678', sortCode: '404784' } } });
    assert.equal(same.body.version, 1);
    const cleared = await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { nickname: null } });
    assert.equal(cleared.body.nickname, null);
    assert.equal(cleared.body.version, 1);
    const relationship = await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { relationship: 'SELF' } });
    assert.equal(relationship.body.version, 2);
    assert.equal(relationship.body.relationship, 'SELF');
  });

  test('two edits racing on one account both land, as versions 2 and 3; neither is lost', async () => {
    const v1 = (await create(a, 'DE/EUR/SEPA')).body;
    const ibans = ['DE75512108001245126199', 'DE02120300000000202051'];
    const results = await Promise.all(ibans.map((iban) => t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { details: { iban } } })));
    for (const res of results) assert.equal(res.status, 200, res.text);
    assert.deepEqual(results.map((r) => r.body.version).sort(), [2, 3]);
    const versions = (await t.request('GET', `/v1/fiat-accounts/${v1.id}/versions`, { apiKey: a.apiKey })).body;
    assert.deepEqual(versions.data.map((v: { version: number }) => v.version), [1, 2, 3]);
    assert.deepEqual(versions.data.slice(1).map((v: { details: { iban: string } }) => v.details.iban).sort(), [...ibans].sort());
    const current = (await t.request('GET', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey })).body;
    assert.equal(current.version, 3);
    assert.deepEqual(current.details, versions.data[2].details);
  });

  test('PATCH is validated against the (new) rail and a refused edit leaves the account as it was', async () => {
    const v1 = (await create(a, 'DE/EUR/SEPA')).body;
    expectInvalid(await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { details: { iban: 'DE89370400440532013001' } } }), 'details.iban', 'bad iban');
    // A new rail whose schema the old details do not meet: the details must change with it.
    expectInvalid(await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { rail: rail('FR/EUR/SEPA') } }), 'details.iban', 'rail without details');
    expectInvalid(await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: {} }), '', 'empty patch');
    const unchanged = await t.request('GET', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey });
    assert.equal(unchanged.body.version, 1);
    assert.deepEqual(unchanged.body.details, v1.details);
    const moved = await t.request('PATCH', `/v1/fiat-accounts/${v1.id}`, { apiKey: a.apiKey, body: { rail: rail('FR/EUR/SEPA'), details: VALID['FR/EUR/SEPA']!.details } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.version, 2);
    assert.deepEqual(moved.body.rail, rail('FR/EUR/SEPA'));
  });

  test("another organization's ids answer 404 on every fiat-account endpoint", async () => {
    const mine = (await create(a, 'MX/MXN/SPEI')).body;
    for (const id of [mine.id, NOT_A_KNOWN_ID]) {
      for (const [method, url, body] of [
        ['GET', `/v1/fiat-accounts/${id}`],
        ['PATCH', `/v1/fiat-accounts/${id}`, { nickname: 'stolen' }],
        ['GET', `/v1/fiat-accounts/${id}/versions`],
        ['GET', `/v1/fiat-accounts/${id}/versions/1`],
      ] as const) {
        const res = await t.request(method, url, { apiKey: b.apiKey, ...(body ? { body } : {}) });
        assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
        assert.equal(res.body.code, 'not_found');
      }
    }
    // Saving a destination for another organization's entity.
    const foreign = await t.request('POST', '/v1/fiat-accounts', { apiKey: b.apiKey, body: { entityId: entityA, rail: rail('MX/MXN/SPEI'), ...VALID['MX/MXN/SPEI'], relationship: 'SELF' } });
    assert.equal(foreign.status, 404);
    // Filtering the list by another organization's entity (or one that does not exist) is 404 too.
    for (const entityId of [entityA, NOT_A_KNOWN_ID]) {
      const list = await t.request('GET', `/v1/fiat-accounts?entityId=${entityId}`, { apiKey: b.apiKey });
      assert.equal(list.status, 404, list.text);
      assert.deepEqual(list.body, { code: 'not_found', message: 'Entity not found' });
    }
    assert.equal((await t.request('GET', `/v1/fiat-accounts/${mine.id}`, { apiKey: a.apiKey })).body.nickname, null);
  });

  test('GET /v1/fiat-accounts pages by cursor and filters by entity', async () => {
    const org = await t.newOrganization('Lister');
    const e1 = (await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'BUSINESS', legalName: 'One Ltd', country: 'GB' } })).body.id;
    const e2 = (await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'BUSINESS', legalName: 'Two Ltd', country: 'GB' } })).body.id;
    const ids: string[] = [];
    for (const entityId of [e1, e1, e2]) {
      const res = await t.request('POST', '/v1/fiat-accounts', { apiKey: org.apiKey, body: { entityId, rail: rail('GB/GBP/LOCAL'), ...VALID['GB/GBP/LOCAL'], relationship: 'SELF' } });
      ids.push(res.body.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await t.request('GET', `/v1/fiat-accounts?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { apiKey: org.apiKey });
      assert.equal(res.body.meta.total, 3);
      seen.push(...res.body.data.map((x: { id: string }) => x.id));
      cursor = res.body.meta.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, ids);
    const filtered = await t.request('GET', `/v1/fiat-accounts?entityId=${e2}`, { apiKey: org.apiKey });
    assert.deepEqual(filtered.body.data.map((x: { id: string }) => x.id), [ids[2]]);
    assert.equal(filtered.body.meta.total, 1);
  });

  test('GET /v1/fiat-accounts/schemas serves a schema for every sandbox rail and refuses unknown rails', async () => {
    const directory = t.server.services.rails.fiatRails().map((r) => `${r.country}/${r.currency}/${r.method}`);
    for (const key of new Set([...Object.keys(VALID), ...directory])) {
      const r = rail(key);
      const res = await t.request('GET', `/v1/fiat-accounts/schemas?country=${r.country}&currency=${r.currency}&method=${r.method}`, { apiKey: a.apiKey });
      assert.equal(res.status, 200, `${key}: ${res.text}`);
      assert.deepEqual(res.body.rail, r);
      assert.equal(res.body.details.type, 'object');
      assert.equal(res.body.beneficiary.type, 'object');
      assert.ok(res.body.beneficiary.required.includes('name'));
      if (VALID[key]) {
        const fields = Object.keys(VALID[key].details);
        for (const f of fields) assert.ok(f in res.body.details.properties, `${key} serves ${f}`);
      }
    }
    const sepa = (await t.request('GET', '/v1/fiat-accounts/schemas?country=DE&currency=EUR&method=SEPA', { apiKey: a.apiKey })).body;
    assert.equal(sepa.details.properties.iban.format, 'iban');
    assert.deepEqual(sepa.details.required, ['iban']);
    assert.deepEqual(sepa.currency, { code: 'EUR', minorUnits: 2 });
    const jpy = (await t.request('GET', '/v1/fiat-accounts/schemas?country=JP&currency=JPY&method=SWIFT', { apiKey: a.apiKey })).body;
    assert.equal(jpy.currency.minorUnits, 0);
    assert.ok(jpy.beneficiary.required.includes('address'));
    const ae = (await t.request('GET', '/v1/fiat-accounts/schemas?country=AE&currency=AED&method=SWIFT', { apiKey: a.apiKey })).body;
    assert.deepEqual([...ae.details.required].sort(), ['bic', 'iban']);

    const unknown = await t.request('GET', '/v1/fiat-accounts/schemas?country=US&currency=USD&method=SEPA', { apiKey: a.apiKey });
    assert.equal(unknown.status, 422);
    assert.equal(unknown.body.code, 'unsupported_route');
    const lower = await t.request('GET', '/v1/fiat-accounts/schemas?country=de&currency=EUR&method=SEPA', { apiKey: a.apiKey });
    assert.equal(lower.status, 422);
    assert.deepEqual(lower.body.details.map((d: { path: string }) => d.path), ['query.country']);
    const missing = await t.request('GET', '/v1/fiat-accounts/schemas?country=US', { apiKey: a.apiKey });
    assert.equal(missing.status, 422);
    assert.ok(missing.body.details.some((d: { path: string }) => d.path === 'query.currency'));
  });

  test('scopes: destinations:read may read but not write', async () => {
    const reader = (await t.request('POST', '/v1/api-keys', { token: a.token, body: { name: 'reader', scopes: ['destinations:read'] } })).body.secret as string;
    const res = await t.request('POST', '/v1/fiat-accounts', { apiKey: reader, body: { entityId: entityA, rail: rail('MX/MXN/SPEI'), ...VALID['MX/MXN/SPEI'], relationship: 'SELF' } });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'insufficient_permissions');
    assert.equal((await t.request('GET', '/v1/fiat-accounts', { apiKey: reader })).status, 200);
    assert.equal((await t.request('GET', '/v1/fiat-accounts/schemas?country=MX&currency=MXN&method=SPEI', { apiKey: reader })).status, 200);
  });
});
