import { Type } from '@sinclair/typebox';
import { ACTOR_TYPES } from '../../core/actor.ts';
import { API_KEY_SCOPES, EVERY_SCOPE } from '../../core/api-keys/scopes.ts';
import type { CreatedApiKey } from '../../core/api-keys/api-keys-service.ts';
import type { ApiKeyRecord } from '../../core/api-keys/api-key-repository.ts';
import type { Workspace } from '../../core/workspaces/workspace-repository.ts';
import { ActorSchema, NullableTimestamp, PageQuery, PaginationSchema, StringEnum, Timestamp } from './common.ts';
import { PRODUCT_NAME_PATTERN } from './products.ts';
import { USER_EXAMPLE } from './users.ts';

/** The example user as a `user.created` event records it: without its timestamps. */
const { created_at: _created, updated_at: _updated, ...USER_AUDIT_RECORD_EXAMPLE } = USER_EXAMPLE;

/** A DNS label (letters, digits, inner hyphens, 1-63 characters). */
export const SUBDOMAIN_PATTERN = '^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$';

/** Body of `POST /admin/v1/workspaces`. */
export const CreateWorkspaceBody = Type.Object(
  {
    subdomain: Type.String({
      pattern: SUBDOMAIN_PATTERN,
      description: 'A DNS label (letters, digits, inner hyphens, 1-63 characters), stored lower-cased.',
      examples: ['acme'],
    }),
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'Display name; defaults to the subdomain.', examples: ['Acme Inc'] }),
    ),
  },
  { additionalProperties: false, examples: [{ subdomain: 'acme', name: 'Acme Inc' }] },
);

/** A workspace on the admin wire. */
export const WorkspaceSchema = Type.Object(
  {
    subdomain: Type.String({ description: 'The workspace\'s subdomain, lower-cased.' }),
    name: Type.String({ description: 'Display name.' }),
    created_at: Timestamp,
  },
  { description: 'A customer workspace.' },
);

/**
 * Scopes of a key on the wire: named scopes, or `["*"]` for a key that holds every scope,
 * present and future (docs/security.md, "API keys and scopes"). A key of every scope is shown
 * as stored (`["*"]`), not expanded, so that it reads as what it is: a key that will also hold
 * scopes added later.
 */
const ScopesSchema = Type.Array(StringEnum([...API_KEY_SCOPES, EVERY_SCOPE]), {
  uniqueItems: true,
  description:
    'What the key may call: each operation of the API reference names the scope it needs; creating, promoting, ' +
    'reactivating or renaming an owner also needs `owners:write`. `["*"]`: every scope, present and future ' +
    '(the workspace\'s first key, and any key made with every scope).',
  examples: [['users:read', 'users:write'], ['*']],
});

/** Fields every representation of a key shares. */
const apiKeyFields = {
  id: Type.String({ format: 'uuid', description: 'Key id, to revoke it.' }),
  name: Type.String({ description: 'The name given at creation; empty for keys made before names existed.', examples: ['provisioning'] }),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it.', examples: ['wum_AbCd1234'] }),
  scopes: ScopesSchema,
  expires_at: Type.Unsafe<Date | string | null>({
    type: ['string', 'null'],
    format: 'date-time',
    description: 'When the key stops working (then `401 invalid_api_key`); null for never.',
  }),
  created_by: Type.Union([Type.Ref(ActorSchema), Type.Null()], { description: 'Who made the key; null for keys made before this was recorded.' }),
  created_at: Timestamp,
};

/** An API key's public record. */
export const ApiKeySchema = Type.Object(
  {
    ...apiKeyFields,
    last_used_at: { ...NullableTimestamp, description: 'When the key was last used (recorded at most once a minute).' },
    revoked_at: NullableTimestamp,
  },
  { description: 'An API key, without its secret.' },
);

/** A created key: the plaintext `key` appears only in this response. */
export const CreatedApiKeySchema = Type.Object(
  {
    ...apiKeyFields,
    key: Type.String({ description: 'The API key. Shown only once; store it now.' }),
  },
  { description: 'A new API key with its plaintext, shown only in this response.' },
);

