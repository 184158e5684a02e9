import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';

describe('users', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  test('GET /v1/users lists exactly the caller organization, with SPEC.md fields', async () => {
    const a = await t.newOrganization('A');
    const b = await t.newOrganization('B');
    for (const credentials of [{ apiKey: a.apiKey }, { token: a.token }]) {
      const res = await t.request('GET', '/v1/users', credentials);
      assert.equal(res.status, 200);
      assert.equal(res.body.meta.total, 1);
      assert.equal(res.body.data.length, 1);
      const user = res.body.data[0];
      assert.deepEqual(Object.keys(user).sort(), ['createdAt', 'email', 'fullName', 'id', 'roles', 'status']);
      assert.equal(user.email, a.email);
      assert.deepEqual(user.roles, ['OWNER']);
      assert.equal(user.status, 'ACTIVE');
      assert.match(user.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.notEqual(user.id, b.userId);
    }
  });

  test('GET /v1/users pages with ?limit and ?cursor, total counts every page', async () => {
    const a = await t.newOrganization('Paged');
    const other = await t.newOrganization('Other');
    for (const n of [1, 2, 3, 4]) {
      await t.server.services.users.create({ organizationId: a.organizationId, email: `member${n}-${a.organizationId}@example.com`, fullName: `Member ${n}`, passwordHash: 'x', roles: n % 2 ? ['DEVELOPER'] : ['VIEWER'] });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await t.request('GET', `/v1/users?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { apiKey: a.apiKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.meta.total, 5);
      assert.ok(res.body.data.length <= 2);
      seen.push(...res.body.data.map((u: { id: string }) => u.id));
      cursor = res.body.meta.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    assert.equal(pages, 3);
    assert.equal(seen.length, 5);
    assert.equal(new Set(seen).size, 5, 'no user appears on two pages');
    assert.ok(!seen.includes(other.userId));
    const all = await t.request('GET', '/v1/users', { token: a.token });
    assert.deepEqual(all.body.data.map((u: { id: string }) => u.id), seen, 'pages follow the same order as one big page');
    assert.equal(all.body.meta.nextCursor, null);
  });

  test('GET /v1/users/me answers the token user and refuses an API key', async () => {
    const a = await t.newOrganization();
    const me = await t.request('GET', '/v1/users/me', { token: a.token });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, a.userId);
    const withKey = await t.request('GET', '/v1/users/me', { apiKey: a.apiKey });
    assert.equal(withKey.status, 403);
    assert.deepEqual(withKey.body, { code: 'user_token_required', message: 'This endpoint only accepts a user token (Bearer JWT).' });
  });
});
