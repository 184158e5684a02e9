import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { operatorToken } from '../../test/helpers/ops.ts';
import { loadConfig } from '../platform/config.ts';
import { createServer } from '../server.ts';
import { createLogger } from '../platform/logger.ts';
import { DEFAULT_PROVIDER_FILES, ProviderConfigError, loadEnvironmentProviders, loadProviderFile } from './configuration.ts';
import { ProviderRegistry } from './service.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-providers-'));
const writeFile = (name: string, data: unknown) => {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, typeof data === 'string' ? data : JSON.stringify(data, null, 2));
  return file;
};

/** Every credential value in the sandbox file; none may ever leave the service. */
const sandboxCredentials = (): string[] =>
  loadEnvironmentProviders({ env: 'sandbox', providersFile: null }).providers.flatMap((p) => Object.values(p.credentials).filter((v): v is string => typeof v === 'string'));

describe('providers', () => {
  let t: TestServer;
  let opsToken: string;
  before(async () => {
    t = await startTestServer();
    opsToken = await operatorToken(t);
  });
  after(async () => {
    await t.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the sandbox network has at least ten simulated providers and every fiat method', () => {
    const providers = t.server.services.providers.all();
    assert.ok(providers.length >= 10, `only ${providers.length} providers`);
    const methods = new Set(providers.flatMap((p) => p.capabilities().flatMap((c) => (c.kind !== 'CONVERSION' && c.rail.type === 'FIAT' ? [c.rail.method] : []))));
    assert.deepEqual([...methods].sort(), ['ACH', 'LOCAL', 'PIX', 'SEPA', 'SPEI', 'SWIFT', 'WIRE']);
  });

  test('ops endpoints refuse callers who are not SERVICE_OPS', async () => {
    const org = await t.newOrganization();
    for (const credentials of [{ token: org.token }, { apiKey: org.apiKey }]) {
      const list = await t.request('GET', '/v1/ops/providers', credentials);
      assert.equal(list.status, 403);
      assert.equal(list.body.code, 'insufficient_permissions');
      const patch = await t.request('PATCH', '/v1/ops/providers/sim-us-ach', { ...credentials, body: { status: 'DOWN' } });
      assert.equal(patch.status, 403);
    }
    assert.equal((await t.request('GET', '/v1/ops/providers')).status, 401);
    assert.equal((await t.server.services.providers.view('sim-us-ach')).status, 'ACTIVE');
  });

  test('GET /v1/ops/providers shows configured and current availability', async () => {
    const res = await t.request('GET', '/v1/ops/providers', { token: opsToken });
    assert.equal(res.status, 200);
    assert.equal(res.body.meta.total, res.body.data.length);
    const ph = res.body.data.find((p: { id: string }) => p.id === 'sim-ph-instapay');
    assert.deepEqual(
      { ...ph, capabilities: undefined },
      {
        id: 'sim-ph-instapay',
        displayName: 'Sandbox InstaPay (PH)',
        adapter: 'simulator',
        integrated: true,
        simulated: true,
        configuredStatus: 'DEGRADED',
        status: 'DEGRADED',
        overridden: false,
        statusReason: null,
        statusUpdatedAt: null,
        capabilities: undefined,
      },
    );
    assert.deepEqual(ph.capabilities, [
      { kind: 'PAYOUT', rail: { type: 'FIAT', country: 'PH', currency: 'PHP', method: 'LOCAL' }, fees: { fixed: '15.00', percentBps: 0, fxSpreadBps: 0 }, etaSeconds: 900 },
    ]);
  });

  test('GET /v1/ops/providers pages with ?limit and ?cursor, total counts every page', async () => {
    const configured = t.server.services.providers.all().length;
    const all = await t.request('GET', '/v1/ops/providers', { token: opsToken });
    assert.equal(all.body.meta.total, configured);
    assert.equal(all.body.data.length, configured, 'the sandbox network fits in the default page of 25');
    assert.equal(all.body.meta.nextCursor, null);
    const allIds = all.body.data.map((p: { id: string }) => p.id);
    assert.deepEqual(allIds, [...allIds].sort(), 'id order');

    for (const limit of [2, 1]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await t.request('GET', `/v1/ops/providers?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { token: opsToken });
        assert.equal(res.status, 200);
        assert.equal(res.body.meta.total, configured);
        assert.ok(res.body.data.length <= limit);
        seen.push(...res.body.data.map((p: { id: string }) => p.id));
        cursor = res.body.meta.nextCursor;
        pages++;
      } while (cursor && pages < 50);
      assert.equal(pages, Math.ceil(configured / limit), `limit=${limit}`);
      assert.deepEqual(seen, allIds, 'every provider once, in the order of one big page');
    }
  });

  test('GET /v1/ops/providers refuses a bad limit, a foreign cursor and unknown query fields', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=ten', 'status=DOWN']) {
      const res = await t.request('GET', `/v1/ops/providers?${query}`, { token: opsToken });
      assert.equal(res.status, 422, query);
      assert.equal(res.body.code, 'validation_error', query);
    }
    const forged = Buffer.from(JSON.stringify({ p: '../../etc' })).toString('base64url');
    // The shape of a cursor from the other lists, which name rows by (createdAt, id).
    const rowCursor = Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', '00000000-0000-4000-8000-000000000000'])).toString('base64url');
    for (const cursor of ['garbage', forged, rowCursor]) {
      const res = await t.request('GET', `/v1/ops/providers?cursor=${cursor}`, { token: opsToken });
      assert.equal(res.status, 400, cursor);
      assert.deepEqual(res.body, { code: 'invalid_cursor', message: 'The cursor is not one this API issued' });
    }
  });

  test('PATCH /v1/ops/providers/:id overrides availability and null restores the configured value', async () => {
    const down = await t.request('PATCH', '/v1/ops/providers/sim-gb-fps', { token: opsToken, body: { status: 'DOWN', reason: 'bank maintenance' } });
    assert.equal(down.status, 200);
    assert.equal(down.body.status, 'DOWN');
    assert.equal(down.body.configuredStatus, 'ACTIVE');
    assert.equal(down.body.overridden, true);
    assert.equal(down.body.statusReason, 'bank maintenance');
    assert.match(down.body.statusUpdatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(t.server.services.providers.get('sim-gb-fps')!.availability(), 'DOWN');

    const restored = await t.request('PATCH', '/v1/ops/providers/sim-gb-fps', { token: opsToken, body: { status: null } });
    assert.equal(restored.status, 200);
    assert.deepEqual([restored.body.status, restored.body.overridden, restored.body.statusReason], ['ACTIVE', false, null]);
    assert.equal(t.server.services.providers.get('sim-gb-fps')!.availability(), 'ACTIVE');
  });

  test('PATCH refuses unknown providers and bad statuses', async () => {
    const missing = await t.request('PATCH', '/v1/ops/providers/no-such-provider', { token: opsToken, body: { status: 'DOWN' } });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'not_found');
    const bad = await t.request('PATCH', '/v1/ops/providers/sim-us-ach', { token: opsToken, body: { status: 'SLEEPY' } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.code, 'validation_error');
    assert.ok(bad.body.details.some((d: { path: string }) => d.path === 'status'));
    const empty = await t.request('PATCH', '/v1/ops/providers/sim-us-ach', { token: opsToken, body: {} });
    assert.equal(empty.status, 422);
  });

  test('a provider whose adapter is not built in can only be set DOWN: 409 provider_not_integrated otherwise', async () => {
    const production = loadProviderFile(DEFAULT_PROVIDER_FILES.production, 'production', {});
    const registry = new ProviderRegistry({ db: t.server.db.kysely, file: production, log: createLogger('silent'), processEnv: {} });
    const id = production.providers[0]!.id;
    for (const status of ['ACTIVE', 'DEGRADED'] as const) {
      await assert.rejects(registry.setStatus(id, status, { userId: null }), { statusCode: 409, code: 'provider_not_integrated' });
      assert.equal(registry.availabilityOf(id), 'DOWN');
    }
    const down = await registry.setStatus(id, 'DOWN', { userId: null, reason: 'still no adapter' });
    assert.deepEqual([down.status, down.integrated, down.overridden], ['DOWN', false, true]);
    assert.equal((await registry.setStatus(id, null, { userId: null })).overridden, false);
  });

  test('provider credentials never appear in rails, ops responses or logs', async () => {
    const secrets = sandboxCredentials();
    assert.ok(secrets.length >= 10);
    const org = await t.newOrganization();
    const texts = [
      (await t.request('GET', '/v1/rails', { apiKey: org.apiKey })).text,
      (await t.request('GET', '/v1/rails?activeOnly=true', { apiKey: org.apiKey })).text,
      (await t.request('GET', '/v1/ops/providers', { token: opsToken })).text,
      (await t.request('PATCH', '/v1/ops/providers/sim-us-ach', { token: opsToken, body: { status: 'ACTIVE' } })).text,
      (await t.request('GET', '/v1/openapi.json')).text,
    ];
    await t.request('PATCH', '/v1/ops/providers/sim-us-ach', { token: opsToken, body: { status: null } });
    const everything = [...texts, ...t.rawLogs].join('\n');
    for (const secret of secrets) assert.ok(!everything.includes(secret), `credential ${secret.slice(0, 12)}… leaked`);
    assert.ok(!/credentials/i.test(texts.slice(0, 4).join('\n')));
  });

  test('the shipped provider files are valid; production lists only DOWN, not-yet-integrated providers', () => {
    const sandbox = loadProviderFile(DEFAULT_PROVIDER_FILES.sandbox, 'sandbox');
    assert.ok(sandbox.providers.every((p) => p.adapter === 'simulator'));
    const production = loadProviderFile(DEFAULT_PROVIDER_FILES.production, 'production', {});
    assert.ok(production.providers.length > 0);
    assert.ok(production.providers.every((p) => p.adapter !== 'simulator' && p.availability === 'DOWN'));
  });

  test('a malformed provider file stops start with one clear line per problem', async () => {
    const file = writeFile('bad.json', {
      environment: 'sandbox',
      providers: [
        {
          id: 'sim-one',
          displayName: 'One',
          adapter: 'simulator',
          availability: 'ACTIVE',
          credentials: { apiKey: { env: 'CORRIDOR_TEST_UNSET_PROVIDER_KEY' } },
          capabilities: [
            { kind: 'PAYOUT', rail: { type: 'FIAT', country: 'XX', currency: 'USD', method: 'ACH' }, fees: { fixed: '0.001', percentBps: 0, fxSpreadBps: 0 }, etaSeconds: 60 },
            { kind: 'PAYOUT', rail: { type: 'FIAT', country: 'US', currency: 'ZZZ', method: 'ACH' }, fees: { fixed: '0', percentBps: 0, fxSpreadBps: 0 }, etaSeconds: 60 },
            { kind: 'CONVERSION', from: 'USD', to: 'ZAR', fees: { fixed: '0', percentBps: 0, fxSpreadBps: 10 }, etaSeconds: 60 },
          ],
        },
        {
          id: 'sim-one',
          displayName: 'Two',
          adapter: 'bank-api',
          availability: 'ACTIVE',
          credentials: {},
          capabilities: [{ kind: 'COLLECTION', rail: { type: 'CRYPTO', blockchain: 'ETHEREUM', asset: 'DOGE' }, fees: { fixed: '0', percentBps: 0, fxSpreadBps: 0 }, etaSeconds: 60 }],
        },
      ],
    });
    const config = loadConfig({ CORRIDOR_PROVIDERS_FILE: file });
    const err = await createServer(config, { inMemory: true }).then(
      () => assert.fail('start should have failed'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ProviderConfigError);
    const where = file;
    assert.deepEqual(err.problems, [
      `${where}: providers.0.credentials.apiKey: environment variable CORRIDOR_TEST_UNSET_PROVIDER_KEY is not set`,
      `${where}: providers.0.capabilities.0.rail.country: "XX" is not an ISO 3166-1 alpha-2 country code`,
      `${where}: providers.0.capabilities.0.fees.fixed: USD amounts have at most 2 decimal places`,
      `${where}: providers.0.capabilities.1.rail.currency: "ZZZ" is not an ISO 4217 currency code`,
      `${where}: providers.0.capabilities.2.to: the sandbox market has no rate for ZAR`,
      `${where}: providers.1.id: "sim-one" is used by an earlier provider`,
      `${where}: providers.1.availability: adapter type "bank-api" is not built in (known: simulator), so it must be DOWN`,
      `${where}: providers.1.capabilities.0.rail.asset: "DOGE" is not a supported crypto asset (USDC, BTC, ETH)`,
    ]);
  });

  test('schema problems name the field; a wrong environment, a missing file and broken JSON each say so', () => {
    const problems = (file: string, env: 'sandbox' | 'production' = 'sandbox') => {
      try {
        loadProviderFile(file, env);
      } catch (err) {
        assert.ok(err instanceof ProviderConfigError);
        return err.problems.map((p) => p.slice(p.indexOf(': ') + 2));
      }
      return assert.fail('expected the file to be refused');
    };
    const entry = {
      id: 'sim-x',
      displayName: 'X',
      adapter: 'simulator',
      availability: 'SOMETIMES',
      credentials: {},
      capabilities: [{ kind: 'PAYOUT', rail: { type: 'FIAT', country: 'US', currency: 'USD', method: 'DOMESTIC' }, fees: { fixed: '1', percentBps: 0 }, etaSeconds: 1 }],
    };
    assert.deepEqual(problems(writeFile('schema.json', { environment: 'sandbox', providers: [entry] })), [
      'providers.0.availability: must be one of ACTIVE, DEGRADED, DOWN',
      'providers.0.capabilities.0.rail.method: must be one of ACH, SEPA, SWIFT, WIRE, PIX, SPEI, LOCAL',
      'providers.0.capabilities.0.fees.fxSpreadBps: is required',
    ]);
    // A tag outside its union is answered with the tags it takes (the provider file's own ajv).
    const untagged = {
      ...entry,
      availability: 'ACTIVE',
      capabilities: [
        { ...entry.capabilities[0], rail: { type: 'BANK' }, fees: { fixed: '1', percentBps: 0, fxSpreadBps: 0 } },
        { ...entry.capabilities[0], kind: 'REFUND', fees: { fixed: '1', percentBps: 0, fxSpreadBps: 0 } },
      ],
    };
    assert.deepEqual(problems(writeFile('tags.json', { environment: 'sandbox', providers: [untagged] })), [
      'providers.0.capabilities.0.rail.type: must be one of FIAT, CRYPTO',
      'providers.0.capabilities.1.kind: must be one of COLLECTION, PAYOUT, CONVERSION',
    ]);
    const simulatorInProduction = { ...entry, availability: 'ACTIVE', capabilities: [{ ...entry.capabilities[0], rail: { ...entry.capabilities[0]!.rail, method: 'ACH' }, fees: { fixed: '1', percentBps: 0, fxSpreadBps: 0 } }] };
    assert.deepEqual(problems(writeFile('env.json', { environment: 'sandbox', providers: [simulatorInProduction] }), 'production'), [
      'environment: the file is for sandbox but CORRIDOR_ENV is production',
      'providers.0.adapter: simulated providers are refused in production',
    ]);
    // Regression: a spread of 10,000 bps gave a zero rate and every quote over it answered 500.
    const wholeAmount = { ...simulatorInProduction, capabilities: [{ kind: 'CONVERSION', from: 'USD', to: 'EUR', fees: { fixed: '0', percentBps: 10_000, fxSpreadBps: 10_000 }, etaSeconds: 1 }] };
    assert.deepEqual(problems(writeFile('bps.json', { environment: 'sandbox', providers: [wholeAmount] })), [
      'providers.0.capabilities.0.fees.percentBps: must be <= 9999',
      'providers.0.capabilities.0.fees.fxSpreadBps: must be <= 9999',
    ]);
    // Names and capabilities must be unambiguous; a conversion needs two assets.
    const usd = { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' };
    const noFees = { fixed: '0', percentBps: 0, fxSpreadBps: 0 };
    const ambiguous = [
      { ...simulatorInProduction, id: 'sim-a', displayName: 'Same Name', capabilities: [{ kind: 'PAYOUT', rail: usd, fees: noFees, etaSeconds: 1 }, { kind: 'PAYOUT', rail: usd, fees: noFees, etaSeconds: 2 }] },
      {
        ...simulatorInProduction,
        id: 'sim-b',
        displayName: 'Same Name',
        capabilities: [
          { kind: 'CONVERSION', from: 'USD', to: 'USD', fees: noFees, etaSeconds: 1 },
          { kind: 'CONVERSION', from: 'USD', to: 'EUR', fees: noFees, etaSeconds: 1 },
          { kind: 'CONVERSION', from: 'USD', to: 'EUR', fees: noFees, etaSeconds: 5 },
        ],
      },
    ];
    assert.deepEqual(problems(writeFile('ambiguous.json', { environment: 'sandbox', providers: ambiguous })), [
      'providers.0.capabilities.1: PAYOUT on FIAT:US:USD:ACH is listed twice',
      'providers.1.displayName: "Same Name" is used by an earlier provider',
      'providers.1.capabilities.0: a conversion needs two different assets',
      'providers.1.capabilities.2: USD→EUR is listed twice',
    ]);
    assert.match(problems(path.join(tmp, 'missing.json'))[0]!, /^cannot read the provider file \(ENOENT\)$/);
    assert.match(problems(writeFile('broken.json', '{"environment": "sandbox",'))[0]!, /^not valid JSON/);
  });

  test('npm start with a bad provider file prints the problems and exits 1', () => {
    const file = writeFile('cli.json', { environment: 'sandbox', providers: [] });
    const result = spawnSync(process.execPath, [path.resolve(import.meta.dirname, '../main.ts')], {
      env: { ...process.env, CORRIDOR_PROVIDERS_FILE: file, CORRIDOR_DATA_DIR: path.join(tmp, 'data'), CORRIDOR_PORT: '0', DATABASE_URL: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(result.status, 1, result.stderr);
    assert.equal(result.stderr.trim(), `config error: ${file}: providers: must NOT have fewer than 1 items`);
  });
});