/** Body of `POST /admin/v1/workspaces/{subdomain}/api-keys`; every field optional, the body too. */
export const CreateApiKeyBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'A name to recognise the key by.', examples: ['provisioning'] })),
    scopes: Type.Optional({
      ...ScopesSchema,
      minItems: 1,
      description: 'What the key may call; every scope, present and future (stored and shown as `["*"]`), when omitted, when `*` is given, or when every scope is listed.',
    }),
    expires_at: Type.Optional(
      Type.Unsafe<string>({ type: 'string', format: 'date-time', description: 'When the key stops working (in the future); never when omitted.' }),
    ),
  },
  { additionalProperties: false, examples: [{ name: 'provisioning', scopes: ['users:read', 'users:write'], expires_at: '2030-04-15T09:00:00Z' }] },
);

/**
 * Body of `POST /api/external/v2/api-keys`: as {@link CreateApiKeyBody}, but `scopes` is
 * required, so that a key made on the workspace's host never holds more than was asked for
 * (docs/security.md, "Self-service").
 */
export const CreateOwnApiKeyBody = Type.Object(
  {
    ...CreateApiKeyBody.properties,
    scopes: {
      ...ScopesSchema,
      minItems: 1,
      description:
        'What the key may call (required): only scopes the credential creating it holds, else `403 insufficient_scope`; ' +
        '`*` (every scope, present and future) only from a credential of every scope.',
    },
  },
  { additionalProperties: false, examples: [{ name: 'okta-scim', scopes: ['scim'], expires_at: '2030-04-15T09:00:00Z' }] },
);

/** Response of workspace creation: the workspace and its first key. */
export const CreatedWorkspaceSchema = Type.Object(
  {
    subdomain: Type.String({ description: 'The workspace\'s subdomain, lower-cased.' }),
    name: Type.String({ description: 'Display name.' }),
    created_at: Timestamp,
    api_key: CreatedApiKeySchema,
  },
  { description: 'The new workspace and its first API key.' },
);

/** Body of `PUT /admin/v1/products/{name}`: at least one role, no duplicates, in display order. */
export const PutProductBody = Type.Object(
  {
    roles: Type.Array(Type.String({ pattern: PRODUCT_NAME_PATTERN }), {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: 'The product\'s roles in display order: at least one, no duplicates.',
    }),
  },
  { additionalProperties: false, examples: [{ roles: ['admin', 'agent', 'viewer'] }] },
);

/** An audit event on the wire. */
export const AuditEventSchema = Type.Object(
  {
    id: Type.Integer({ description: 'Increasing event id.' }),
    occurred_at: Timestamp,
    actor: Type.Ref(ActorSchema),
    actor_type: StringEnum(ACTOR_TYPES, { description: 'Who made the change: `actor.type`.' }),
    actor_id: Type.Union([Type.String(), Type.Null()], { description: '`actor.id`: the API key id for `api_key` and `scim`, the user id for `person`, `oidc:<sub>` for an operator signed in to the console, else null.' }),
    request_id: Type.Union([Type.String(), Type.Null()], { description: 'X-Request-Id of the change.' }),
    action: Type.String({ description: 'What happened.', examples: ['user.created'] }),
    target_type: Type.String({ description: 'Kind of the thing changed: user, api_key, workspace, product, webhook_endpoint, policy.' }),
    target_id: Type.String({ description: 'Its identity: email, key id, subdomain or product name.' }),
    user_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'For user events, the user\'s `id` (it survives renames); else null.',
    }),
    before: Type.Unknown({ description: 'The thing before the change; null when created.' }),
    after: Type.Unknown({ description: 'The thing after the change; null when removed.' }),
    workspace: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: 'In the listing of every workspace\'s events only: the subdomain of the event\'s workspace; null for a catalogue change or a deleted workspace.',
        examples: ['acme'],
      }),
    ),
  },
  { description: 'One change, recorded in the transaction that made it.' },
);

