import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type * as schema from './schema.ts';

/**
 * Drizzle over either backend; query code is typed against this and never knows which. Its own
 * module so that what database.ts opens (the request transaction) can name it without a cycle.
 */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;
