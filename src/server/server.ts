import cluster from 'node:cluster';
import { detachStdioOnHangup, ignoreStdioErrors } from '../http/log-destination.ts';
import closeWithGrace from 'close-with-grace';
import { ConfigError, loadConfig, type Config } from '../config/load-config.ts';
import { seedDemoWorkspace } from '../core/demo.ts';
import { handOverDemoKey } from './demo-key.ts';
import { startService } from './service.ts';
import { terminalLogStream } from './terminal-log.ts';
import { leaveSignalsToPrimary, runPrimary, shareCacheChanges } from './workers.ts';

/**
 * Starts wum: loads the configuration, opens and migrates storage, starts the cache listener
 * (PostgreSQL only; `service.ts`), seeds the demo workspace on a new embedded database (its key
 * printed on a terminal, else kept in a file of the data directory: demo-key.ts),
 * listens, and shuts down gracefully on SIGTERM/SIGINT in the order of `service.close()`: stop
 * accepting and finish in-flight requests, close Redis, let the webhook delivery worker
 * finish its attempts in flight, stop the scheduler and the cache listener, close the
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
  // Only a new embedded database is seeded, so there is a data directory to keep the key in.
  if (seeded && config.storage.kind === 'pglite') {
    handOverDemoKey(config, seeded.apiKey.key, { stdout: process.stdout, dataDir: config.storage.dataDir, log: app.log });
  }
}

await main();
