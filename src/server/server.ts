import cluster from 'node:cluster';
import { detachStdioOnHangup, ignoreStdioErrors } from '../http/log-destination.ts';
import closeWithGrace from 'close-with-grace';
import { ConfigError, loadConfig, type Config } from '../config/load-config.ts';
import { DEMO_SUBDOMAIN, seedDemoWorkspace } from '../core/demo.ts';
import { EXTERNAL_PREFIX } from '../http/plugins/tenant.ts';
import { startService } from './service.ts';
import { terminalLogStream } from './terminal-log.ts';
import { leaveSignalsToPrimary, runPrimary, shareCacheChanges } from './workers.ts';

function demoBanner(config: Config, apiKey: string): string {
  // The workspace is named by the Host header, so the URL uses BASE_DOMAIN whatever HOST binds.
  const base = `http://${DEMO_SUBDOMAIN}.${config.baseDomain}:${config.port}${EXTERNAL_PREFIX}`;
  return [
    '',
    `Created the demo workspace "${DEMO_SUBDOMAIN}". Its API key is shown only this once:`,
    '',
    `  export WUM_API_KEY=${apiKey}`,
    `  curl -H "X-Api-Key: ${apiKey}" ${base}/users`,
    '',
  ].join('\n');
}

/**
 * Starts wum: loads the configuration, opens and migrates storage, starts the cache listener
 * (PostgreSQL only; `service.ts`), seeds the demo workspace on a new embedded database,
 * listens, and shuts down gracefully on SIGTERM/SIGINT in the order of `service.close()`: stop
 * accepting and finish in-flight requests (and close Redis), let the webhook delivery worker
 * finish its attempts in flight, stop the event pruner and the cache listener, close the
 * database. With WORKERS > 1 this process becomes the primary of that many workers, each of
 * which runs the rest of this function.
 */
async function main(): Promise<void> {
  // A closed terminal must not turn log writes into a loop of uncaught errors (log-destination.ts).
  ignoreStdioErrors();
  detachStdioOnHangup();
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`wum: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  if (config.workers > 1 && cluster.isPrimary) {
    runPrimary(config);
    return;
  }
  // With WORKERS, a key revoked or a product changed through one worker is forgotten by all
  // at once (IPC through the primary); every other replica learns it through PostgreSQL.
  const cacheChanges = shareCacheChanges(() => service.store.forgetCached());
  const logStream = terminalLogStream();
  const service = await startService(config, { onChange: () => cacheChanges.announce(), ...(logStream ? { logStream } : {}) });
  const { app, store, database } = service;
  // In-flight requests get SHUTDOWN_TIMEOUT_MS to finish; then the process exits anyway.
  closeWithGrace({ delay: config.http.shutdownTimeoutMs, skip: leaveSignalsToPrimary() }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down');
    await service.close();
  });
  const seeded = database.created && config.seedDemo ? await seedDemoWorkspace(store) : undefined;
  await app.listen({ port: config.port, host: config.host });
  if (seeded) process.stdout.write(`${demoBanner(config, seeded.apiKey.key)}\n`);
}

await main();
