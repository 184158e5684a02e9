// Test support for crash.test.ts: a Corridor process that registers a webhook endpoint, records
// events (each in its own transaction), reports them on stdout and keeps delivering until it is
// killed. Run as: node src/webhooks/crash-fixture.ts <receiverUrl> <eventCount>
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../platform/config.ts';
import { createServer } from '../server.ts';

const [receiverUrl, count] = process.argv.slice(2);
const server = await createServer(loadConfig(process.env));
const organizationId = server.firstOrganization!.organizationId;
const created = await server.app.inject({
  method: 'POST',
  url: '/v1/webhook-endpoints',
  headers: { 'x-api-key': server.firstOrganization!.apiKey, 'content-type': 'application/json' },
  payload: JSON.stringify({ url: receiverUrl, eventTypes: ['transfer.status_changed'] }),
});
if (created.statusCode !== 201) throw new Error(`endpoint: ${created.statusCode} ${created.body}`);
const { secret } = JSON.parse(created.body) as { secret: string };

const eventIds: string[] = [];
for (let i = 0; i < Number(count); i++) {
  const event = await server.db.kysely.transaction().execute((trx) =>
    server.services.events.record(trx, {
      organizationId,
      type: 'transfer.status_changed',
      data: { transferId: randomUUID(), status: 'IN_PROGRESS', previousStatus: 'AWAITING_FUNDS', blockingParty: 'PROVIDER', version: 1 },
    }),
  );
  eventIds.push(event.id);
}
process.stdout.write(`CRASH-FIXTURE ${JSON.stringify({ secret, eventIds })}\n`);
// Deliver until killed.
setInterval(() => {}, 60_000);
