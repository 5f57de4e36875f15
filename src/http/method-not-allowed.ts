import type { FastifyInstance, RouteOptions } from 'fastify';
import { AppError } from '../core/errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * False: other methods on this path answer 404, as a path that does not exist, instead of 405
     * (documents and pages served for reading, not resources).
     */
    otherMethods?: false;
    /** Set on the routes {@link answerOtherMethods} adds, so its hook passes over them. */
    answersOtherMethods?: true;
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** A path as the routes seen so far serve it. */
interface ServedPath {
  /** The instance of its first route: the 405 answer is added there, so that instance's hooks (authentication) run first. */
  readonly owner: FastifyInstance;
  /** The path without the owner's prefix, as the owner's routes name it. */
  readonly path: string;
  /** Methods in the order their routes were added. */
  readonly methods: Set<string>;
}

/**
 * Makes every method a path does not serve answer `405 method_not_allowed` with an `Allow`
 * header (RFC 9110 §15.5.6), instead of the framework's 404, from one `onRoute` hook that
 * notes the methods of each path as routes are added; `afterRoutes` (called once every route
 * is registered) adds, for each path, one route for the other methods to the instance of its
 * first route. That route's only hook refuses, after the instance's own (so authentication
 * still comes first), and body parsing never runs. HEAD is implied by GET. A route with
 * `config.otherMethods: false` is left out (other methods stay 404).
 */
export function answerOtherMethods(app: FastifyInstance): { afterRoutes(): Promise<void> } {
  const served = new Map<string, ServedPath>();
  app.addHook('onRoute', function (this: FastifyInstance, route: RouteOptions) {
    const config = route.config as { otherMethods?: false; answersOtherMethods?: true } | undefined;
    if (config?.otherMethods === false || config?.answersOtherMethods) return;
    let entry = served.get(route.url);
    if (!entry) served.set(route.url, (entry = { owner: this, path: (route as RouteOptions & { routePath?: string }).routePath ?? route.url, methods: new Set() }));
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) entry.methods.add(method);
  });
  return {
    async afterRoutes() {
      await app.after();
      for (const { owner, path, methods } of served.values()) {
        const allow = [...methods].filter((m) => m !== 'HEAD');
        if (methods.has('GET') || methods.has('HEAD')) allow.push('HEAD');
        const others = METHODS.filter((m) => !allow.includes(m));
        if (others.length === 0) continue;
        const detail = `Use one of: ${allow.join(', ')}.`;
        owner.route({
          method: others,
          url: path,
          schema: { hide: true },
          config: { answersOtherMethods: true },
          onRequest: async () => {
            throw new AppError('method_not_allowed', detail, undefined, { allow: allow.join(', ') });
          },
          handler: async () => undefined,
        });
      }
      served.clear();
      // Lets the routes just added to instances that had finished loading settle now, before
      // anyone adds a hook to the app (which would otherwise wait behind them forever).
      await app.after();
    },
  };
}
