// The composition root: the only file that knows every domain. It opens the database, applies
// migrations, wires services together, declares jobs and mounts each domain's routes.
import fs from 'node:fs';
import type { Config } from './platform/config.ts';
import { ConfigError, publicBaseUrl } from './platform/config.ts';
import { openDatabase } from './platform/db/database.ts';
import type { Database } from './platform/db/database.ts';
import { lockDataDir } from './platform/db/data-dir-lock.ts';
import { migrate } from './platform/db/migrate.ts';
import { createHttpApp } from './platform/http/app.ts';
import type { App } from './platform/http/app.ts';
import { ErrorBody } from './platform/http/schemas.ts';
import { systemRoutes } from './platform/http/system-routes.ts';
import type { Metrics } from './platform/http/metrics.ts';
import { IdempotencyStore } from './platform/idempotency.ts';
import { createLogger } from './platform/logger.ts';
import type { Logger } from './platform/logger.ts';
import { JobQueue } from './platform/queue.ts';
import { AuthService } from './auth/service.ts';
import { installAuthGuard } from './auth/guard.ts';
import { authRoutes } from './auth/routes.ts';
import { OrganizationService } from './organizations/service.ts';
import { organizationRoutes } from './organizations/routes.ts';
import { UserService } from './users/service.ts';
import { userRoutes } from './users/routes.ts';
import { ReportService } from './reports/service.ts';
import { reportRoutes } from './reports/routes.ts';
import { dashboardRoutes } from './dashboard/routes.ts';
import { EventService } from './events/service.ts';
import { eventRoutes } from './events/routes.ts';
import { WebhookService } from './webhooks/service.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { ProviderRegistry } from './providers/service.ts';
import { loadEnvironmentProviders } from './providers/configuration.ts';
import { providerRoutes } from './providers/routes.ts';
import { RailService } from './rails/service.ts';
import { railRoutes } from './rails/routes.ts';
import { EntityService } from './entities/service.ts';
import { entityRoutes } from './entities/routes.ts';
import { DestinationService } from './destinations/service.ts';
import { destinationRoutes } from './destinations/routes.ts';
import { QuoteService } from './quotes/service.ts';
import { quoteRoutes } from './quotes/routes.ts';
import { LedgerService } from './ledger/service.ts';
import { SETUP_JOB, STEP_JOB, TransferService } from './transfers/service.ts';
import { BASE_STEP_SECONDS, TransferEngine } from './transfers/execution.ts';
import { transferRoutes } from './transfers/routes.ts';
import { FundingService } from './funding/service.ts';
import { fundingRoutes } from './funding/routes.ts';

const VERSION = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface Services {
  events: EventService;
  webhooks: WebhookService;
  organizations: OrganizationService;
  users: UserService;
  auth: AuthService;
  idempotency: IdempotencyStore;
  reports: ReportService;
  providers: ProviderRegistry;
  rails: RailService;
  entities: EntityService;
  destinations: DestinationService;
  quotes: QuoteService;
  ledger: LedgerService;
  transfers: TransferService;
  engine: TransferEngine;
  funding: FundingService;
}

export interface Server {
  config: Config;
  app: App;
  db: Database;
  queue: JobQueue;
  metrics: Metrics;
  services: Services;
  log: Logger;
  /** Credentials of the organization created on first start, or null when the store was not empty. */
  firstOrganization: Awaited<ReturnType<AuthService['bootstrapFirstOrganization']>>;
  close(): Promise<void>;
}

export interface ServerOptions {
  logger?: Logger;
  /** Start job workers in this process (default true). */
  workers?: boolean;
  tls?: { key: string; cert: string } | null;
  /** Keep the embedded database in memory instead of the data dir (tests). */
  inMemory?: boolean;
  /**
   * Create the first organization on an empty store (default true). `npm start` passes false and
   * calls services.auth.bootstrapFirstOrganization() once it listens, so its credentials, printed
   * only once, are never created by a start that then fails.
   */
  firstOrganization?: boolean;
  /**
   * How long close() lets requests that are still running finish before it closes their
   * connections (default SHUTDOWN_DRAIN_MS).
   */
  drainMs?: number;
}

