import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { HttpLimits } from '../../config/load-config.ts';

/**
 * Bounds what idle connections may hold: a connection that sends nothing within
 * `idleTimeoutMs` of being accepted is closed (Node's own timers start only with a request's
 * first byte, or not at all when `CONNECTION_TIMEOUT_MS` is 0), and past `maxConnections` open
 * connections new ones are closed as they arrive (Node `server.maxConnections`). Idle time
 * between keep-alive requests is Node's `keepAliveTimeout`. Publishes
 * `http_open_connections` and `http_connections_refused_total` on `registry`.
 * Source: docs/security.md, "Idle and excess connections"; Node `net.Server` `maxConnections`
 * and its `drop` event.
 */
export function registerConnectionLimits(
  app: FastifyInstance,
  limits: Pick<HttpLimits, 'idleTimeoutMs' | 'maxConnections'>,
  registry: Registry,
): void {
  const server = app.server;
  let open = 0;
  new Gauge({
    name: 'http_open_connections',
    help: 'TCP connections this process holds open.',
    registers: [registry],
    collect() {
      this.set(open);
    },
  });
  const refused = new Counter({
    name: 'http_connections_refused_total',
    help: 'Connections closed on arrival because MAX_CONNECTIONS were open.',
    registers: [registry],
  });
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
  server.on('drop', () => refused.inc());
  server.on('connection', (socket: Socket) => {
    open += 1;
    socket.once('close', () => (open -= 1));
    if (limits.idleTimeoutMs <= 0) return;
    // The parser may read the socket's handle directly (no 'data' events): a request's start is
    // seen as the server's 'request' event, and bytes that never make a request as bytesRead.
    const timer = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, limits.idleTimeoutMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}
