/*
 * The framework ceilings: a bare Fastify server with the process settings of the real server
 * (compiled JavaScript on plain node, the same logger and level, the same PORT/HOST variables
 * and `GET /healthz`). The benchmark compiles and starts it like `dist/src/server/server.js`, in one
 * of two modes:
 *
 * - without `CEILING_SQL_FILE`: one route returning constant JSON (the body `GET /products`
 *   returns for the benchmark's catalogue);
 * - with `CEILING_SQL_FILE` (written by the benchmark): one route, the endpoint's method and
 *   path, that runs the SQL the service ran for one such request (bench/sql-replay.ts: the
 *   same statements, parameters, prepared-statement names and transaction) through a `pg`
 *   pool of `DATABASE_POOL_SIZE` connections to `DATABASE_URL`, with the request's email
 *   (path parameter or `user.email` of the body) and a new UUID, and returns the JSON the
 *   service returned for it, with its status — what a developer would write by hand around
 *   the same SQL, with nothing of the service (no authentication, validation or mapping).
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import pg from 'pg';
import { runOperation, templateFromJson } from './sql-replay.ts';

/** What `CEILING_SQL_FILE` holds. */
export interface SqlCeilingFile {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The route, e.g. `/api/external/v2/users/:email`. */
  readonly url: string;
  /** Where the request names the user the SQL works on, if it does. */
  readonly emailAt?: 'path' | 'body';
  /** The template, as `templateToJson` wrote it. */
  readonly template: string;
  readonly status: number;
  /** The JSON body the service answered, parsed. */
  readonly body: unknown;
}

const CATALOGUE = {
  products: [
    { name: 'analytics', roles: ['editor', 'viewer'] },
    { name: 'crm', roles: ['admin', 'member'] },
    { name: 'helpdesk', roles: ['agent', 'supervisor'] },
  ],
};

const app = Fastify({
  logger: { level: process.env.LOG_LEVEL ?? 'info', redact: ['req.headers["x-api-key"]', 'req.headers.authorization'] },
});
app.get('/healthz', async () => ({ status: 'ok' }));
const sqlFile = process.env.CEILING_SQL_FILE;
let pool: pg.Pool | undefined;
if (sqlFile) {
  const spec = JSON.parse(readFileSync(sqlFile, 'utf8')) as SqlCeilingFile;
  const template = templateFromJson(spec.template);
  const database = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
  pool = database;
  const emailOf = (request: { params: unknown; body: unknown }): string => {
    if (spec.emailAt === 'path') return (request.params as { email: string }).email;
    if (spec.emailAt === 'body') return (request.body as { user: { email: string } }).user.email;
    return '';
  };
  app.route({
    method: spec.method,
    url: spec.url,
    handler: async (request, reply) => {
      const client = await database.connect();
      try {
        await runOperation(client, template, emailOf(request));
      } finally {
        client.release();
      }
      return reply.code(spec.status).send(spec.body);
    },
  });
} else {
  app.get('/api/external/v2/products', async () => CATALOGUE);
}
process.once('SIGTERM', () => void app.close().then(() => pool?.end()).then(() => process.exit(0)));
await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
