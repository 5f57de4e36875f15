import assert from 'node:assert/strict';
import { freePort } from '../../harness/free-port.ts';
import { sendRequest, type HttpResponse, type ServerProcess } from '../../harness/server-process.ts';
import { LISTENING, START_TIMEOUT_MS, serverStorage, startServer, type ServerStorage } from '../reliability/support.ts';
import { json } from './json.ts';

/*
 * The real server process of the crash tests (test/e2e/*-crash.test.ts): started on storage of
 * the current backend and a fixed port, so that a second process started after a SIGKILL finds
 * the first one's data where it left it; seeded through the admin API like any operator would.
 */

const ADMIN_TOKEN = 'spawned-server-admin-token-0123';
const API = '/api/external/v2';

/** A workspace made through the admin API of a spawned server, with what its requests need. */
export interface SpawnedWorkspace {
  readonly subdomain: string;
  /** Its first API key (every scope). */
  readonly key: string;
  /** `Host` and `X-Api-Key` of a request to its external API. */
  readonly request: { readonly host: string; readonly headers: Record<string, string> };
}

/** Server processes that share one storage and one port, one at a time. */
export interface SpawnedServers {
  readonly port: number;
  readonly storage: ServerStorage;
  /** The operator's `Authorization` header. */
  readonly admin: Record<string, string>;
  /** Starts a process with the shared environment (and `env`), resolving once it listens. */
  start(env?: Record<string, string>): Promise<ServerProcess>;
  /** SIGKILLs a process's group, resolving once it exited: nothing it held in memory survives. */
  crash(server: ServerProcess): Promise<void>;
  /** The product `crm` (role `member`) and a workspace `subdomain`. */
  seed(subdomain: string): Promise<SpawnedWorkspace>;
  /** A request to the workspace's external API (`path` under `/api/external/v2`). */
  api(ws: SpawnedWorkspace, method: string, path: string, body?: unknown): Promise<HttpResponse>;
  /** Adds the user `email` (a non-owner with `crm:member`), asserting the 201. */
  addUser(ws: SpawnedWorkspace, email: string): Promise<void>;
  /** Kills every process started and removes the storage. */
  close(): Promise<void>;
}

/**
 * Storage named after `prefix` and a free port for server processes started with `env` (beside
 * the admin token, `LOG_LEVEL=info` and no per-key rate limit, which every crash test wants).
 */
export async function spawnedServers(prefix: string, env: Record<string, string> = {}): Promise<SpawnedServers> {
  const storage = await serverStorage(prefix);
  const port = await freePort();
  const spawned: ServerProcess[] = [];
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const servers: SpawnedServers = {
    port,
    storage,
    admin,
    async start(extra = {}) {
      const server = startServer({ ...storage.env, PORT: String(port), ADMIN_TOKEN, LOG_LEVEL: 'info', RATE_LIMIT_PER_KEY: '0', ...env, ...extra });
      spawned.push(server);
      // Twice the usual start time: a crash test starts the server twice on a loaded machine.
      await server.waitForOutput(LISTENING, 2 * START_TIMEOUT_MS);
      return server;
    },
    async crash(server) {
      server.kill();
      await server.waitForExit(10_000);
    },
    async seed(subdomain) {
      assert.equal((await sendRequest(port, 'PUT', '/admin/v1/products/crm', { headers: admin, body: { roles: ['member'] } })).status, 201);
      const ws = await sendRequest(port, 'POST', '/admin/v1/workspaces', { headers: admin, body: { subdomain } });
      assert.equal(ws.status, 201, ws.body);
      const key = json<'createWorkspace'>(ws).api_key.key;
      return { subdomain, key, request: { host: `${subdomain}.localhost:${port}`, headers: { 'x-api-key': key } } };
    },
    api: (ws, method, path, body) => sendRequest(port, method, `${API}${path}`, { ...ws.request, ...(body === undefined ? {} : { body }) }),
    async addUser(ws, email) {
      const res = await servers.api(ws, 'POST', '/users', { user: { email, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] } });
      assert.equal(res.status, 201, res.body);
    },
    async close() {
      for (const server of spawned) server.kill();
      await storage.remove();
    },
  };
  return servers;
}
