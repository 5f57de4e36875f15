import { Type } from '@sinclair/typebox';
import type { CreatedApiKey } from '../../core/api-keys/api-keys-service.ts';
import type { ApiKeyRecord, AuditEvent, Workspace } from '../../core/ports.ts';
import { NullableTimestamp, PageQuery, PaginationSchema, Timestamp } from './common.ts';
import { PRODUCT_NAME_PATTERN } from './products.ts';

/** A DNS label (letters, digits, inner hyphens, 1-63 characters). */
export const SUBDOMAIN_PATTERN = '^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$';

/** Body of `POST /admin/v1/workspaces`. */
export const CreateWorkspaceBody = Type.Object(
  {
    subdomain: Type.String({ pattern: SUBDOMAIN_PATTERN, examples: ['acme'] }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, examples: ['Acme Inc'] })),
  },
  { additionalProperties: false },
);

/** A workspace on the admin wire. */
export const WorkspaceSchema = Type.Object({ subdomain: Type.String(), name: Type.String(), created_at: Timestamp });

/** An API key's public record. */
export const ApiKeySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  prefix: Type.String({ examples: ['wum_AbCd1234'] }),
  created_at: Timestamp,
  last_used_at: NullableTimestamp,
  revoked_at: NullableTimestamp,
});

/** A created key: the plaintext `key` appears only in this response. */
export const CreatedApiKeySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  key: Type.String({ description: 'The API key. Shown only once; store it now.' }),
  prefix: Type.String(),
  created_at: Timestamp,
});

/** Response of workspace creation: the workspace and its first key. */
export const CreatedWorkspaceSchema = Type.Object({
  subdomain: Type.String(),
  name: Type.String(),
  created_at: Timestamp,
  api_key: CreatedApiKeySchema,
});

/** Body of `PUT /admin/v1/products/{name}`: at least one role, no duplicates, in display order. */
export const PutProductBody = Type.Object(
  {
    roles: Type.Array(Type.String({ pattern: PRODUCT_NAME_PATTERN }), { minItems: 1, maxItems: 100, uniqueItems: true }),
  },
  { additionalProperties: false },
);

/** An audit event on the wire. */
export const AuditEventSchema = Type.Object({
  id: Type.Integer(),
  occurred_at: Timestamp,
  actor_type: Type.String({ examples: ['api_key', 'admin', 'system'] }),
  actor_id: Type.Union([Type.String(), Type.Null()]),
  request_id: Type.Union([Type.String(), Type.Null()]),
  action: Type.String({ examples: ['user.created'] }),
  target_type: Type.String(),
  target_id: Type.String(),
  before: Type.Unknown(),
  after: Type.Unknown(),
});

/** Query of paginated admin listings. */
export const AdminPageQuery = Type.Object(PageQuery);

/** Envelope of a paginated admin listing under `key`. */
export function pageOf<T extends ReturnType<typeof Type.Object>>(key: string, item: T) {
  return Type.Object({
    [key]: Type.Array(item),
    pagination: PaginationSchema,
    total_count: Type.Integer(),
  });
}

/** Domain → wire mappers of the admin API. */
export const toWireWorkspace = (w: Workspace) => ({ subdomain: w.subdomain, name: w.name, created_at: w.createdAt });
export const toWireApiKey = (k: ApiKeyRecord) => ({
  id: k.id,
  prefix: k.prefix,
  created_at: k.createdAt,
  last_used_at: k.lastUsedAt,
  revoked_at: k.revokedAt,
});
export const toWireCreatedApiKey = (k: CreatedApiKey) => ({ id: k.id, key: k.key, prefix: k.prefix, created_at: k.createdAt });
export const toWireAuditEvent = (e: AuditEvent) => ({
  id: e.id,
  occurred_at: e.occurredAt,
  actor_type: e.actor.type,
  actor_id: e.actor.id,
  request_id: e.actor.requestId,
  action: e.action,
  target_type: e.targetType,
  target_id: e.targetId,
  before: e.before,
  after: e.after,
});
