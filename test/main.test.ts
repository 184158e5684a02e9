// `npm start` as a newcomer runs it: the real entry point in a child process, on an embedded
// database in a temporary data dir, over real TLS. Covers configuration errors, the first-start
// credentials, the data-dir lock and its takeover after a crash, and the plain listener.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { childEnv, MAIN, ready, ROOT, start, stop } from './helpers/main-process.ts';
import { lockHolder } from '../src/platform/db/data-dir-lock.ts';

const insecure = new Agent({ connect: { rejectUnauthorized: false } });
const dirs: string[] = [];

after(async () => {
  await insecure.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const tempDataDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-main-'));
  dirs.push(dir);
  return path.join(dir, 'data');
};

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { dispatcher: insecure, headers });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : null };
}

describe('configuration errors', () => {
  test('a bad CORRIDOR_PORT stops the process with one clear line and exit code 1', () => {
    const dataDir = tempDataDir();
    const r = spawnSync(process.execPath, [MAIN], { cwd: ROOT, env: childEnv({ CORRIDOR_PORT: 'eighty', CORRIDOR_DATA_DIR: dataDir }), encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^config error: CORRIDOR_PORT: must be a whole number from 0 to 65535 \(got "eighty"\)$/m);
    assert.doesNotMatch(r.stderr, /\bat .+:\d+:\d+/, 'no stack trace');
    assert.equal(r.stdout, '');
    assert.ok(!fs.existsSync(dataDir), 'nothing was created');
  });

  test('every bad variable gets its own line', () => {
    const r = spawnSync(process.execPath, [MAIN], {
      cwd: ROOT,
      env: childEnv({ CORRIDOR_PORT: '70000', CORRIDOR_ENV: 'staging', DATABASE_URL: 'mysql://db/x', CORRIDOR_TRUSTED_PROXIES: '10.0.0.1,proxy.local' }),
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1);
    const lines = r.stderr.trim().split('\n');
    assert.deepEqual(lines.map((l) => l.split(':').slice(0, 2).join(':')).sort(), [
      'config error: CORRIDOR_ENV',
      'config error: CORRIDOR_PORT',
      'config error: CORRIDOR_TRUSTED_PROXIES',
      'config error: DATABASE_URL',
    ]);
  });
});

describe('start-up problems outside the configuration parser', () => {
  const oneLine = (env: Record<string, string>) => {
    const r = spawnSync(process.execPath, [MAIN], { cwd: ROOT, env: childEnv({ CORRIDOR_DATA_DIR: tempDataDir(), CORRIDOR_PORT: '0', ...env }), encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\bat .+:\d+:\d+/, `no stack trace: ${r.stderr}`);
    const lines = r.stderr.trim().split('\n');
    return { lines, stdout: r.stdout };
  };

  test('unreadable, malformed or mismatched TLS files name CORRIDOR_TLS_CERT / CORRIDOR_TLS_KEY', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-tls-'));
    dirs.push(dir);
    const pair = (name: string) => {
      const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, `${name}.key`), '-out', path.join(dir, `${name}.pem`), '-days', '1', '-subj', '/CN=localhost'], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    };
    pair('a');
    pair('b');
    fs.writeFileSync(path.join(dir, 'junk.pem'), 'not a pem\n');
    assert.deepEqual(oneLine({ CORRIDOR_TLS_CERT: path.join(dir, 'missing.pem'), CORRIDOR_TLS_KEY: path.join(dir, 'a.key') }).lines, [
      `config error: CORRIDOR_TLS_CERT: cannot read ${path.join(dir, 'missing.pem')} (ENOENT)`,
    ]);
    assert.deepEqual(oneLine({ CORRIDOR_TLS_CERT: path.join(dir, 'junk.pem'), CORRIDOR_TLS_KEY: path.join(dir, 'junk.pem') }).lines, [
      'config error: CORRIDOR_TLS_CERT: is not a PEM certificate',
      'config error: CORRIDOR_TLS_KEY: is not an unencrypted PEM private key',
    ]);
    assert.deepEqual(oneLine({ CORRIDOR_TLS_CERT: path.join(dir, 'a.pem'), CORRIDOR_TLS_KEY: path.join(dir, 'b.key') }).lines, [
      'config error: CORRIDOR_TLS_KEY: does not belong to the certificate in CORRIDOR_TLS_CERT',
    ]);
  });

  test('a data dir that cannot be created names CORRIDOR_DATA_DIR', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-file-')), 'a-file');
    dirs.push(path.dirname(file));
    fs.writeFileSync(file, '');
    const { lines } = oneLine({ CORRIDOR_DATA_DIR: path.join(file, 'data') });
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^config error: CORRIDOR_DATA_DIR: cannot .* \(ENOTDIR\)$/);
  });

  test('a PostgreSQL server that does not answer names DATABASE_URL without its password', () => {
    const { lines } = oneLine({ DATABASE_URL: 'postgres://corridor:hunter2secret@127.0.0.1:1/corridor' });
    assert.deepEqual(lines, ['config error: DATABASE_URL: cannot connect to PostgreSQL at 127.0.0.1:1/corridor (connect ECONNREFUSED 127.0.0.1:1)']);
  });

  test('an address that is not this machine\'s names CORRIDOR_HOST', () => {
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never assigned to a real interface.
    const { lines } = oneLine({ CORRIDOR_HOST: '192.0.2.1' });
    assert.deepEqual(lines, ['config error: CORRIDOR_HOST: cannot listen: 192.0.2.1 is not an address of this machine']);
  });

  test('a busy port stops the first start before it creates the organization, so the retry prints its credentials', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const busy = (blocker.address() as net.AddressInfo).port;
    const dataDir = tempDataDir();
    try {
      const r = spawnSync(process.execPath, [MAIN], { cwd: ROOT, env: childEnv({ CORRIDOR_DATA_DIR: dataDir, CORRIDOR_PORT: String(busy) }), encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.status, 1, r.stderr);
      assert.deepEqual(r.stderr.trim().split('\n'), [`config error: CORRIDOR_PORT: cannot listen: 127.0.0.1:${busy} is in use; choose another port`]);
      assert.doesNotMatch(r.stdout, /API key:/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    // The user follows the advice and starts again on another port, on the same data dir.
    const retry = start({ CORRIDOR_DATA_DIR: dataDir, CORRIDOR_PORT: '0' });
    await ready(retry);
    assert.match(retry.stdout(), /First start: a ready organization was created/);
    assert.match(retry.stdout(), /API key:\s+sk_sandbox_\S+/);
    assert.equal(await stop(retry), 0);
  });
});

