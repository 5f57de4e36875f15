import type { FastifyInstance, FastifyRequest } from 'fastify';
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
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { EXTERNAL_API_ERRORS, jsonResponse, problemResponses } from '../../schemas/common.ts';
import {
  ActivityBody,
  ActivityResultSchema,
  ExpiryPolicySchema,
  InactivityPolicySchema,
  toWireActivityResult,
  toWireExpiryPolicy,
  toWireInactivityPolicy,
} from '../../schemas/policies.ts';

const BODY_ERRORS = ['unsupported_media_type', 'malformed_json', 'payload_too_large', 'validation_failed'] as const;

/** The workspace of a request. */
function workspaceOf(request: FastifyRequest): number {
  return tenantOf(request).workspace.id;
}

/**
 * `POST /users/activity` and the policies (`/policies/inactivity`, `/policies/expiry`) of the
 * external API. Source: docs/contract.md Part B, "Access that ends on time".
 */
export async function lifecycleRoutes(app: FastifyInstance, options: { store: Store; limits: PolicyLimits }): Promise<void> {
  const { store, limits } = options;
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
  rejectOtherMethods(app, '/users/activity', ['POST']);

  const inactivityExample = { deactivate_after: 'P90D', applies_to: 'non_owners', warn_before: 'P7D' };
  api.put('/policies/inactivity', {
    schema: {
      operationId: 'putInactivityPolicy',
      summary: 'Set the inactivity policy',
      description:
        'Active users not seen for `deactivate_after` are deactivated (reason `inactive`); `warn_before` sends ' +
        '`user.access_expiring` ahead. Durations shorter than the server\'s minimum → `422 invalid_duration`.',
      tags: ['policies'],
      security: scoped('policies:write'),
      body: InactivityPolicySchema,
      response: {
        200: jsonResponse('The policy as stored.', InactivityPolicySchema, inactivityExample),
        ...problemResponses(...EXTERNAL_API_ERRORS, ...BODY_ERRORS, 'invalid_duration'),
      },
    },
    handler: async (request) =>
      toWireInactivityPolicy(
        await putInactivityPolicy(
          store,
          workspaceOf(request),
          { deactivateAfter: request.body.deactivate_after, appliesTo: request.body.applies_to, warnBefore: request.body.warn_before ?? null },
          limits,
        ),
      ),
  });

  api.get('/policies/inactivity', {
    schema: {
      operationId: 'getInactivityPolicy',
      summary: 'The inactivity policy',
      description: 'As `PUT` took it; `404 policy_not_found` when there is none.',
      tags: ['policies'],
      security: scoped('users:read'),
      response: {
        200: jsonResponse('The policy.', InactivityPolicySchema, inactivityExample),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'policy_not_found'),
      },
    },
    handler: async (request) => toWireInactivityPolicy(await getInactivityPolicy(store, workspaceOf(request))),
  });

  api.delete('/policies/inactivity', {
    schema: {
      operationId: 'deleteInactivityPolicy',
      summary: 'Remove the inactivity policy',
      description: 'Nobody is deactivated for inactivity any more; `404 policy_not_found` when there was none.',
      tags: ['policies'],
      security: scoped('policies:write'),
      response: {
        204: { type: 'null', description: 'Removed.' },
        ...problemResponses(...EXTERNAL_API_ERRORS, 'policy_not_found'),
      },
    },
    handler: async (request, reply) => {
      await deleteInactivityPolicy(store, workspaceOf(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/policies/inactivity', ['GET', 'PUT', 'DELETE']);

  api.put('/policies/expiry', {
    schema: {
      operationId: 'putExpiryPolicy',
      summary: 'Set the warning before expiries',
      description: '`user.access_expiring` is sent `warn_before` ahead of each user\'s `expires_at`; null sends none.',
      tags: ['policies'],
      security: scoped('policies:write'),
      body: ExpiryPolicySchema,
      response: {
        200: jsonResponse('The policy as stored.', ExpiryPolicySchema, { warn_before: 'P7D' }),
        ...problemResponses(...EXTERNAL_API_ERRORS, ...BODY_ERRORS, 'invalid_duration'),
      },
    },
    handler: async (request) => toWireExpiryPolicy(await putExpiryPolicy(store, workspaceOf(request), request.body.warn_before, limits)),
  });

  api.get('/policies/expiry', {
    schema: {
      operationId: 'getExpiryPolicy',
      summary: 'The warning before expiries',
      description: '`warn_before` null when none is set.',
      tags: ['policies'],
      security: scoped('users:read'),
      response: {
        200: jsonResponse('The policy.', ExpiryPolicySchema, { warn_before: 'P7D' }),
        ...problemResponses(...EXTERNAL_API_ERRORS),
      },
    },
    handler: async (request) => toWireExpiryPolicy(await getExpiryPolicy(store, workspaceOf(request))),
  });
  rejectOtherMethods(app, '/policies/expiry', ['GET', 'PUT']);
}
