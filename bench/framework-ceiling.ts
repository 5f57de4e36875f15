/*
 * The framework ceiling: a bare Fastify server with one route returning constant JSON (the
 * body `GET /products` returns for the benchmark's catalogue), with the process settings of
 * the real server: compiled JavaScript on plain node, the same logger and level, the same
 * PORT/HOST variables and `GET /healthz`. The benchmark compiles and starts it like
 * `dist/http/server.js`.
 */
import Fastify from 'fastify';

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
app.get('/api/external/v2/products', async () => CATALOGUE);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