describe('first start, the data-dir lock and restarts', () => {
  test('prints a ready organization once, refuses a second process, takes over after a crash', async () => {
    const dataDir = tempDataDir();
    const env = { CORRIDOR_DATA_DIR: dataDir, CORRIDOR_PORT: '0', CORRIDOR_HTTP_PORT: '0' };

    // First start on an empty data dir.
    const first = start(env);
    const { base } = await ready(first);
    const out = first.stdout();
    const email = out.match(/owner email:\s+(\S+)/)?.[1];
    const password = out.match(/password:\s+(\S+)/)?.[1];
    const apiKey = out.match(/API key:\s+(sk_sandbox_\S+)/)?.[1];
    assert.ok(email && password && apiKey, out);
    assert.match(out, new RegExp(`curl -k ${base.replace(/[.]/g, '\\.')}/v1/users -H "X-API-Key: ${apiKey}"`));
    assert.match(out, /TLS certificate: .*cert\.pem \(self-signed, generated now\)/);
    // DECISIONS.md §1: the first start names the dashboard, where the printed owner signs in.
    assert.match(out, new RegExp(`dashboard: +${base.replace(/[.]/g, '\\.')}/dashboard \\(sign in with the owner email and password\\)`));
    const dashboard = await request(`${base}/dashboard`, { dispatcher: insecure });
    assert.equal(dashboard.statusCode, 200);
    assert.match(await dashboard.body.text(), /<title>Corridor dashboard<\/title>/);
    assert.match(out, /no fsync/);

    // The printed key and password work over HTTPS.
    const users = await get(`${base}/v1/users`, { 'x-api-key': apiKey });
    assert.equal(users.status, 200);
    assert.equal(users.body.data[0].email, email);
    const tokenRes = await request(`${base}/v1/auth/token`, {
      dispatcher: insecure,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    assert.equal(tokenRes.statusCode, 200);
    const { accessToken } = (await tokenRes.body.json()) as { accessToken: string };
    const me = await get(`${base}/v1/users/me`, { authorization: `Bearer ${accessToken}` });
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.roles, ['OWNER']);

    // The plain listener answers, and only with https_required.
    const plainPort = Number(out.match(/plain HTTP on port (\d+)/)?.[1]);
    assert.ok(plainPort > 0, out);
    const plain = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: plainPort, path: '/v1/users', headers: { 'x-api-key': apiKey } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      }).on('error', reject);
    });
    assert.equal(plain.status, 400);
    assert.equal(JSON.parse(plain.body).code, 'https_required');

    // A second process on the same data dir stops with a clear message, and leaves the first alone.
    const second = start(env);
    assert.equal(await second.exited, 1);
    assert.match(second.stderr(), new RegExp(`Data directory ${dataDir.replace(/[.]/g, '\\.')} is in use by another Corridor process \\(pid ${first.child.pid}\\)`));
    assert.doesNotMatch(second.stderr(), /\bat .+:\d+:\d+/);
    assert.equal((await get(`${base}/v1/users`, { 'x-api-key': apiKey })).status, 200);

    // A clean stop releases the lock.
    assert.equal(await stop(first), 0);
    assert.equal(lockHolder(dataDir), null);

    // Second start: same certificate, no new credentials, the old key still works. Then it crashes.
    const again = start(env);
    const restarted = await ready(again);
    assert.doesNotMatch(again.stdout(), /API key:|password:/);
    assert.doesNotMatch(again.stdout(), /generated now/);
    assert.equal((await get(`${restarted.base}/v1/users`, { 'x-api-key': apiKey })).status, 200);
    await stop(again, 'SIGKILL');
    assert.equal(lockHolder(dataDir), again.child.pid, 'the crash left its lock behind');

    // The lock of the dead process is taken over; the data survived the crash.
    const third = start(env);
    const afterCrash = await ready(third);
    assert.doesNotMatch(third.stdout(), /API key:/);
    const list = await get(`${afterCrash.base}/v1/users`, { 'x-api-key': apiKey });
    assert.equal(list.status, 200);
    assert.equal(list.body.meta.total, 1);
    assert.equal(await stop(third), 0);
  });
});
