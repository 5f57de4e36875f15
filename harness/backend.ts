/*
 * What a test run shares with the processes it starts and with scripts/run-tests.ts: the
 * backend chosen, the admin token of test servers, the migrated PGlite template's variable.
 */

/** The backend this test process runs on, chosen by `scripts/run-tests.ts`. */
export const BACKEND = process.env.WUM_TEST_BACKEND === 'postgres' ? 'postgres' : 'pglite';

/**
 * The key-encryption key (`SECRETS_KEY`) of test apps and of every test server started with
 * `DATABASE_URL`: one for all, as replicas of one database share theirs. A test value, not a secret.
 */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/** The admin token of test apps and test servers. */
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * Environment variable naming a tar of a migrated PGlite data directory that `npm test` makes
 * once (scripts/run-tests.ts), so that an in-memory test database starts migrated.
 */
export const TEST_PGLITE_TEMPLATE_VARIABLE = 'WUM_TEST_PGLITE_TEMPLATE';
