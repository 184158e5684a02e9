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

  const tls = await loadTls({ certPath: config.tlsCertPath, keyPath: config.tlsKeyPath, dataDir: config.dataDir, host: config.host });
  let server;
  try {
    server = await createServer(config, { tls });
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      console.error(err.message);
      process.exit(1);
    }
    // e.g. a bad provider configuration file: one line per problem, no stack trace.
    if (err instanceof ConfigError) {
      for (const line of err.problems) console.error(`config error: ${line}`);
      process.exit(1);
    }
    throw err;
  }

  await server.app.listen({ host: config.host, port: config.port });
  const address = server.app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const base = publicBaseUrl(config, port);

  let plain: ReturnType<typeof createPlainListener> | null = null;
  if (config.httpPort !== null) {
    plain = createPlainListener(config.trustedProxies, (req, res) => server.app.routing(req, res));
    const listener = plain;
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(config.httpPort!, config.host, resolve);
    });
  }

  const lines = [
    '',
    `Corridor ${config.env} is listening on ${base}`,
    `  database: ${server.db.engine === 'pglite' ? `embedded PGlite in ${config.dataDir} (development and sandbox only; no fsync)` : 'PostgreSQL'}`,
    `  TLS certificate: ${tls.certPath}${tls.generated ? ' (self-signed, generated now)' : ''}`,
    `  API reference: ${base}/v1/openapi.json`,
  ];
  if (plain) lines.push(`  plain HTTP on port ${(plain.address() as AddressInfo).port} answers 400 https_required`);
  if (server.firstOrganization) {
    const o = server.firstOrganization;
    lines.push(
      '',
      'First start: a ready organization was created. These credentials are shown only now.',
      `  API base:     ${base}`,
      `  organization: ${o.organizationId}`,
      `  owner email:  ${o.email}`,
      `  password:     ${o.password}`,
      `  API key:      ${o.apiKey}`,
      '',
      `Try: curl -k ${base}/v1/users -H "X-API-Key: ${o.apiKey}"`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n\n');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.log.info({ signal }, 'shutting down');
    plain?.close();
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e.code === 'EADDRINUSE' || e.code === 'EACCES') {
    console.error(`cannot listen on ${e.address}:${e.port}: ${e.code === 'EADDRINUSE' ? 'the port is in use' : 'permission denied'}; set CORRIDOR_PORT (or CORRIDOR_HTTP_PORT) to another port`);
    process.exit(1);
  }
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
