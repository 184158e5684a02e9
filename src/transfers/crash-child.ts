// Child process of crash.test.ts: starts Corridor on the store named by its environment, creates
// and funds a transfer, prints what the parent needs, and SIGKILLs itself while the transfer is
// executing, so no graceful shutdown, no job completion and no pending write gets to run.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createServer } from '../server.ts';

const config = loadConfig({ ...process.env, CORRIDOR_LOG_LEVEL: 'error', CORRIDOR_RATE_LIMIT_PER_MINUTE: '0' });
const server = await createServer(config, { logger: createLogger('error', new Writable({ write: (_c, _e, done) => done() })) });

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await server.app.inject({ method: method as 'GET', url, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) });
  const parsed = res.body ? JSON.parse(res.body) : null;
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return parsed;
}

const signup = await call('POST', '/v1/auth/signup', { organizationName: 'Crash test', email: `crash-${randomUUID().slice(0, 8)}@example.com`, password: 'correct horse battery staple', fullName: 'Crash Test' });
const key = await call('POST', '/v1/api-keys', { name: 'crash', scopes: ['transfers:read', 'transfers:write', 'destinations:write', 'entities:write', 'quotes:write'] }, { authorization: `Bearer ${signup.accessToken}` });
const auth = { 'x-api-key': key.secret as string };
const entity = await call('POST', '/v1/entities', { type: 'INDIVIDUAL', firstName: 'Ada', lastName: 'Lovelace', country: 'US' }, auth);
const account = await call(
  'POST',
  '/v1/fiat-accounts',
  { entityId: entity.id, rail: { country: 'DE', currency: 'EUR', method: 'SEPA' }, details: { iban: 'DE89370400440532013000' }, beneficiary: { name: 'Hans Muster' }, relationship: 'THIRD_PARTY' },
  auth,
);
const quote = await call(
  'POST',
  '/v1/quotes',
  { entityId: entity.id, from: { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' }, to: { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' }, amount: '1234.00', fixedSide: 'FROM', destinationFiatAccountId: account.id },
  auth,
);
const transfer = await call('POST', '/v1/transfers', { quoteOptionId: quote.options[0].id, destination: { type: 'FIAT_ACCOUNT', fiatAccountId: account.id }, entityId: entity.id }, { ...auth, 'idempotency-key': randomUUID() });
await call('POST', `/v1/sandbox/transfers/${transfer.id}/advance`, undefined, auth);
await call('POST', `/v1/sandbox/transfers/${transfer.id}/fund`, {}, auth);
process.stdout.write(`${JSON.stringify({ transferId: transfer.id, apiKey: key.secret })}\n`);

// Die once the queue has started executing a leg after the collection, with more to do.
const deadline = Date.now() + 60_000;
for (;;) {
  const now = await call('GET', `/v1/transfers/${transfer.id}`, undefined, auth);
  const executing = now.legs.some((l: { kind: string; status: string }) => l.kind !== 'COLLECTION' && l.status !== 'PENDING');
  if ((executing && now.status === 'IN_PROGRESS') || Date.now() > deadline) break;
  await new Promise((r) => setTimeout(r, 20));
}
process.kill(process.pid, 'SIGKILL');
