import type { FastifyInstance } from 'fastify';
import type { IdentityProviderCheck } from '../../../core/identity-providers/identity-providers-service.ts';
import type { Store } from '../../../core/ports.ts';
import type { AuditStreamDependencies } from '../../../core/audit-streams/audit-streams-service.ts';
import type { WebhookUrlCheck } from '../../../core/webhooks/webhook-endpoints-service.ts';
import { apiKeysRoutes } from '../admin/api-keys-routes.ts';
import { auditStreamsRoutes } from '../admin/audit-streams-routes.ts';
import { workspaceAuditRoutes } from '../admin/audit-routes.ts';
import { workspaceAuditExportRoutes } from '../admin/audit-export-routes.ts';
import { identityProviderRoutes } from '../admin/identity-provider-routes.ts';
import { webhookEndpointsRoutes } from '../admin/webhook-endpoints-routes.ts';
import { WORKSPACE_MOUNT } from '../route-mount.ts';

/**
 * The owner's self-service on the workspace's host (docs/api.md, "Self-service"): its API keys
 * (`keys:write`), identity provider (`sso:write`), webhook endpoints (`webhooks:write`), audit
 * trail (`audit:read`) and audit streams (`audit:write`), through the same route definitions as the operator API's, for the
 * workspace of the request's key or session.
 */
export async function selfServiceRoutes(
  app: FastifyInstance,
  options: { store: Store; checkWebhookUrl: WebhookUrlCheck; checkIdentityProvider: IdentityProviderCheck; auditStreams: AuditStreamDependencies },
): Promise<void> {
  const { store } = options;
  const mount = WORKSPACE_MOUNT;
  await app.register(apiKeysRoutes, { store, mount });
  await app.register(workspaceAuditRoutes, { store, mount });
  await app.register(workspaceAuditExportRoutes, { store, mount });
  await app.register(identityProviderRoutes, { store, check: options.checkIdentityProvider, mount });
  await app.register(webhookEndpointsRoutes, { store, checkUrl: options.checkWebhookUrl, mount });
  await app.register(auditStreamsRoutes, { store, mount, streams: options.auditStreams });
}
