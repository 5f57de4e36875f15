import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.ts';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * Answers every method a path does not serve with `405 method_not_allowed` and an `Allow`
 * header (RFC 9110 §15.5.6), instead of the framework's 404. The check runs as the route's
 * first hook, so authentication still comes first and body parsing never runs.
 *
 * @param allowed - the methods the path serves; HEAD is implied by GET.
 */
export function rejectOtherMethods(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const allow = allowed.includes('GET') ? [...new Set([...allowed, 'HEAD'])] : [...allowed];
  app.route({
    method: METHODS.filter((m) => !allow.includes(m)),
    url,
    schema: { hide: true },
    onRequest: async () => {
      throw new AppError('method_not_allowed', `Use one of: ${allow.join(', ')}.`, undefined, { allow: allow.join(', ') });
    },
    handler: async () => undefined,
  });
}