/** Query of paginated admin listings. */
export const AdminPageQuery = Type.Object(PageQuery);

/** An RFC 3339 instant of a query (`date-time` of JSON Schema: a time zone is required). */
const Instant = (description: string, example: string) => Type.Optional(Type.String({ format: 'date-time', description, examples: [example] }));

/** Filters of the audit listings and exports; each one given narrows them. */
const AuditFilters = {
  action: Type.Optional(Type.String({ maxLength: 100, description: 'Only events of this action.', examples: ['user.updated'] })),
  actor_type: Type.Optional(
    StringEnum(ACTOR_TYPES, { description: 'Only events made by this kind of actor.', examples: ['api_key'] }),
  ),
  target_id: Type.Optional(
    Type.String({ maxLength: 320, description: 'Only events about this target (an email, key id, subdomain or product name).', examples: ['ada@example.com'] }),
  ),
  since: Instant('Only events that occurred at or after this instant (RFC 3339, inclusive).', '2025-01-01T00:00:00Z'),
  until: Instant('Only events that occurred before this instant (RFC 3339, exclusive).', '2025-02-01T00:00:00Z'),
};

/** The keyset cursor of the audit listings (docs/api.md, "Audit trail"). */
const AuditCursor = {
  starting_after: Type.Optional(
    Type.Integer({
      minimum: 0,
      // Event ids stay below 2^53, so JSON carries them exactly.
      maximum: Number.MAX_SAFE_INTEGER,
      description:
        'Cursor: only events after the event with this `id` in the order of `sort` (`next_cursor` of the previous page). ' +
        'Rows written meanwhile neither shift nor repeat the listing; `page_number` cannot be given with it.',
      examples: [42],
    }),
  ),
};

/** The orders of an audit listing: by time, oldest first, or (`-`) newest first. */
export const AUDIT_SORTS = ['occurred_at', '-occurred_at'] as const;

/** `sort` of an audit listing, with its default order (docs/api.md, "Audit trail"). */
const auditSort = (byDefault: (typeof AUDIT_SORTS)[number]) =>
  StringEnum(AUDIT_SORTS, {
    default: byDefault,
    description: `Order: \`occurred_at\` oldest first, \`-occurred_at\` newest first; default \`${byDefault}\`.`,
    examples: ['-occurred_at'],
  });

/** Query of a workspace's audit listing on the operator API: oldest first unless `sort` says otherwise. */
export const WorkspaceAuditQuery = Type.Object({ ...PageQuery, ...AuditFilters, ...AuditCursor, sort: auditSort('occurred_at') });

/** Query of a workspace's audit listing on its own API: newest first unless `sort` says otherwise. */
export const OwnAuditQuery = Type.Object({ ...PageQuery, ...AuditFilters, ...AuditCursor, sort: auditSort('-occurred_at') });

/** The `workspace` filter of the operator's listing and export of every event. */
const WorkspaceFilter = {
  workspace: Type.Optional(Type.String({ maxLength: 63, description: 'Only events of the workspace with this subdomain.', examples: ['acme'] })),
};

/** Query of the global audit listing: also by workspace. */
export const AuditQuery = Type.Object({
  ...PageQuery,
  ...AuditFilters,
  ...AuditCursor,
  sort: auditSort('occurred_at'),
  ...WorkspaceFilter,
});

/** The formats of an audit export: JSON Lines or CSV (docs/api.md, "Exporting the audit trail"). */
export const AUDIT_EXPORT_FORMATS = ['jsonl', 'csv'] as const;

const exportFormat = {
  format: StringEnum(AUDIT_EXPORT_FORMATS, {
    default: 'jsonl',
    description: '`jsonl`: one event per line as the listing shows it; `csv`: one row per event with a header (formula-like cells quoted).',
    examples: ['csv'],
  }),
};

/** Query of a workspace's audit export. */
export const AuditExportQuery = Type.Object({ ...exportFormat, ...AuditFilters });

/** Query of the operator's export of every event: also by workspace. */
export const GlobalAuditExportQuery = Type.Object({ ...exportFormat, ...AuditFilters, ...WorkspaceFilter });

