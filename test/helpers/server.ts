// Starts a real Corridor (real database, real migrations, real job queue) for a test file and
// offers small helpers to call it as a client would.
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/platform/config.ts';
import type { Config } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createServer } from '../../src/server.ts';
import type { Server, ServerOptions } from '../../src/server.ts';
import { createTestDatabase } from './database.ts';

export interface TestServer {
  server: Server;
  /** Every log line the server wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  rawLogs: string[];
  request(method: string, url: string, options?: RequestOptions): Promise<TestResponse>;
  /** Signs up a fresh organization and returns its owner's token and an all-scopes API key. */
  newOrganization(name?: string): Promise<TestOrganization>;
  close(): Promise<void>;
}

export interface RequestOptions {
  apiKey?: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  rawBody?: string | Buffer;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: any;
  text: string;
}

export interface TestOrganization {
  organizationId: string;
  userId: string;
  email: string;
  password: string;
  token: string;
  apiKey: string;
}

let counter = 0;

export async function startTestServer(env: Record<string, string> = {}, options: ServerOptions = {}): Promise<TestServer> {
  const database = await createTestDatabase();
  const config: Config = loadConfig({
    CORRIDOR_LOG_LEVEL: 'info',
    CORRIDOR_RATE_LIMIT_PER_MINUTE: '0',
    ...(database.url ? { DATABASE_URL: database.url } : {}),
    ...env,
  });
  const rawLogs: string[] = [];
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        rawLogs.push(line);
        try {
          logs.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          // not JSON: kept in rawLogs
        }
      }
      done();
    },
  });
  const server = await createServer(config, { logger: createLogger(config.logLevel, sink), inMemory: true, ...options });

  const request = async (method: string, url: string, opts: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.apiKey) headers['x-api-key'] = opts.apiKey;
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let payload: string | Buffer | undefined;
    if (opts.rawBody !== undefined) payload = opts.rawBody;
    else if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await server.app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}) });
    let body: unknown = res.body;
    try {
      body = res.body ? JSON.parse(res.body) : null;
    } catch {
      // leave as text
    }
    return { status: res.statusCode, headers: res.headers, body, text: res.body };
  };

  return {
    server,
    logs,
    rawLogs,
    request,
    async newOrganization(name = 'Test org') {
      const n = ++counter;
      const email = `owner${n}-${Math.random().toString(36).slice(2, 8)}@example.com`;
      const password = 'correct horse battery staple';
      const signup = await request('POST', '/v1/auth/signup', { body: { organizationName: `${name} ${n}`, email, password, fullName: `Owner ${n}` } });
      if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${signup.text}`);
      const key = await request('POST', '/v1/api-keys', { token: signup.body.accessToken, body: { name: 'all', scopes: ALL_SCOPES } });
      if (key.status !== 201) throw new Error(`api key failed: ${key.status} ${key.text}`);
      return { organizationId: signup.body.organizationId, userId: signup.body.user.id, email, password, token: signup.body.accessToken, apiKey: key.body.secret };
    },
    async close() {
      try {
        await server.close();
      } finally {
        await database.drop();
      }
    },
  };
}

export const ALL_SCOPES = [
  'transfers:read', 'transfers:write', 'destinations:read', 'destinations:write', 'entities:read', 'entities:write',
  'quotes:write', 'reports:read', 'reports:write', 'users:read', 'webhooks:read', 'webhooks:write', 'keys:write',
];
