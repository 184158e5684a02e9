import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { UnsafeAddressError, productionUrlProblem, resolveSafely, safeLookup, unsafeAddressReason, webhookUrlProblem } from './address-safety.ts';
import { WebhookSender } from './sender.ts';

describe('webhook address safety (production rules)', () => {
  test('loopback, private, link-local, carrier-grade NAT and metadata addresses are refused; public ones are not', () => {
    const refused: Array<[string, RegExp]> = [
      ['127.0.0.1', /loopback/],
      ['127.255.0.9', /loopback/],
      ['::1', /loopback/],
      ['10.0.0.1', /private/],
      ['172.16.0.1', /private/],
      ['172.31.255.254', /private/],
      ['192.168.1.10', /private/],
      ['fc00::1', /private/],
      ['fd12:3456::1', /private/],
      ['169.254.10.20', /link-local/],
      ['fe80::1', /link-local/],
      ['100.64.0.1', /carrier-grade NAT/],
      ['100.127.255.255', /carrier-grade NAT/],
      ['169.254.169.254', /metadata/],
      ['fd00:ec2::254', /metadata/],
      ['0.0.0.0', /unspecified/],
      ['::', /unspecified/],
      ['224.0.0.1', /multicast/],
      ['255.255.255.255', /reserved/],
      // IPv4 inside IPv6: mapped, NAT64 and 6to4 forms reach the same hosts.
      ['::ffff:10.0.0.1', /private/],
      ['::ffff:127.0.0.1', /loopback/],
      ['64:ff9b::a9fe:a9fe', /metadata/],
      ['2002:a00:1::1', /private/],
      // Deprecated IPv4-compatible and IPv4-translated forms are refused whatever they carry.
      ['::7f00:1', /reserved/],
      ['::8.8.8.8', /reserved/],
      ['::ffff:0:7f00:1', /reserved/],
    ];
    for (const [address, reason] of refused) assert.match(unsafeAddressReason(address) ?? 'allowed', reason, address);
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      assert.equal(unsafeAddressReason(address), null, address);
    }
  });

  test('production URLs must be https and must not name a refused address', () => {
    const problem = (url: string) => productionUrlProblem(new URL(url));
    assert.match(problem('http://hooks.example.com/x')!, /only to https/);
    assert.match(problem('https://127.0.0.1/x')!, /loopback/);
    assert.match(problem('https://[::1]:8443/x')!, /loopback/);
    assert.match(problem('https://10.0.0.1/x')!, /private/);
    assert.match(problem('https://169.254.169.254/latest/meta-data')!, /metadata/);
    assert.match(problem('https://[fd00:ec2::254]/x')!, /metadata/);
    // Numeric spellings of 127.0.0.1 are normalised by the URL parser and still refused.
    assert.match(problem('https://2130706433/x')!, /loopback/);
    assert.match(problem('https://0x7f.1/x')!, /loopback/);
    assert.equal(problem('https://hooks.example.com/x'), null);
    assert.equal(problem('https://93.184.216.34:8443/x'), null);
  });

  test('a URL that is not http(s), has no host or carries credentials is invalid everywhere', () => {
    assert.match(webhookUrlProblem('hooks.example.com/x')!, /absolute/);
    assert.match(webhookUrlProblem('file:///etc/passwd')!, /http or https/);
    assert.match(webhookUrlProblem('https://user:pw@hooks.example.com/')!, /credentials/);
    assert.equal(webhookUrlProblem('http://127.0.0.1:3000/hooks'), null);
  });

  test('a host name is resolved once and refused when any of its addresses is unsafe', async () => {
    const resolver = (answers: string[]) => async () => answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    assert.deepEqual(await resolveSafely('hooks.example.com', resolver(['93.184.216.34', '2606:4700::1111'])), [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
    await assert.rejects(resolveSafely('rebind.example.com', resolver(['93.184.216.34', '10.0.0.7'])), (err: Error) => {
      assert.ok(err instanceof UnsafeAddressError);
      assert.equal(err.message, 'rebind.example.com resolves to 10.0.0.7, a private address');
      return true;
    });
    await assert.rejects(resolveSafely('nowhere.invalid', async () => { throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' }); }), /does not resolve \(ENOTFOUND\)/);
    // The real resolver: localhost is loopback.
    await assert.rejects(resolveSafely('localhost'), /localhost resolves to .*loopback/);
  });

  test('the connect-time lookup hands the socket only checked addresses', async () => {
    const lookup = safeLookup(async () => [{ address: '93.184.216.34', family: 4 }]);
    const all = await new Promise((resolve, reject) => lookup('hooks.example.com', { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));
    assert.deepEqual(all, [{ address: '93.184.216.34', family: 4 }]);
    const one = await new Promise((resolve, reject) => lookup('hooks.example.com', {}, (err, address, family) => (err ? reject(err) : resolve([address, family]))));
    assert.deepEqual(one, ['93.184.216.34', 4]);
    const refusing = safeLookup(async () => [{ address: '127.0.0.1', family: 4 }]);
    await assert.rejects(new Promise((resolve, reject) => refusing('rebind.example.com', { all: true }, (err, a) => (err ? reject(err) : resolve(a)))), UnsafeAddressError);
  });

  test('at delivery time, a name that now resolves to loopback (DNS rebinding) is refused without connecting', async () => {
    let connections = 0;
    const server = http.createServer((_req, res) => res.end('ok'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      // Registration would have seen a public address; by delivery time the name points at us.
      const sender = new WebhookSender({ timeoutMs: 2000, safeAddressesOnly: true, userAgent: 'test', resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
      const outcome = await sender.send(`https://rebind.example.com:${port}/hooks`, {}, '{}');
      assert.equal(outcome.succeeded, false);
      assert.equal(outcome.statusCode, null);
      assert.equal(outcome.error, 'address refused: rebind.example.com resolves to 127.0.0.1, a loopback address');
      const literal = await sender.send(`https://127.0.0.1:${port}/hooks`, {}, '{}');
      assert.match(literal.error!, /^address refused: 127\.0\.0\.1 is a loopback address$/);
      const plain = await sender.send(`http://hooks.example.com:${port}/hooks`, {}, '{}');
      assert.match(plain.error!, /only to https/);
      await sender.close();

      // The same request from a sandbox sender does connect: the refusal above is the check, not a broken URL.
      const sandbox = new WebhookSender({ timeoutMs: 2000, safeAddressesOnly: false, userAgent: 'test' });
      const ok = await sandbox.send(`http://127.0.0.1:${port}/hooks`, {}, '{}');
      assert.equal(ok.statusCode, 200);
      await sandbox.close();
      assert.equal(connections, 1);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
