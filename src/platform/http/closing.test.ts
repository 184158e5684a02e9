// SPEC.md "Error payload": every error is {code, message} with no wrapper, including the answer a
// request gets when it arrives on an open connection while the server is shutting down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestServer } from '../../../test/helpers/server.ts';

/** Resolves once the server no longer accepts connections, i.e. its shutdown has begun. */
async function stoppedListening(server: net.Server): Promise<void> {
  while (server.listening) await new Promise((resolve) => setImmediate(resolve));
}

test('a request that arrives on an open connection during shutdown answers 503 {code, message}', { timeout: 120_000 }, async () => {
  const t = await startTestServer();
  const org = await t.newOrganization('Closing');
  await t.server.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.server.app.server.address() as AddressInfo;

  // The request has begun (so the connection is not idle and survives the start of the shutdown)
  // but its headers are not finished: it is routed only after the shutdown has begun.
  const received = new Promise((resolve) => t.server.app.server.once('connection', (peer: net.Socket) => peer.once('data', () => setImmediate(resolve))));
  const socket = net.connect({ host: '127.0.0.1', port });
  await new Promise((resolve) => socket.once('connect', resolve));
  let raw = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
  const ended = new Promise((resolve) => socket.once('close', resolve));
  socket.write(`GET /v1/users HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${org.apiKey}\r\n`);
  await received;

  const closing = t.server.close();
  await stoppedListening(t.server.app.server);
  socket.write('\r\n');
  await ended;
  await closing;
  await t.close();

  const [head = '', body = ''] = raw.split('\r\n\r\n');
  assert.match(head, /^HTTP\/1\.1 503 /, raw);
  assert.match(head, /^content-type: application\/json/im, raw);
  const parsed = JSON.parse(body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(parsed).sort(), ['code', 'message'], `no other fields: ${body}`);
  assert.equal(parsed.code, 'service_unavailable');
  assert.equal(typeof parsed.message, 'string');
});
