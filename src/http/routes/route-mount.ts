import type { FastifyRequest } from 'fastify';
import type { TProperties } from '@sinclair/typebox';
import type { Actor } from '../../core/actor.ts';
import { keyActor } from '../../core/api-keys/authenticate.ts';
import type { ApiKeyScope } from '../../core/api-keys/scopes.ts';
import type { ErrorCode } from '../../core/errors.ts';
import type { Store } from '../../core/ports.ts';
import { requireWorkspace } from '../../core/workspaces/require-workspace.ts';
import { tenantOf } from '../plugins/tenant.ts';
import { scoped } from '../route-scopes.ts';
import { EXTERNAL_API_ERRORS } from '../schemas/common.ts';
import { AUTH, Subdomain, adminActor, security as adminSecurity, tags as adminTags } from './admin/admin-common.ts';

/**
 * Where one definition of a workspace's resource routes is mounted (docs/api.md,
 * "Self-service"): in the operator API, which names the workspace in the path and acts as the
 * operator, or in the workspace's own API, whose workspace and actor are the request's
 * credential and whose every route needs a scope. The routes are written once against this.
 */
export interface RouteMount {
  /** Which API: the operator's (`/admin/v1`) or the workspace's (`/api/external/v2`). */
  readonly side: 'operator' | 'workspace';
  /** Path of the workspace inside the API: `/workspaces/:subdomain`, or nothing on the workspace's host. */
  readonly base: string;
  /** Path parameters naming the workspace (`subdomain`), none on the workspace's host. */
  readonly params: TProperties;
  /** The subdomain of the workspace a request is about. */
  subdomain(request: FastifyRequest): string;
  /**
   * The id of the workspace a request is about: the credential's, or the one the operator names
   * (looked up; AppError `workspace_not_found`, 404, when there is none).
   */
  workspaceId(request: FastifyRequest, store: Store): Promise<number>;
  /** Who makes a change, for the audit trail: the operator, or the request's key or person. */
  actor(request: FastifyRequest): Actor;
  /** The OpenAPI security requirement of a route that needs `scope` (the operator's token needs none). */
  security(scope: ApiKeyScope): Array<Record<string, string[]>>;
  /** The OpenAPI tags of a route whose resource is tagged `tag` on the workspace's host. */
  tags(tag: string): string[];
  /** Errors every route of this API can answer (credentials, the workspace, availability). */
  readonly errors: readonly ErrorCode[];
  /** `operator` on the operator API, else `workspace`: operation ids and wording that differ. */
  pick<T>(operator: T, workspace: T): T;
}

/** The operator API's mount: `/workspaces/{subdomain}/…`, the admin token, the operator as actor. */
export const OPERATOR_MOUNT: RouteMount = {
  side: 'operator',
  base: '/workspaces/:subdomain',
  params: { subdomain: Subdomain },
  subdomain: (request) => (request.params as { subdomain: string }).subdomain,
  workspaceId: async (request, store) => (await requireWorkspace(store, OPERATOR_MOUNT.subdomain(request))).id,
  actor: adminActor,
  security: () => adminSecurity,
  tags: () => adminTags,
  errors: [...AUTH, 'workspace_not_found', 'invalid_parameter'],
  pick: (operator) => operator,
};

/** The workspace API's mount: the workspace and actor of the request's key or session, a scope per route. */
export const WORKSPACE_MOUNT: RouteMount = {
  side: 'workspace',
  base: '',
  params: {},
  subdomain: (request) => tenantOf(request).workspace.subdomain,
  workspaceId: async (request) => tenantOf(request).workspace.id,
  actor: (request) => keyActor(tenantOf(request), 'api_key', request.id),
  security: scoped,
  tags: (tag) => [tag],
  errors: EXTERNAL_API_ERRORS,
  pick: (_operator, workspace) => workspace,
};
