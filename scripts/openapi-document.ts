/*
 * The OpenAPI document exactly as the service serves it, built in-process with a fixed
 * configuration (admin API on, default port and base domain), so that what is derived from it
 * (the SDK's types, the lint report) never depends on the machine or its environment.
 */
import { loadConfig } from '../src/config/load-config.ts';
import { buildApp } from '../src/http/app.ts';
import { webhookUrlCheck } from '../src/webhooks/url-guard.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createIdempotencyStore } from '../src/storage/idempotency.queries.ts';
import { createStore } from '../src/storage/store.ts';
import { createKeyRing, generateSecretsKey } from '../src/core/secrets/secret-box.ts';

/** The configuration the document is generated with: every value fixed, none from `process.env`. */
export const DOCUMENT_ENV = {
  PORT: '3000',
  BASE_DOMAIN: 'localhost',
  ADMIN_TOKEN: 'openapi-document-admin-token',
  LOG_LEVEL: 'silent',
} as const;

/**
 * Builds the app on an in-memory PGlite with {@link DOCUMENT_ENV} and returns `app.swagger()`,
 * or with `which` `console` the console's document (`app.consoleSwagger()`, docs/api.md, "The
 * console's routes").
 */
export async function buildOpenApiDocument(which: 'public' | 'console' = 'public'): Promise<Record<string, unknown>> {
  const database = await openDatabase({ kind: 'memory' });
  try {
    const app = await buildApp(loadConfig(DOCUMENT_ENV), {
      checkWebhookUrl: webhookUrlCheck(loadConfig(DOCUMENT_ENV).webhooks),
      store: createStore(database.db, { keyRing: createKeyRing(generateSecretsKey()) }),
      idempotency: createIdempotencyStore(database.db),
      ping: database.ping,
      logger: false,
    });
    try {
      await app.ready();
      // A deep copy: the cached document must not be shared with callers that transform it.
      return structuredClone(which === 'console' ? app.consoleSwagger() : (app.swagger() as unknown as Record<string, unknown>));
    } finally {
      await app.close();
    }
  } finally {
    await database.close();
  }
}