/**
 * How long a shutdown waits for running requests. A client that stops reading a download would
 * otherwise hold the process open for as long as it likes.
 */
export const SHUTDOWN_DRAIN_MS = 10_000;

export async function createServer(config: Config, options: ServerOptions = {}): Promise<Server> {
  const log = options.logger ?? createLogger(config.logLevel);
  // A bad provider file stops start before anything is opened or migrated.
  const providerFile = loadEnvironmentProviders(config);
  const embeddedOnDisk = !config.databaseUrl && !options.inMemory;
  const unlock = embeddedOnDisk ? lockDataDir(config.dataDir) : () => {};
  let db: Database | null = null;
  let queue: JobQueue | null = null;
  let rails: RailService | null = null;
  let webhooks: WebhookService | null = null;
  try {
    db = await openDatabase({ url: config.databaseUrl, dataDir: embeddedOnDisk ? config.dataDir : null });
    if (config.databaseUrl) await reachable(db, config.databaseUrl);
    await migrate(db);

    const organizations = new OrganizationService(db.kysely, config.env);
    const users = new UserService(db.kysely);
    const auth = new AuthService({ db: db.kysely, users, organizations, env: config.env, idp: { jwksUrl: config.idpJwksUrl, issuer: config.idpIssuer, audience: config.idpAudience } });
    await auth.init();
    const idempotency = new IdempotencyStore(db.kysely, config.idempotencyTtlHours);
    queue = new JobQueue(db, log);
    const events = new EventService(db.kysely);
    webhooks = new WebhookService({
      db: db.kysely,
      events,
      queue,
      log,
      settings: {
        env: config.env,
        timeoutMs: config.webhookTimeoutMs,
        secretOverlapSeconds: config.webhookSecretOverlapSeconds,
        maxConsecutiveFailures: config.webhookMaxConsecutiveFailures,
        retryScale: config.webhookRetryScale,
        userAgent: `Corridor-Webhooks/${VERSION}`,
      },
    });
    const providers = new ProviderRegistry({ db: db.kysely, file: providerFile, log });
    rails = new RailService({ providers, refreshSeconds: config.railsRefreshSeconds, log });
    const entities = new EntityService(db.kysely, config.env);
    const destinations = new DestinationService({ db: db.kysely, entities, rails, env: config.env });
    const reports = new ReportService({
      db: db.kysely,
      queue,
      idempotency,
      store: config,
      worker: db.url ? { databaseUrl: db.url, logLevel: config.logLevel } : null,
      log,
      limits: { maxMatchingTransfers: config.reportMaxMatchingTransfers, maxOutputRows: config.reportMaxOutputRows },
      leaseSeconds: config.reportLeaseSeconds,
      pageSize: config.reportPageSize,
      publicBaseUrl: () => {
        const address = app.server.address();
        return publicBaseUrl(config, typeof address === 'object' && address ? address.port : undefined);
      },
    });
    const quotes = new QuoteService({ db: db.kysely, providers, rails, entities, destinations, ttlSeconds: config.quoteTtlSeconds });
    const ledger = new LedgerService(db.kysely);
    const transfers = new TransferService({
      db: db.kysely,
      env: config.env,
      quotes,
      entities,
      destinations,
      events,
      ledger,
      idempotency,
      scheduler: queue,
      stepDelayMs: (BASE_STEP_SECONDS * 1000) / config.sandboxSpeed,
      log,
    });
    const funding = new FundingService({
      db: db.kysely,
      env: config.env,
      dataDir: config.dataDir,
      sessionTtlSeconds: config.fundingSessionTtlSeconds,
      transfers: () => transfers,
      log,
    });
    transfers.useFunding(funding);
    quotes.useOptionUsage(transfers);
    const engine = new TransferEngine({ db: db.kysely, env: config.env, transfers, providers, log });
    const services: Services = { events, webhooks, organizations, users, auth, idempotency, providers, rails, entities, destinations, reports, quotes, ledger, transfers, engine, funding };
    for (const job of reports.jobs()) queue.define(job);

    for (const job of webhooks.jobs()) queue.define(job);
    // Execution: one queued step per transfer ('short' policy keyed by transfer id): a step
    // enqueues the next, and the sweep at start (and every minute) revives transfers whose step
    // was lost. Fetched in batches, fetching again at once while batches come back full: one job
    // per fetch held the engine to 4 workers x 1 step per polling interval (8 steps/s) however
    // many transfers were due. A batch goes to the engine whole (TransferEngine.stepAll).
    queue.define<{ transferId: string }>({
      name: STEP_JOB,
      queue: { policy: 'short', expireInSeconds: 120, retryLimit: 10, retryDelay: 2, retryBackoff: true },
      concurrency: 2,
      batchSize: 25,
      pollingIntervalSeconds: 0.5,
      handler: async ({ transferId }) => {
        await engine.step(transferId);
      },
      batchHandler: (jobs) => engine.stepAll(jobs.map((job) => job.transferId)),
    });
    // Setup has one job for every transfer waiting in PENDING_SETUP ('stately': one queued and
    // one running at most), asked for after creations commit; the transfers table holds what is
    // waiting, so a lost request is made good by the sweep.
    queue.define({
      name: SETUP_JOB,
      queue: { policy: 'stately', expireInSeconds: 300, retryLimit: 10, retryDelay: 2, retryBackoff: true },
      pollingIntervalSeconds: 0.5,
      handler: async () => {
        await engine.setUpPending();
      },
    });
    queue.define({
      name: 'transfers.sweep',
      cron: '* * * * *',
      handler: async () => {
        await engine.sweep({ idleForMs: 60_000 });
      },
    });
    queue.define({
      name: 'quotes.expire-options',
      cron: '* * * * *',
      handler: async () => {
        const expired = await quotes.expireOptions();
        if (expired) log.info({ expired }, 'expired quote options');
      },
    });
    queue.define({
      name: 'funding.expire-sessions',
      cron: '* * * * *',
      handler: async () => {
        const expired = await funding.expireDueSessions();
        if (expired) log.info({ expired }, 'expired funding sessions');
      },
    });
    queue.define({
      name: 'idempotency.prune',
      cron: '*/15 * * * *',
      handler: async () => {
        const removed = await idempotency.prune();
        if (removed) log.info({ removed }, 'pruned expired idempotency records');
      },
    });

    const { app, metrics } = await createHttpApp({
      logger: log,
      bodyLimitBytes: config.bodyLimitBytes,
      trustedProxies: config.trustedProxies,
      https: options.tls ?? null,
      openapi: {
        title: 'Corridor API',
        version: VERSION,
        description: [
          'Cross-border payments across fiat rails and blockchains. Timestamps are ISO 8601 UTC with milliseconds; ids are UUIDs; ' +
            'money is a decimal string at the currency precision, never a number.',
          'Errors: every failure is {code, message} with no wrapper, plus details [{path, message}] for validation_error. Each operation ' +
            'lists, per status, the codes it can answer. Any path also answers 404 not_found when no route matches it, 405 ' +
            'method_not_allowed (with Allow) for a known path called with another method, 400 invalid_url for a path that is not ' +
            'valid percent-encoded UTF-8, and 503 service_unavailable (with Connection: close) for a request that arrives on an ' +
            'open connection while the server is shutting down: retry it.',
          'Bodies are JSON in UTF-8 (except the funding-proof upload). A POST without a body, or with an empty one labelled ' +
            'application/json, is read as {}: actions that take no fields work either way, and a route that needs fields names each ' +
            'missing one (422 validation_error).',
          `Lists answer {data, meta: {total, nextCursor}}: ?limit= from 1 to 100 (default 25), ?cursor= the previous page's ` +
            'meta.nextCursor (null on the last page).',
          'Rate limit: each credential (API key or user) may make CORRIDOR_RATE_LIMIT_PER_MINUTE requests a minute (6000 by default); ' +
            'answers carry RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, and a request over the limit is 429 rate_limited ' +
            'with Retry-After.',
          'Idempotency: POST /v1/transfers and POST /v1/reports require an Idempotency-Key, kept CORRIDOR_IDEMPOTENCY_TTL_HOURS ' +
            '(24 by default); a replay answers the first status and body with Idempotent-Replayed: true.',
          'Versioning: the path prefix /v1 is the version; there is no version header. Within /v1 fields, enum values, error codes and ' +
            'operations may be added, never removed or renamed, so clients ignore what they do not know.',
        ].join('\n\n'),
      },
    });
    app.addSchema(ErrorBody);
    const jobQueue = queue;
    metrics.addGauge('corridor_job_queue_depth', 'Jobs waiting (queued) or running (active), per queue.', ['queue', 'state'], async () =>
      (await jobQueue.depth()).map((d) => ({ labels: { queue: d.queue, state: d.state }, value: d.count })),
    );

    installAuthGuard(app, auth, { rateLimitPerMinute: config.rateLimitPerMinute });
    const database = db;
    await systemRoutes(app, { ping: () => database.ping(), engine: database.engine, metrics });
    await authRoutes(app, { auth, signup: config.signup });
    await userRoutes(app, { users });
    await organizationRoutes(app, { organizations });
    await eventRoutes(app, { events });
    await webhookRoutes(app, { webhooks });
    const railDirectory = rails;
    await providerRoutes(app, { providers, onStatusChange: () => railDirectory.refresh() });
    await railRoutes(app, { rails });
    await entityRoutes(app, { entities });
    await destinationRoutes(app, { destinations });
    await quoteRoutes(app, { quotes });
    await transferRoutes(app, { transfers, engine, env: config.env });
    await fundingRoutes(app, { funding });
    await reportRoutes(app, { reports });
    await dashboardRoutes(app);
    await app.ready();

    await queue.start({ workers: options.workers !== false });
    if (options.workers !== false) transfers.useCreatedSetup((created) => engine.setUpCreated(created));
    // Transfers whose step was in flight when the last process stopped continue from their last committed step.
    await engine.sweep();
    await rails.start();
    await reports.recoverAtStart();

    if (config.opsEmail && config.opsPassword) await auth.ensureOperator(config.opsEmail, config.opsPassword);
    const firstOrganization = options.firstOrganization === false ? null : await auth.bootstrapFirstOrganization();

    const opened = { db, queue, rails, webhooks };
    let closed = false;
    return {
      config,
      app,
      db,
      queue,
      metrics,
      services,
      log,
      firstOrganization,
      async close() {
        if (closed) return;
        closed = true;
        // New connections are refused and idle ones closed at once; requests still running after
        // the drain period lose their connection (a client retries), so shutdown is bounded.
        const drain = setTimeout(() => app.server.closeAllConnections(), options.drainMs ?? SHUTDOWN_DRAIN_MS);
        try {
          await app.close();
        } finally {
          clearTimeout(drain);
        }
        await services.transfers.flushSetupRequest();
        await opened.rails.stop();
        await opened.queue.stop();
        await opened.webhooks.close();
        await opened.db.close();
        unlock();
      },
    };
  } catch (err) {
    await rails?.stop().catch(() => {});
    await queue?.stop().catch(() => {});
    await webhooks?.close().catch(() => {});
    await db?.close().catch(() => {});
    unlock();
    throw err;
  }
}

/** A PostgreSQL server that cannot be used stops start with one line naming DATABASE_URL (never its password). */
async function reachable(db: Database, url: string): Promise<void> {
  try {
    await db.ping();
  } catch (err) {
    const u = new URL(url);
    const where = `${u.hostname}:${u.port || '5432'}${u.pathname}`;
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError([`DATABASE_URL: cannot connect to PostgreSQL at ${where} (${e.message || e.code || String(err)})`]);
  }
}