/** The envelope of an audit listing: a page, its place in the listing (by page number only), and the cursor of the next. */
export const AuditPageSchema = (order: string) =>
  Type.Object({
    audit_events: Type.Array(AuditEventSchema, { description: `This page, ${order}; empty past the end.` }),
    // Absent when read by cursor (`starting_after`), which counts nothing.
    pagination: Type.Optional(PaginationSchema),
    total_count: Type.Optional(Type.Integer({ description: 'Total number of events across all pages; absent, like `pagination`, when read by cursor (`starting_after`).' })),
    next_cursor: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The `starting_after` of the next page (the `id` of this page\'s last event); null when this page ends the listing.',
      examples: [42],
    }),
  });

/** Envelope of a paginated admin listing under `key`, its items in the order `order` says. */
export function pageOf<T extends ReturnType<typeof Type.Object>>(key: string, item: T, order = 'oldest first') {
  return Type.Object({
    [key]: Type.Array(item, { description: `This page, ${order}; empty past the end.` }),
    pagination: PaginationSchema,
    total_count: Type.Integer({ description: 'Total number of items across all pages.' }),
  });
}

/** The fields of the example key that every representation shows. */
const API_KEY_EXAMPLE = {
  id: '3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30',
  name: 'provisioning',
  prefix: 'wum_AbCd1234',
  scopes: ['users:read', 'users:write'],
  expires_at: '2030-04-15T09:00:00.000Z',
  created_by: { type: 'operator', id: null, label: 'operator' },
  created_at: '2025-01-15T09:00:00.000Z',
};

/** Examples of the admin API in the OpenAPI document. */
export const ADMIN_EXAMPLES = {
  workspace: { subdomain: 'acme', name: 'Acme Inc', created_at: '2025-01-15T09:00:00.000Z' },
  createdApiKey: {
    ...API_KEY_EXAMPLE,
    key: 'wum_AbCd1234EfGh5678IjKl9012MnOp3456QrSt7890UvWx',
  },
  apiKey: {
    ...API_KEY_EXAMPLE,
    last_used_at: '2025-01-16T14:12:09.000Z',
    revoked_at: null,
  },
  auditEvent: {
    id: 42,
    occurred_at: '2025-01-15T09:30:00.000Z',
    actor: { type: 'api_key', id: '3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30', label: 'provisioning (wum_AbCd1234)' },
    actor_type: 'api_key',
    actor_id: '3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30',
    request_id: '7f1c2a9e-5b3d-4e8a-9c61-0d2f4b8a3e17',
    action: 'user.created',
    target_type: 'user',
    target_id: 'ada@example.com',
    user_id: USER_EXAMPLE.id,
    before: null,
    after: USER_AUDIT_RECORD_EXAMPLE,
  },
  page: (total: number) => ({
    pagination: { total_records: total, current_page_number: 1, total_pages: total > 0 ? 1 : 0, page_size: 30 },
    total_count: total,
  }),
};

/** Domain → wire mappers of the admin API. */
export const toWireWorkspace = (w: Workspace) => ({ subdomain: w.subdomain, name: w.name, created_at: w.createdAt });
const apiKeyWireFields = (k: ApiKeyRecord) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  scopes: [...k.scopes],
  expires_at: k.expiresAt,
  created_by: k.createdBy,
  created_at: k.createdAt,
});
/** An API key as the admin API lists it (docs/api.md, "Authentication"): never its secret. */
export const toWireApiKey = (k: ApiKeyRecord) => ({ ...apiKeyWireFields(k), last_used_at: k.lastUsedAt, revoked_at: k.revokedAt });
/** A key just made, with its plaintext `key`: the only answer that ever carries it. */
export const toWireCreatedApiKey = (k: CreatedApiKey) => ({ ...apiKeyWireFields(k), key: k.key });
/** An audit event as the admin API lists it (docs/api.md, "Audit trail"): one definition with the audit streams'. */
export { toWireAuditEvent } from '../../core/audit/wire-audit-event.ts';
