import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config/load-config.ts';
import type { Store } from '../../src/core/ports.ts';
import { DEMO_PRODUCTS } from '../../src/core/demo.ts';
import { buildApp } from '../../src/http/app.ts';
import { openDatabase, type OpenDatabase } from '../../src/storage/database.ts';
import { storageDependencies } from '../../src/server/app-dependencies.ts';
import { createStore } from '../../src/storage/store.ts';
import { createPostgresDatabase } from '../../harness/postgres-cluster.ts';
import { ADMIN_TOKEN, BACKEND, TEST_PGLITE_TEMPLATE_VARIABLE, TEST_SECRETS_KEY } from '../../harness/backend.ts';
import { createKeyRing, type KeyRing } from '../../src/core/secrets/secret-box.ts';
import { checkAnswersAgainstDocument, type DocumentCheck } from './document-check.ts';
import { json } from './json.ts';

export { ADMIN_TOKEN, BACKEND, TEST_PGLITE_TEMPLATE_VARIABLE, TEST_SECRETS_KEY };

/** The key ring of test stores: {@link TEST_SECRETS_KEY}, as {@link testConfig} sets it. */
export function testKeyRing(): KeyRing {
  return createKeyRing(Buffer.from(TEST_SECRETS_KEY, 'base64'));
}
/** Path prefix of the external API. */
export const API = '/api/external/v2';

/** A workspace made for a test, with a live API key. */
export interface TestWorkspace {
  readonly subdomain: string;
  readonly apiKey: string;
  readonly apiKeyId: string;
  /** Host header addressing it. */
  readonly host: string;
}

/** Options of {@link TestContext.api}. */
export interface ApiRequest {
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly query?: Record<string, string>;
  /** Omit the X-Api-Key header. */
  readonly noKey?: boolean;
}

/** A migrated database, an app built on it the production way, and helpers. */
export interface TestContext {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly database: OpenDatabase;
  readonly config: Config;
  /**
   * Builds another app on the same database with extra environment variables, and optionally
   * its own clock (a `testClock()`'s `now`: a test of an expiry advances it instead of sleeping).
   */
  buildApp(env?: Record<string, string>, now?: () => number): Promise<FastifyInstance>;
  /** Creates a workspace through the admin API, with a unique subdomain. */
  createWorkspace(prefix?: string): Promise<TestWorkspace>;
  /** Puts the demo catalogue (analytics, crm, helpdesk). */
  seedProducts(): Promise<void>;
  /** Calls the external API of a workspace with its key and JSON body. */
  api(ws: TestWorkspace, method: InjectOptions['method'], path: string, options?: ApiRequest): Promise<LightMyRequestResponse>;
  /** Calls the admin API with the admin token. */
  admin(method: InjectOptions['method'], path: string, body?: unknown): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** The in-memory PGlite of a test: from `npm test`'s migrated template when there is one. */
export function memoryDatabase(): { readonly kind: 'memory'; readonly from?: string } {
  const from = process.env[TEST_PGLITE_TEMPLATE_VARIABLE];
  return from ? { kind: 'memory', from } : { kind: 'memory' };
}

let workspaceCounter = 0;

async function openTestDatabase(): Promise<OpenDatabase> {
  if (BACKEND === 'pglite') return openDatabase(memoryDatabase());
  const { url } = await createPostgresDatabase(undefined, { migrated: true });
  return openDatabase({ kind: 'postgres', url, poolSize: 20 });
}

/**
 * Test configuration: admin API on, logs off, webhooks to loopback only (a test that names another
 * address fails instead of sending traffic off the machine), limits as in production unless overridden, but
 * no shedding on event-loop delay: an in-process app shares its loop with embedded PGlite and
 * with the test itself, so a loaded CI machine would shed requests no server would see (the
 * load-shedding tests set their own thresholds).
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ ADMIN_TOKEN, LOG_LEVEL: 'silent', SHED_EVENT_LOOP_DELAY_MS: '0', WEBHOOK_LOOPBACK_ONLY: 'true', SECRETS_KEY: TEST_SECRETS_KEY, ...env });
}

/**
 * Opens a fresh migrated database of the current backend (one per test file) and builds the
 * app on it with `buildApp`, exactly as the server does.
 */
export async function createTestContext(env: Record<string, string> = {}): Promise<TestContext> {
  const database = await openTestDatabase();
  const store = createStore(database.db, { keyRing: testKeyRing() });
  const apps: FastifyInstance[] = [];
  const checks: DocumentCheck[] = [];
  const build = async (extra: Record<string, string> = {}, now?: () => number) => {
    const config = testConfig({ ...env, ...extra });
    const app = await buildApp(config, {
      ...storageDependencies(config, database, store),
      logger: false,
      ...(now ? { now } : {}),
    });
    checks.push(checkAnswersAgainstDocument(app));
    await app.ready();
    apps.push(app);
    return app;
  };
  const app = await build();
  const config = testConfig(env);

  const admin: TestContext['admin'] = (method, path, body) =>
    app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(body === undefined ? {} : { payload: body as object }),
    });

  return {
    app,
    store,
    database,
    config,
    buildApp: build,
    admin,
    async createWorkspace(prefix = 'ws') {
      workspaceCounter += 1;
      const subdomain = `${prefix}-${process.pid}-${workspaceCounter}`;
      const response = await admin('POST', '/workspaces', { subdomain });
      if (response.statusCode !== 201) throw new Error(`workspace creation failed: ${response.body}`);
      const created = json<'createWorkspace'>(response);
      return {
        subdomain,
        apiKey: created.api_key.key,
        apiKeyId: created.api_key.id,
        host: `${subdomain}.localhost:3000`,
      };
    },
    async seedProducts() {
      for (const product of DEMO_PRODUCTS) {
        const response = await admin('PUT', `/products/${product.name}`, { roles: product.roles });
        if (response.statusCode >= 300) throw new Error(`product seed failed: ${response.body}`);
      }
    },
    api(ws, method, path, options = {}) {
      const headers: Record<string, string> = { host: ws.host, ...options.headers };
      if (!options.noKey) headers['x-api-key'] ??= ws.apiKey;
      return app.inject({
        method,
        url: `${API}${path}`,
        headers,
        ...(options.query ? { query: options.query } : {}),
        ...(options.body === undefined ? {} : { payload: options.body as object }),
      });
    },
    async close() {
      for (const a of apps) await a.close();
      await database.close();
      const violations = [...new Set(checks.flatMap((check) => check.violations))];
      if (process.env.WUM_DOCUMENT_CHECK_REPORT) appendFileSync(process.env.WUM_DOCUMENT_CHECK_REPORT, violations.map((v) => `${v}\n`).join(''));
      else assert.deepEqual(violations, [], 'every answer is described by the OpenAPI document');
    },
  };
}

/** A valid `POST /users` body for `email` (a non-owner with one crm role unless overridden). */
export function userBody(email: string, user: Record<string, unknown> = {}) {
  return { user: { email, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }], ...user } };
}
