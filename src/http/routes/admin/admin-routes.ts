import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { requireAdminToken, type AdminGuard } from '../../plugins/admin-auth.ts';
import { apiKeysRoutes } from './api-keys-routes.ts';
import { auditRoutes } from './audit-routes.ts';
import { catalogueRoutes } from './catalogue-routes.ts';
import { workspacesRoutes } from './workspaces-routes.ts';
import { identityProviderRoutes } from './identity-provider-routes.ts';
import { webhookEndpointsRoutes } from './webhook-endpoints-routes.ts';
import { secretsKeyRoutes } from './secrets-key-routes.ts';
import type { WebhookUrlCheck } from '../../../core/webhooks/webhook-endpoints-service.ts';
import type { IdentityProviderCheck } from '../../../core/identity-providers/identity-providers-service.ts';

/**
 * The operator API under `/admin/v1`, on the operator host only and behind the admin token: workspaces, their API keys,
 * audit trail and webhook endpoints, the product catalogue, and the rotation of the secrets key, one plugin per resource.
 * Source: docs/contract.md Part B, Operator interface.
 */
export async function adminRoutes(
  app: FastifyInstance,
  options: AdminGuard & { store: Store; checkWebhookUrl: WebhookUrlCheck; checkIdentityProvider: IdentityProviderCheck },
): Promise<void> {
  requireAdminToken(app, options);
  for (const routes of [workspacesRoutes, apiKeysRoutes, auditRoutes, catalogueRoutes, secretsKeyRoutes]) {
    await app.register(routes, { store: options.store });
  }
  await app.register(identityProviderRoutes, { store: options.store, check: options.checkIdentityProvider });
  await app.register(webhookEndpointsRoutes, { store: options.store, checkUrl: options.checkWebhookUrl });
}
