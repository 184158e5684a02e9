// DECISIONS.md §1, HTTPS only: real listeners, real TLS handshakes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { generate } from 'selfsigned';
import { loadTls } from './tls.ts';
import { createPlainListener } from './plain-listener.ts';
import { startTestServer } from '../../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../../test/helpers/server.ts';

const insecure = new Agent({ connect: { rejectUnauthorized: false } });
const tempDirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-tls-'));
  tempDirs.push(dir);
  return dir;
};
after(async () => {
  await insecure.close();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** The certificate a TLS server presents, as its SHA-256 fingerprint. */
function presentedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

/** Sends raw bytes over TLS and answers everything the server wrote back before closing. */
function rawTlsExchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => socket.write(raw));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
  });
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;
const portOf = (server: { address(): AddressInfo | string | null }) => (server.address() as AddressInfo).port;

async function plainRequest(port: number, options: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path ?? '/', headers: options.headers ?? {} }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('the generated self-signed certificate', () => {
  let t: TestServer;
  let org: TestOrganization;
  let dataDir: string;
  let port: number;
  let certPem: string;

  before(async () => {
    dataDir = tempDir();
    const material = await loadTls({ certPath: null, keyPath: null, dataDir, host: '127.0.0.1' });
    assert.equal(material.generated, true);
    assert.equal(material.certPath, path.join(dataDir, 'tls', 'cert.pem'));
    certPem = material.cert;
    t = await startTestServer({}, { tls: material });
    await t.server.app.listen({ host: '127.0.0.1', port: 0 });
    port = portOf(t.server.app.server);
    org = await t.newOrganization();
  });
  after(async () => t.close());

  test('the API answers over TLS with the generated certificate', async () => {
    const res = await request(`https://127.0.0.1:${port}/v1/users`, { dispatcher: insecure, headers: { 'x-api-key': org.apiKey } });
    assert.equal(res.statusCode, 200);
    const body = (await res.body.json()) as { meta: { total: number } };
    assert.equal(body.meta.total, 1);
    assert.equal(await presentedFingerprint(port), fingerprintOf(certPem));
    const cert = new X509Certificate(certPem);
    assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.match(cert.subjectAltName ?? '', /DNS:localhost/);
  });

  test('a client that checks certificates refuses it unless told to trust it', async () => {
    await assert.rejects(request(`https://127.0.0.1:${port}/health`), /self[- ]signed|certificate/i);
    const trusting = new Agent({ connect: { ca: certPem } });
    try {
      const res = await request(`https://127.0.0.1:${port}/health`, { dispatcher: trusting });
      assert.equal(res.statusCode, 200);
      await res.body.dump();
    } finally {
      await trusting.close();
    }
  });

  test('plain HTTP on the HTTPS port is not served', async () => {
    const outcome = await plainRequest(port, { path: '/v1/users', headers: { 'x-api-key': org.apiKey } }).then(
      (res) => `answered ${res.status}`,
      (err: Error) => `refused: ${err.message}`,
    );
    assert.match(outcome, /^refused/);
  });

  // Regression: requests Node's HTTP parser refuses were answered with Fastify's default
  // {error, message, statusCode} body instead of the API's {code, message}.
  test('a request HTTP cannot parse (huge headers, bad header, bad Content-Length, unknown method) answers {code, message}', async () => {
    const cases = [
      [`GET /v1/users HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
      ['GET /v1/users HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n', 400, 'bad_request'],
      ['POST /v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'bad_request'],
      ['FOO /v1/users HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'bad_request'],
    ] as const;
    for (const [raw, status, code] of cases) {
      const answer = await rawTlsExchange(port, raw);
      const [head, body] = answer.split('\r\n\r\n') as [string, string];
      assert.match(head, new RegExp(`^HTTP/1.1 ${status} `), answer);
      assert.match(head, /content-type: application\/json/i);
      const parsed = JSON.parse(body) as Record<string, unknown>;
      assert.deepEqual(Object.keys(parsed).sort(), ['code', 'message']);
      assert.equal(parsed.code, code);
    }
  });

  test('the next start reuses the same certificate and key', async () => {
    const again = await loadTls({ certPath: null, keyPath: null, dataDir, host: '127.0.0.1' });
    assert.equal(again.generated, false);
    assert.equal(again.cert, certPem);
    assert.equal(fs.statSync(path.join(dataDir, 'tls', 'key.pem')).mode & 0o077, 0, 'the private key is readable by its owner only');
  });
});

describe('a configured certificate', () => {
  test('CORRIDOR_TLS_CERT/KEY are served instead of a generated one', async () => {
    const dir = tempDir();
    const pems = await generate([{ name: 'commonName', value: 'configured.example' }], { keySize: 2048, algorithm: 'sha256' });
    const certPath = path.join(dir, 'my-cert.pem');
    const keyPath = path.join(dir, 'my-key.pem');
    fs.writeFileSync(certPath, pems.cert);
    fs.writeFileSync(keyPath, pems.private);
    const material = await loadTls({ certPath, keyPath, dataDir: dir, host: '127.0.0.1' });
    assert.equal(material.generated, false);
    assert.equal(material.certPath, certPath);
    assert.ok(!fs.existsSync(path.join(dir, 'tls')), 'nothing is generated when a certificate is configured');

    const t = await startTestServer({}, { tls: material });
    try {
      await t.server.app.listen({ host: '127.0.0.1', port: 0 });
      const port = portOf(t.server.app.server);
      assert.equal(await presentedFingerprint(port), fingerprintOf(pems.cert));
      const res = await request(`https://127.0.0.1:${port}/health`, { dispatcher: insecure });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(((await res.body.json()) as { status: string }).status, 'ok');
    } finally {
      await t.close();
    }
  });
});

describe('the plain listener', () => {
  let t: TestServer;
  let org: TestOrganization;
  const listeners: http.Server[] = [];

  before(async () => {
    t = await startTestServer();
    org = await t.newOrganization();
  });
  after(async () => {
    for (const l of listeners) l.close();
    await t.close();
  });

  async function plainListener(trusted: string[]): Promise<number> {
    const listener = createPlainListener(trusted, (req, res) => t.server.app.routing(req, res));
    listeners.push(listener);
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    return portOf(listener);
  }

  test('answers every request 400 https_required and serves nothing', async () => {
    const port = await plainListener([]);
    const requests: Array<Parameters<typeof plainRequest>[1]> = [
      { path: '/' },
      { path: '/health' },
      { path: '/v1/users', headers: { 'x-api-key': org.apiKey } },
      { method: 'POST', path: '/v1/auth/token', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: org.email, password: org.password }) },
      { method: 'DELETE', path: '/nothing/here' },
      // X-Forwarded-Proto from an address nobody said to trust is ignored.
      { path: '/v1/users', headers: { 'x-api-key': org.apiKey, 'x-forwarded-proto': 'https' } },
    ];
    for (const r of requests) {
      const res = await plainRequest(port, r);
      assert.equal(res.status, 400, JSON.stringify(r));
      assert.equal(res.body.code, 'https_required');
      assert.equal(typeof res.body.message, 'string');
    }
  });

  test('with CORRIDOR_TRUSTED_PROXIES=127.0.0.1, X-Forwarded-Proto: https from the proxy is served', async () => {
    const port = await plainListener(['127.0.0.1']);
    const served = await plainRequest(port, { path: '/v1/users', headers: { 'x-api-key': org.apiKey, 'x-forwarded-proto': 'https' } });
    assert.equal(served.status, 200);
    assert.equal(served.body.meta.total, 1);
    // The same proxy forwarding plain HTTP, or not saying, is still refused.
    for (const proto of ['http', undefined]) {
      const res = await plainRequest(port, { path: '/v1/users', headers: { 'x-api-key': org.apiKey, ...(proto ? { 'x-forwarded-proto': proto } : {}) } });
      assert.equal(res.status, 400, String(proto));
      assert.equal(res.body.code, 'https_required');
    }
  });

  test('a trusted range that does not include the caller does not open the listener', async () => {
    const port = await plainListener(['10.0.0.0/8', '192.168.1.1']);
    const res = await plainRequest(port, { path: '/v1/users', headers: { 'x-api-key': org.apiKey, 'x-forwarded-proto': 'https' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'https_required');
  });
});
