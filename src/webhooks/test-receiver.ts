// Test support: a webhook receiver on 127.0.0.1 that records every request and answers as the
// test tells it to. Not used by the service.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  /** 1-based order of arrival. */
  n: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
}

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (the connection stays open until the client gives up). */
  hang?: boolean;
  /** Answer after this many milliseconds. */
  delayMs?: number;
}

export type Responder = (request: ReceivedRequest) => Answer;

export interface Receiver {
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  respond: Responder;
  close(): Promise<void>;
}

export async function startReceiver(respond: Responder = () => ({ status: 200, body: 'ok' })): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const receiver = { received, respond, connections: 0 } as Receiver;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const request: ReceivedRequest = { n: received.length + 1, path: req.url ?? '/', headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
      received.push(request);
      const answer = receiver.respond(request);
      if (answer.hang) return;
      const send = () => {
        res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  server.on('connection', () => receiver.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  receiver.port = port;
  receiver.url = `http://127.0.0.1:${port}/hooks`;
  receiver.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return receiver;
}

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/** Polls until the condition holds (bounded), then returns its value. */
export async function waitFor<T>(what: string, condition: () => T | Promise<T>, timeoutMs = 30_000): Promise<Truthy<Awaited<T>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value: Awaited<T> = await condition();
    if (value) return value as Truthy<Awaited<T>>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
