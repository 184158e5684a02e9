// The dashboard: its files are served with a policy that lets only them run, and the calls its page
// makes (public/api.js, the module the page itself imports) do what SPEC.md puts in the dashboard:
// sign in, create a key whose secret is shown once, revoke it at once, export a report.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { newOperator } from '../../test/helpers/ops.ts';
import { driveToRest, fund, newCustomer, newTransfer } from '../transfers/test-support.ts';
import { ApiError, EXPORTS, dashboardClient } from './public/api.js';

let t: TestServer;
let org: TestOrganization;

before(async () => {
  t = await startTestServer();
  org = await t.newOrganization();
});
after(async () => t.close());

/** The page's calls, sent to the test server instead of over fetch. */
function pageClient() {
  return dashboardClient(
    async (method, path, { token, body, headers }) => {
      const res = await t.request(method, path, { ...(token ? { token } : {}), ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) });
      return { status: res.status, body: res.body };
    },
    { sleep: () => new Promise((resolve) => setTimeout(resolve, 20)) },
  );
}

describe('the page', () => {
  test('GET /dashboard serves the page; each file it loads is served with its type and a policy that runs only this origin\'s files', async () => {
    for (const path of ['/dashboard', '/dashboard/']) {
      const page = await t.request('GET', path);
      assert.equal(page.status, 200);
      assert.match(String(page.headers['content-type']), /^text\/html; charset=utf-8/);
      assert.match(page.text, /<title>Corridor dashboard<\/title>/);
      assert.match(page.text, /Developers › API Keys/);
    }
    const page = await t.request('GET', '/dashboard');
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
    // No inline script or style: the policy would block it.
    assert.doesNotMatch(page.text, /<script(?![^>]*\bsrc=)[^>]*>/);
    assert.doesNotMatch(page.text, /\sstyle=/);

    const loaded = [...page.text.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(loaded.sort(), ['/dashboard/app.js', '/dashboard/icon.svg', '/dashboard/style.css']);
    const app = await t.request('GET', '/dashboard/app.js');
    assert.match(app.text, /from '\.\/api\.js'/);
    for (const [path, type] of [['/dashboard/app.js', 'text/javascript'], ['/dashboard/api.js', 'text/javascript'], ['/dashboard/style.css', 'text/css'], ['/dashboard/icon.svg', 'image/svg+xml']] as const) {
      const res = await t.request('GET', path);
      assert.equal(res.status, 200, path);
      assert.match(String(res.headers['content-type']), new RegExp(`^${type.replace('+', '\\+')}`), path);
      assert.ok(res.text.length > 100, path);
    }
  });

  test('a file the dashboard does not have is 404 {code, message}, and nothing outside public/ is reachable', async () => {
    for (const path of ['/dashboard/routes.ts', '/dashboard/..%2Froutes.ts', '/dashboard/tsconfig.json', '/dashboard/%2E%2E%2F%2E%2E%2Fserver.ts']) {
      const res = await t.request('GET', path);
      assert.equal(res.status, 404, path);
      assert.equal(res.body.code, 'not_found', path);
    }
  });

  test('the dashboard is not part of the API document', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/dashboard')));
  });
});

describe('Developers › API Keys', () => {
  test('sign in, create a key shown once, see it listed without its secret, revoke it and it stops working', async () => {
    const page = pageClient();
    await assert.rejects(page.signIn(org.email, 'not the password'), (err: unknown) => err instanceof ApiError && err.status === 401 && err.code === 'invalid_credentials');
    assert.equal(page.signedIn, false);
    const me = await page.signIn(org.email, org.password);
    assert.equal(me.email, org.email);
    assert.equal(page.signedIn, true);

    const scopes = await page.scopes();
    assert.ok(scopes.includes('reports:read') && scopes.includes('transfers:write'), scopes.join());

    const created = await page.createApiKey('payouts service', ['transfers:read']);
    assert.match(created.secret, /^sk_sandbox_/);
    const listed = (await page.apiKeys()).find((k) => k.id === created.id);
    assert.ok(listed);
    assert.equal(listed.secret, undefined);
    assert.equal(created.secret.startsWith(listed.prefix), true);
    assert.equal(created.secret.endsWith(listed.lastFour), true);
    assert.deepEqual(listed.scopes, ['transfers:read']);
    assert.equal(listed.revokedAt, null);

    assert.equal((await t.request('GET', '/v1/transfers', { apiKey: created.secret })).status, 200);
    const revoked = await page.revokeApiKey(created.id);
    assert.notEqual(revoked.revokedAt, null);
    assert.equal((await t.request('GET', '/v1/transfers', { apiKey: created.secret })).status, 401);
    assert.notEqual((await page.apiKeys()).find((k) => k.id === created.id)?.revokedAt, null);
  });

  test('a key list longer than one page is listed whole', async () => {
    const other = await t.newOrganization('Many keys');
    const page = pageClient();
    await page.signIn(other.email, other.password);
    for (let i = 0; i < 101; i++) await page.createApiKey(`key ${i}`, ['users:read']);
    const keys = await page.apiKeys();
    assert.equal(keys.length, 102); // the helper's own key and these
    assert.equal(new Set(keys.map((k) => k.id)).size, 102);
  });

  test('a refused request keeps the page signed in; a rejected token signs it out, so it asks for the password again', async () => {
    const page = pageClient();
    await page.signIn(org.email, org.password);
    await assert.rejects(page.createApiKey('no permissions', []), (err: unknown) => err instanceof ApiError && err.status === 422 && err.code === 'validation_error');
    assert.equal(page.signedIn, true);

    // The same page whose token the server no longer accepts (as after its 15 minutes).
    const expired = dashboardClient(async (method, path, { token, body }) => {
      const res = await t.request(method, path, { ...(token ? { token: `${token}x` } : {}), ...(body !== undefined ? { body } : {}) });
      return { status: res.status, body: res.body };
    });
    await assert.rejects(expired.signIn(org.email, org.password), (err: unknown) => err instanceof ApiError && err.status === 401);
    assert.equal(expired.signedIn, false);
  });
});

