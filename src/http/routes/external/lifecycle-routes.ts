import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { recordActivity } from '../../../core/lifecycle/activity.ts';
import type { PolicyLimits } from '../../../core/lifecycle/policy.ts';
import {
  deleteInactivityPolicy,
  getExpiryPolicy,
  getInactivityPolicy,
  putExpiryPolicy,
  putInactivityPolicy,
} from '../../../core/lifecycle/policies.ts';
import type { Store } from '../../../core/ports.ts';
import { scoped } from '../../route-scopes.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { BODY_ERRORS, EXTERNAL_API_ERRORS, jsonResponse, problemResponses } from '../../schemas/common.ts';
import {
  ActivityBody,
  ActivityResultSchema,
  ExpiryPolicySchema,
  InactivityPolicySchema,
  toWireActivityResult,
  toWireExpiryPolicy,
  toWireInactivityPolicy,
} from '../../schemas/policies.ts';
import type { RouteMount } from '../route-mount.ts';

/** The workspace of a request. */
function workspaceOf(request: FastifyRequest): number {
  return tenantOf(request).workspace.id;
}

/**
 * `POST /users/activity` of the external API. Source: docs/contract.md Part B, "Access that ends on time".
 */
export async function activityRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post('/users/activity', {
    schema: {
      operationId: 'reportActivity',
      summary: 'Report when people were last active',
      description:
        'Moves each named user\'s `last_active_at` forward to the time reported (never back), which the inactivity ' +
        'policy reads. Emails no user has are listed back, not refused. Needs only the `activity:write` scope.',
      tags: ['policies'],
      security: scoped('activity:write'),
      body: ActivityBody,
      response: {
        200: jsonResponse('How many users moved forward, and the unknown emails.', ActivityResultSchema, { updated: 1, unchanged: 0, unknown: [] }),
        ...problemResponses(...EXTERNAL_API_ERRORS, ...BODY_ERRORS),
      },
    },
    handler: async (request) => {
      const reports = request.body.activity.map((item) => ({ email: item.email, at: new Date(item.at) }));
      return toWireActivityResult(await recordActivity(store, workspaceOf(request), reports));
    },
  });
}

/**
 * A workspace's access policies (`/policies/inactivity`, `/policies/expiry`): mounted in the
 * workspace's API and in the operator's, under `/workspaces/{subdomain}` (docs/api.md,
 * "Self-service"). Source: docs/contract.md Part B, "Access that ends on time".
 */
export async function policiesRoutes(app: FastifyInstance, options: { store: Store; limits: PolicyLimits; mount: RouteMount }): Promise<void> {
  const { store, limits, mount } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const inactivity = `${mount.base}/policies/inactivity`;
  const expiry = `${mount.base}/policies/expiry`;
  const tags = mount.tags('policies');
  const params = Type.Object(mount.params);
  const workspace = (request: FastifyRequest) => mount.workspaceId(request, store);

  const inactivityExample = { deactivate_after: 'P90D', applies_to: 'non_owners', warn_before: 'P7D' };
  api.put(inactivity, {
    schema: {
      operationId: mount.pick('putWorkspaceInactivityPolicy', 'putInactivityPolicy'),
      params,
      summary: 'Set the inactivity policy',
      description:
        'Active users not seen for `deactivate_after` are deactivated (reason `inactive`); `warn_before` sends ' +
        '`user.access_expiring` ahead. Durations shorter than the server\'s minimum → `422 invalid_duration`.',
      tags,
      security: mount.security('policies:write'),
      body: InactivityPolicySchema,
      response: {
        200: jsonResponse('The policy as stored.', InactivityPolicySchema, inactivityExample),
        ...problemResponses(...mount.errors, ...BODY_ERRORS, 'invalid_duration'),
      },
    },
    handler: async (request) =>
      toWireInactivityPolicy(
        await putInactivityPolicy(
          store,
          await workspace(request),
          { deactivateAfter: request.body.deactivate_after, appliesTo: request.body.applies_to, warnBefore: request.body.warn_before ?? null },
          limits,
          mount.actor(request),
        ),
      ),
  });

  api.get(inactivity, {
    schema: {
      operationId: mount.pick('getWorkspaceInactivityPolicy', 'getInactivityPolicy'),
      params,
      summary: 'The inactivity policy',
      description: 'As `PUT` took it; `404 policy_not_found` when there is none.',
      tags,
      security: mount.security('users:read'),
      response: {
        200: jsonResponse('The policy.', InactivityPolicySchema, inactivityExample),
        ...problemResponses(...mount.errors, 'policy_not_found'),
      },
    },
    handler: async (request) => toWireInactivityPolicy(await getInactivityPolicy(store, await workspace(request))),
  });

  api.delete(inactivity, {
    schema: {
      operationId: mount.pick('deleteWorkspaceInactivityPolicy', 'deleteInactivityPolicy'),
      params,
      summary: 'Remove the inactivity policy',
      description: 'Nobody is deactivated for inactivity any more; `404 policy_not_found` when there was none.',
      tags,
      security: mount.security('policies:write'),
      response: {
        204: { type: 'null', description: 'Removed.' },
        ...problemResponses(...mount.errors, 'policy_not_found'),
      },
    },
    handler: async (request, reply) => {
      await deleteInactivityPolicy(store, await workspace(request), mount.actor(request));
      return reply.code(204).send();
    },
  });

  api.put(expiry, {
    schema: {
      operationId: mount.pick('putWorkspaceExpiryPolicy', 'putExpiryPolicy'),
      params,
      summary: 'Set the warning before expiries',
      description: '`user.access_expiring` is sent `warn_before` ahead of each user\'s `expires_at`; null sends none.',
      tags,
      security: mount.security('policies:write'),
      body: ExpiryPolicySchema,
      response: {
        200: jsonResponse('The policy as stored.', ExpiryPolicySchema, { warn_before: 'P7D' }),
        ...problemResponses(...mount.errors, ...BODY_ERRORS, 'invalid_duration'),
      },
    },
    handler: async (request) => toWireExpiryPolicy(await putExpiryPolicy(store, await workspace(request), request.body.warn_before, limits, mount.actor(request))),
  });

  api.get(expiry, {
    schema: {
      operationId: mount.pick('getWorkspaceExpiryPolicy', 'getExpiryPolicy'),
      params,
      summary: 'The warning before expiries',
      description: '`warn_before` null when none is set.',
      tags,
      security: mount.security('users:read'),
      response: {
        200: jsonResponse('The policy.', ExpiryPolicySchema, { warn_before: 'P7D' }),
        ...problemResponses(...mount.errors),
      },
    },
    handler: async (request) => toWireExpiryPolicy(await getExpiryPolicy(store, await workspace(request))),
  });
}
