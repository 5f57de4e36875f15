import type { FastifyInstance } from 'fastify';
import { secretsEqual } from '../../core/api-keys/api-key-secret.ts';
import { AppError } from '../../core/errors.ts';

/**
 * Requires `Authorization: Bearer <ADMIN_TOKEN>` on every route of the instance it is added
 * to, compared in constant time. Source: docs/contract.md Part B, Operator interface.
 * @throws AppError `invalid_admin_token` (401) with `WWW-Authenticate: Bearer` (RFC 6750 §3).
 */
export function requireAdminToken(app: FastifyInstance, adminToken: string): void {
  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1] || !secretsEqual(match[1], adminToken)) {
      throw new AppError('invalid_admin_token', 'Send the operator token as Authorization: Bearer <token>.', undefined, {
        'www-authenticate': 'Bearer realm="wum-admin"',
      });
    }
  });
}