describe('Transfers and the review queue', () => {
  test('a customer pages through its transfers, filters by status and opens one; an operator decides the review queue', async () => {
    const customer = await newCustomer(t, 'Dashboard transfers');
    const ids: string[] = [];
    for (let i = 0; i < 26; i++) ids.push((await newTransfer(t, customer, `${100 + i}.00`)).id);
    const review = await newTransfer(t, customer, '300.93');
    await driveToRest(t, customer, review.id);
    await fund(t, customer, review.id);
    assert.equal((await driveToRest(t, customer, review.id)).status, 'IN_REVIEW');

    const page = pageClient();
    const me = await page.signIn(customer.org.email, customer.org.password);
    assert.deepEqual(me.roles, ['OWNER']);
    const first = await page.transfers();
    assert.equal(first.data.length, 25);
    assert.ok(first.meta.nextCursor);
    const second = await page.transfers({ cursor: first.meta.nextCursor });
    assert.deepEqual([...first.data, ...second.data].map((x: any) => x.id).sort(), [...ids, review.id].sort());
    const inReview = await page.transfers({ status: 'IN_REVIEW' });
    assert.deepEqual(inReview.data.map((x: any) => x.id), [review.id]);
    const opened = await page.transfer(review.id);
    assert.equal(opened.status, 'IN_REVIEW');
    assert.ok(opened.legs.length > 0 && opened.timeline.length > 0);
    // A customer's user has no queue: the page shows it only to operators, and the API agrees.
    await assert.rejects(page.reviewQueue(), (err: unknown) => err instanceof ApiError && err.status === 403);

    const operator = await newOperator(t);
    const ops = pageClient();
    assert.deepEqual((await ops.signIn(operator.email, operator.password)).roles, ['SERVICE_OPS']);
    const queue = await ops.reviewQueue();
    assert.ok(queue.data.some((x: any) => x.id === review.id && x.organizationId === customer.org.organizationId));
    const decided = await ops.decide(review.id, 'approve', 'documents checked');
    assert.equal(decided.status, 'IN_PROGRESS');
    assert.ok(decided.timeline.some((item: any) => item.previousStatus === 'IN_REVIEW' && item.reason === 'documents checked'));
    assert.ok(!(await ops.reviewQueue()).data.some((x: any) => x.id === review.id));
    await assert.rejects(ops.decide(review.id, 'reject'), (err: unknown) => err instanceof ApiError && err.status === 409);
  });
});

describe('Reports', () => {
  test('every export the page offers previews, generates and downloads', async () => {
    const page = pageClient();
    await page.signIn(org.email, org.password);
    const window = { from: '2026-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' };
    for (const offered of EXPORTS) {
      const filters = offered.id === 'pain002' ? { ...window, assetScope: 'FIAT', originalMessageId: 'MSG-DASHBOARD', statuses: ['COMPLETED'] } : window;
      const request = { ...offered.request, filters };
      const preview = await page.previewReport(request);
      assert.equal(preview.exceedsLimits, false, offered.id);
      const report = await page.exportReport(request, `dashboard-${offered.id}`, { pollMs: 20 });
      if (offered.id === 'pain002') {
        // No transfer carries that message id: nothing can name the original message.
        assert.equal(report.status, 'FAILED');
        assert.equal(report.errorCode, 'missing_payment_references');
        continue;
      }
      assert.equal(report.status, 'READY', offered.id);
      const link = new URL((await page.downloadLink(report.id)).url, 'https://127.0.0.1');
      const file = await t.request('GET', link.pathname + link.search);
      assert.equal(file.status, 200, offered.id);
      assert.match(file.text, /^[a-zA-Z]+(,[a-zA-Z]+)+\r\n/, offered.id);
    }
  });
});
