import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { openDatabase } from '../../src/storage/database.ts';
import { createPostgresDatabase, withClient } from '../../harness/postgres-cluster.ts';
import { SERVER_ARGS, sendRequest, spawnServer, type HttpResponse, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Shared by the reliability tests (not a test file itself: the runner only picks *.test.ts).
 */

/** A response of either kind: from `app.inject` or from a real socket. */
type AnyResponse = LightMyRequestResponse | HttpResponse;

function statusOf(res: AnyResponse): number {
  return 'statusCode' in res ? res.statusCode : res.status;
}

/** Asserts an RFC 9457 answer with `status` and `code` (and the same status in the body). */
export function assertProblem(res: AnyResponse, status: number, code: string): void {
  assert.equal(statusOf(res), status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = json<'Problem'>(res.body);
  assert.equal(body.code, code, res.body);
  assert.equal(body.status, status);
}

/** A raw HTTP exchange: what the server wrote back before closing, and whether it closed. */
export interface RawExchange {
  readonly raw: string;
  /** Status of the first response line, or 0 when none came. */
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly closedByServer: boolean;
  readonly elapsedMs: number;
}

/**
 * Opens a TCP connection to 127.0.0.1:`port`, writes `chunks` (each after its delay), and
 * collects everything the server sends until it closes the connection or `timeoutMs` passes.
 */
export function rawExchange(
  port: number,
  chunks: ReadonlyArray<string | { delayMs: number; data: string }>,
  timeoutMs: number,
): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    let closedByServer = false;
    const timer = setTimeout(() => finish(), timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const [head = '', ...rest] = raw.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({
        raw,
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0),
        headers,
        body: rest.join('\r\n\r\n'),
        closedByServer,
        elapsedMs: Date.now() - started,
      });
    };
    socket.setEncoding('utf8');
    socket.on('data', (data: string) => (raw += data));
    socket.on('end', () => {
      closedByServer = true;
      finish();
    });
    socket.on('close', () => {
      closedByServer = true;
      finish();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return;
      clearTimeout(timer);
      reject(error);
    });
    // The writes are paced by timers; a failure of the socket ends the promise through 'error'.
    socket.on('connect', () => void (async () => {
      for (const chunk of chunks) {
        if (typeof chunk === 'string') socket.write(chunk);
        else {
          await new Promise((r) => setTimeout(r, chunk.delayMs));
          if (!socket.destroyed) socket.write(chunk.data);
        }
      }
    })());
  });
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 50 ms until it returns true; fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(50);
  }
  assert.fail(`not within ${timeoutMs} ms: ${what}`);
}

/** What one request over a socket ended with: a response, or the socket error it failed with. */
export type Attempt =
  | { readonly ok: true; readonly res: HttpResponse }
  | { readonly ok: false; readonly error: string };

/** {@link sendRequest} that never rejects: a network failure is returned as its error code. */
export async function attempt(
  port: number,
  method: string,
  path: string,
  options: Parameters<typeof sendRequest>[3] = {},
): Promise<Attempt> {
  try {
    return { ok: true, res: await sendRequest(port, method, path, options) };
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    return { ok: false, error: e.code ?? e.name ?? e.message };
  }
}

/** The wum server, started with node (not npm) so its pid is the server's, in a process group. */
export function startServer(env: Record<string, string>): ServerProcess {
  return spawnServer(process.execPath, SERVER_ARGS, env);
}

/** PGlite costs seconds to start and migrate, more on a loaded machine. */
export const START_TIMEOUT_MS = 60_000;
export const LISTENING = /Server listening at/;

/** Runs one SQL statement and returns its rows. */
export type Query = (text: string) => Promise<Array<Record<string, unknown>>>;

/** Storage for a server process of the current backend, and direct access to it. */
export interface ServerStorage {
  /** What the server needs: DATABASE_URL of a new database, or an empty DATA_DIR. */
  readonly env: Record<string, string>;
  /**
   * Opens the storage directly and runs `work` with a query function. The embedded store
   * serves one process: call this only once no server has DATA_DIR open.
   */
  inspect<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /** Drops the database or deletes the directory. */
  remove(): Promise<void>;
}

/** A new PostgreSQL database (postgres backend) or an empty DATA_DIR without the demo (PGlite). */
export async function serverStorage(prefix: string): Promise<ServerStorage> {
  if (BACKEND === 'postgres') {
    const database = await createPostgresDatabase(prefix, { migrated: true });
    return {
      env: { DATABASE_URL: database.url },
      inspect: (work) => withClient(database.url, (client) => work(async (text) => (await client.query<Record<string, unknown>>(text)).rows)),
      remove: () => database.drop(),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const dataDir = join(dir, 'data');
  return {
    env: { DATA_DIR: dataDir, SEED_DEMO: 'false' },
    async inspect(work) {
      const direct = await openDatabase({ kind: 'pglite', dataDir });
      try {
        return await work(async (text) => ((await direct.db.execute(sql.raw(text))) as unknown as { rows: Array<Record<string, unknown>> }).rows);
      } finally {
        await direct.close();
      }
    },
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
