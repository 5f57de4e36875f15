import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresDatabase, type PostgresDatabase } from './postgres-cluster.ts';
import { freePort } from './free-port.ts';
import { SERVER_ARGS, sendRequest, spawnServer, type ServerProcess } from './server-process.ts';
import { ADMIN_TOKEN, BACKEND } from './backend.ts';

/** A wum server process on the current backend, started for SDK and CLI tests. */
export interface WumServer {
  readonly port: number;
  readonly adminToken: string;
  /** Base URL of the operator API: `http://localhost:<port>`. */
  readonly adminUrl: string;
  /** Base URL of a workspace: `http://<subdomain>.localhost:<port>` (resolved by the SDK, no Host override). */
  workspaceUrl(subdomain: string): string;
  readonly process: ServerProcess;
  /** Stops the server (SIGTERM, then SIGKILL) and drops its database. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 60_000;

/**
 * Starts the server as `npm start` does (bundle/server.mjs), on a fresh database of the
 * current backend (an embedded PGlite in a temporary DATA_DIR, or a new PostgreSQL database),
 * with the admin API on and no demo workspace, and waits until `/healthz` answers.
 */
export async function startWumServer(env: Record<string, string> = {}): Promise<WumServer> {
  const port = await freePort();
  let database: PostgresDatabase | undefined;
  let dataDir: string | undefined;
  const storage: Record<string, string> = {};
  if (BACKEND === 'postgres') {
    database = await createPostgresDatabase('wum_clients', { migrated: true });
    storage.DATABASE_URL = database.url;
  } else {
    dataDir = mkdtempSync(join(tmpdir(), 'wum-clients-'));
    storage.DATA_DIR = join(dataDir, 'data');
  }
  const server = spawnServer(process.execPath, SERVER_ARGS, {
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    SEED_DEMO: 'false',
    ...storage,
    ...env,
  });
  const cleanUp = async () => {
    server.kill();
    await database?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const healthy = await sendRequest(port, 'GET', '/healthz', { timeoutMs: 1000 }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (healthy) break;
    if (Date.now() > deadline || server.child.exitCode !== null) {
      const output = `${server.stdout().slice(-2000)}\n${server.stderr().slice(-2000)}`;
      await cleanUp();
      throw new Error(`the server did not start on port ${port}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    port,
    adminToken: ADMIN_TOKEN,
    adminUrl: `http://localhost:${port}`,
    workspaceUrl: (subdomain) => `http://${subdomain}.localhost:${port}`,
    process: server,
    async stop() {
      if (server.child.exitCode === null && server.child.pid !== undefined) {
        server.child.kill('SIGTERM');
        await server.waitForExit(15_000).catch(() => undefined);
      }
      await cleanUp();
    },
  };
}
