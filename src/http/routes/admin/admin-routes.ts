import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { requireOperator, type OperatorGuard } from '../../plugins/admin-auth.ts';
import { apiKeysRoutes } from './api-keys-routes.ts';
import { auditStreamsRoutes } from './audit-streams-routes.ts';
import type { AuditStreamDependencies } from '../../../core/audit-streams/audit-streams-service.ts';
import { auditRoutes, workspaceAuditRoutes } from './audit-routes.ts';
import { auditExportRoutes, workspaceAuditExportRoutes } from './audit-export-routes.ts';
import { catalogueRoutes } from './catalogue-routes.ts';
import { workspacesRoutes } from './workspaces-routes.ts';
import { identityProviderRoutes } from './identity-provider-routes.ts';
import { webhookEndpointsRoutes } from './webhook-endpoints-routes.ts';
import { secretsKeyRoutes } from './secrets-key-routes.ts';
import { policiesRoutes } from '../external/lifecycle-routes.ts';
import { OPERATOR_MOUNT } from '../route-mount.ts';
import type { WebhookUrlCheck } from '../../../core/webhooks/webhook-endpoints-service.ts';
import type { IdentityProviderCheck } from '../../../core/identity-providers/identity-providers-service.ts';
import type { PolicyLimits } from '../../../core/lifecycle/policy.ts';

/**
 * The operator API under `/admin/v1`, on the operator host only and behind the admin token: workspaces, their API keys,
 * audit trail, webhook endpoints, identity provider and access policies, the product catalogue, and the rotation of the
 * secrets key, one plugin per resource; a workspace's resources are the same plugins its own API mounts
 * (routes/route-mount.ts). Source: docs/contract.md Part B, Operator interface.
 */
export async function adminRoutes(
  app: FastifyInstance,
  options: OperatorGuard & { store: Store; checkWebhookUrl: WebhookUrlCheck; checkIdentityProvider: IdentityProviderCheck; policyLimits: PolicyLimits; auditStreams: AuditStreamDependencies },
): Promise<void> {
  requireOperator(app, options);
  const { store } = options;
  for (const routes of [workspacesRoutes, auditRoutes, auditExportRoutes, catalogueRoutes, secretsKeyRoutes]) {
    await app.register(routes, { store });
  }
  const mount = OPERATOR_MOUNT;
  await app.register(apiKeysRoutes, { store, mount });
  await app.register(workspaceAuditRoutes, { store, mount });
  await app.register(workspaceAuditExportRoutes, { store, mount });
  await app.register(identityProviderRoutes, { store, check: options.checkIdentityProvider, mount });
  await app.register(webhookEndpointsRoutes, { store, checkUrl: options.checkWebhookUrl, mount });
  await app.register(policiesRoutes, { store, limits: options.policyLimits, mount });
  await app.register(auditStreamsRoutes, { store, mount, streams: options.auditStreams });
}
