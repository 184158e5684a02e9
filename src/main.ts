// `npm start`: validate configuration, start the HTTPS service (and the optional plain listener),
// print the first organization's credentials once, and shut down cleanly on SIGINT/SIGTERM.
import { ConfigError, loadConfig, publicBaseUrl } from './platform/config.ts';
import { DataDirLockedError } from './platform/db/data-dir-lock.ts';
import { loadTls } from './platform/http/tls.ts';
import { createPlainListener } from './platform/http/plain-listener.ts';
import { createServer } from './server.ts';
import type { AddressInfo } from 'node:net';

async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const line of err.problems) console.error(`config error: ${line}`);
      process.exit(1);
    }
    throw err;
  }

  let tls;
  let server;
  try {
    tls = await loadTls({ certPath: config.tlsCertPath, keyPath: config.tlsKeyPath, dataDir: config.dataDir, host: config.host });
    // The first organization is created only once both listeners are bound: its credentials are
    // printed once, so a start that cannot listen must not create (and lose) them.
    server = await createServer(config, { tls, firstOrganization: false });
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      console.error(err.message);
      process.exit(1);
    }
    // A bad provider file, unreadable TLS files, an unusable data dir or database: one line per
    // problem, no stack trace.
    if (err instanceof ConfigError) {
      for (const line of err.problems) console.error(`config error: ${line}`);
      process.exit(1);
    }
    throw err;
  }

  try {
    await server.app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await server.close().catch(() => {});
    failToListen(err, 'CORRIDOR_PORT', config.host);
  }
  const address = server.app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const base = publicBaseUrl(config, port);

  let plain: ReturnType<typeof createPlainListener> | null = null;
  if (config.httpPort !== null) {
    plain = createPlainListener(config.trustedProxies, (req, res) => server.app.routing(req, res));
    const listener = plain;
    try {
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject);
        listener.listen(config.httpPort!, config.host, resolve);
      });
    } catch (err) {
      await server.close().catch(() => {});
      failToListen(err, 'CORRIDOR_HTTP_PORT', config.host);
    }
  }
  // Handlers first: a Ctrl-C the moment the banner appears still shuts down cleanly.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second Ctrl-C does not wait: what was not committed is picked up at the next start, as after a crash.
      console.error(`${signal} again: exiting without waiting for the shutdown to finish`);
      process.exit(1);
    }
    stopping = true;
    server.log.info({ signal }, 'shutting down');
    plain?.close();
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  const firstOrganization = await server.services.auth.bootstrapFirstOrganization();

  const lines = [
    '',
    `Corridor ${config.env} is listening on ${base}`,
    `  database: ${server.db.engine === 'pglite' ? `embedded PGlite in ${config.dataDir} (development and sandbox only; no fsync)` : 'PostgreSQL'}`,
    `  TLS certificate: ${tls.certPath}${tls.generated ? ' (self-signed, generated now)' : ''}`,
    `  API reference: ${base}/v1/openapi.json`,
    `  dashboard: ${base}/dashboard`,
  ];
  if (plain) lines.push(`  plain HTTP on port ${(plain.address() as AddressInfo).port} answers 400 https_required`);
  if (firstOrganization) {
    const o = firstOrganization;
    lines.push(
      '',
      'First start: a ready organization was created. These credentials are shown only now.',
      `  API base:     ${base}`,
      `  dashboard:    ${base}/dashboard (sign in with the owner email and password)`,
      `  organization: ${o.organizationId}`,
      `  owner email:  ${o.email}`,
      `  password:     ${o.password}`,
      `  API key:      ${o.apiKey}`,
      '',
      `Try: curl -k ${base}/v1/users -H "X-API-Key: ${o.apiKey}"`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n\n');
}

/**
 * A listener that cannot bind stops the process with one line naming the variable to change.
 * No organization was created yet, so the retry on another port prints the first-start credentials.
 */
function failToListen(err: unknown, portVariable: 'CORRIDOR_PORT' | 'CORRIDOR_HTTP_PORT', host: string): never {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string };
  const at = `${e.address ?? host}:${e.port ?? ''}`.replace(/:$/, '');
  const reasons: Record<string, [string, string]> = {
    EADDRINUSE: [portVariable, `${at} is in use; choose another port`],
    EACCES: [portVariable, `permission denied to listen on ${at}; choose a port above 1023`],
    EADDRNOTAVAIL: ['CORRIDOR_HOST', `${e.address ?? host} is not an address of this machine`],
    ENOTFOUND: ['CORRIDOR_HOST', `${e.hostname ?? host} does not resolve to an address`],
    EAI_AGAIN: ['CORRIDOR_HOST', `${e.hostname ?? host} could not be resolved`],
  };
  const reason = e.code ? reasons[e.code] : undefined;
  if (!reason) throw err;
  console.error(`config error: ${reason[0]}: cannot listen: ${reason[1]}`);
  process.exit(1);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
