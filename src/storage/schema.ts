import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  bigserial,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/*
 * The one schema both backends run (docs/architecture.md, Storage). Every tenant table leads with
 * `workspace_id` and its keys include it, so the tables can later be distributed by it.
 * Constraint names are part of the contract with `pg-errors.ts`, which maps them to codes.
 */

const createdAt = () => timestamp('created_at', { withTimezone: true, precision: 6 }).notNull().defaultNow();

/** Customer workspaces, addressed by subdomain (stored lower-cased). */
export const workspaces = pgTable(
  'workspaces',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    subdomain: text('subdomain').notNull(),
    name: text('name').notNull(),
    createdAt: createdAt(),
    /**
     * The last event sequence given out in this workspace (`events.sequence`). Bumped by the
     * statement that writes an event, so its row lock orders a workspace's events by commit.
     */
    eventSequence: bigint('event_sequence', { mode: 'number' }).notNull().default(0),
  },
  (t) => [unique('workspaces__subdomain').on(t.subdomain)],
);

/**
 * API keys: only a SHA-256 hash of the key is stored; `prefix` and `name` identify it to
 * people. `scopes` are the operations it may call (core/api-keys/scopes.ts), or `{*}`: every
 * scope, present and future (keys made before scopes existed, a workspace's first key, keys made
 * with every scope); past `expires_at` it is refused like a
 * revoked key. `created_by` is the actor that made it (`{type, id, label}`).
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: uuid('id').notNull().defaultRandom(),
    prefix: text('prefix').notNull(),
    keyHash: text('key_hash').notNull(),
    name: text('name').notNull().default(''),
    scopes: text('scopes')
      .array()
      .notNull()
      .default(sql`'{*}'::text[]`),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 6 }),
    createdBy: jsonb('created_by'),
    createdAt: createdAt(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, precision: 6 }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, precision: 6 }),
  },
  (t) => [
    primaryKey({ name: 'api_keys__pk', columns: [t.workspaceId, t.id] }),
    uniqueIndex('api_keys__workspace_hash').on(t.workspaceId, t.keyHash),
  ],
);

/**
 * Console sessions (docs/security.md, "Console sessions"): only a SHA-256 hash of the session
 * id is stored, so a copy of the table opens no session. A session opened by exchanging an API
 * key acts with that key (`api_key_id`) and ends with it. `last_seen_at` (written at most once
 * a minute) bounds the idle time, `expires_at` the whole life; `ended_at` is its end for good:
 * sign-out, its key revoked, its person deactivated, demoted or renamed, or (a key's session) an
 * identity provider enrolled.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    idHash: text('id_hash').notNull(),
    apiKeyId: uuid('api_key_id'),
    /** A person's session (signed in with the workspace's identity provider): the user (`users.id`). */
    userId: bigint('user_id', { mode: 'number' }),
    /** The identity provider configuration it signed in with; a new one ends the session. */
    idpRevision: uuid('idp_revision'),
    actor: jsonb('actor').notNull(),
    createdAt: createdAt(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 6 }).notNull(),
    endedAt: timestamp('ended_at', { withTimezone: true, precision: 6 }),
  },
  (t) => [
    primaryKey({ name: 'console_sessions__pk', columns: [t.workspaceId, t.idHash] }),
    index('console_sessions__expires_at').on(t.expiresAt),
    // A user's change and a key's revocation end their sessions: found by these, not by a scan of the workspace's.
    index('console_sessions__user').on(t.workspaceId, t.userId).where(sql`${t.userId} is not null`),
    index('console_sessions__api_key').on(t.workspaceId, t.apiKeyId).where(sql`${t.apiKeyId} is not null`),
  ],
);

/**
 * A workspace's OpenID Connect identity provider for the console's sign-in. `revision` is new
 * on every change, and sessions opened under another revision are over. The client secret is
 * stored encrypted (`v1:<kid>:…`, core/secrets/secret-box.ts: the server needs it back to redeem
 * codes) and never returned.
 */
export const workspaceIdentityProviders = pgTable('workspace_identity_providers', {
  workspaceId: bigint('workspace_id', { mode: 'number' })
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  issuer: text('issuer').notNull(),
  clientId: text('client_id').notNull(),
  clientSecret: text('client_secret').notNull(),
  revision: uuid('revision').notNull().defaultRandom(),
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
});

/**
 * Sign-ins under way with an identity provider, by the SHA-256 hash of their `state`: the
 * PKCE verifier and the nonce stay on the server, and a `state` is used at most once.
 */
export const oidcSignIns = pgTable(
  'oidc_sign_ins',
  {
    stateHash: text('state_hash').notNull(),
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    codeVerifier: text('code_verifier').notNull(),
    nonce: text('nonce').notNull(),
    idpRevision: uuid('idp_revision').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  // Keyed by workspace first, as every tenant table (docs/scaling.md): the callback knows both.
  (t) => [primaryKey({ name: 'oidc_sign_ins__pk', columns: [t.workspaceId, t.stateHash] }), index('oidc_sign_ins__expires_at').on(t.expiresAt)],
);

/**
 * Console sessions of operators who signed in with the operator identity provider of the
 * configuration (`OPERATOR_OIDC_ISSUER`): not a workspace's, so not a tenant table. As for
 * `console_sessions`, only the SHA-256 of the id is stored; `email` is checked against
 * `OPERATOR_EMAILS` and `issuer` against the configured issuer on every request, so a person
 * removed from the list, or another operator provider, ends the session.
 */
export const operatorSessions = pgTable(
  'operator_sessions',
  {
    idHash: text('id_hash').primaryKey(),
    email: text('email').notNull(),
    issuer: text('issuer').notNull(),
    actor: jsonb('actor').notNull(),
    createdAt: createdAt(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 6 }).notNull(),
    endedAt: timestamp('ended_at', { withTimezone: true, precision: 6 }),
  },
  (t) => [index('operator_sessions__expires_at').on(t.expiresAt)],
);

/**
 * Which account of the operator identity provider each listed operator email signed in with
 * first (its `sub`, unique within the issuer): a later sign-in with the same email and another
 * `sub` (an account recreated, or the address moved to someone else) is refused, as for a
 * workspace's owners. Keyed by issuer and lower-cased email.
 */
export const operatorIdentities = pgTable(
  'operator_identities',
  {
    issuer: text('issuer').notNull(),
    email: text('email').notNull(),
    subject: text('subject').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ name: 'operator_identities__pk', columns: [t.issuer, t.email] })],
);

/** Operator sign-ins under way (as `oidc_sign_ins`, for the operator identity provider). */
export const operatorSignIns = pgTable(
  'operator_sign_ins',
  {
    stateHash: text('state_hash').primaryKey(),
    codeVerifier: text('code_verifier').notNull(),
    nonce: text('nonce').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [index('operator_sign_ins__expires_at').on(t.expiresAt)],
);

/** The operator's product catalogue, shared by all workspaces; `roles` keeps the operator's order. */
export const products = pgTable('products', {
  name: text('name').primaryKey(),
  roles: text('roles').array().notNull(),
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
});

/**
 * Users of a workspace. `id` orders them by creation and stays inside the database;
 * `public_id` is the user's `id` on the wire (a UUID that never changes).
 */
export const users = pgTable(
  'users',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: bigserial('id', { mode: 'number' }).notNull(),
    publicId: uuid('public_id').notNull().defaultRandom(),
    email: text('email').notNull(),
    role: text('role').notNull(),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    status: text('status').notNull(),
    externalId: text('external_id'),
    /**
     * The `sub` of this person at the workspace's identity provider, stored at the first sign-in,
     * and that provider's issuer: a `sub` is unique only within its issuer (OpenID Connect Core
     * 1.0 §2), so a workspace moved to another provider binds its people afresh.
     */
    oidcSubject: text('oidc_subject'),
    oidcIssuer: text('oidc_issuer'),
    scimAttributes: jsonb('scim_attributes'),
    scimDeleted: boolean('scim_deleted').notNull().default(false),
    version: integer('version').notNull().default(1),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    /** When the membership ends (docs/contract.md Part B, "Access that ends on time"); null: never. */
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 6 }),
    /** The latest activity a product reported (`POST /users/activity`); only moves forward. */
    lastActiveAt: timestamp('last_active_at', { withTimezone: true, precision: 6 }),
  },
  (t) => [
    primaryKey({ name: 'users__pk', columns: [t.workspaceId, t.id] }),
    // What is due: the scheduler reads active users by expiry as one range of this small index.
    index('users__due_expiry').on(t.expiresAt).where(sql`${t.status} = 'active' and ${t.expiresAt} is not null`),
    // The `expires_before` filter and `sort=expires_at` within a workspace.
    index('users__workspace_expires_at').on(t.workspaceId, t.expiresAt).where(sql`${t.expiresAt} is not null`),
    // Inactivity: active users by the instant they were last seen (reported, else created).
    index('users__workspace_last_seen')
      .on(t.workspaceId, sql`coalesce(${t.lastActiveAt}, ${t.createdAt})`)
      .where(sql`${t.status} = 'active'`),
    uniqueIndex('users__workspace_public_id').on(t.workspaceId, t.publicId),
    uniqueIndex('users__workspace_email').on(t.workspaceId, sql`lower(${t.email})`),
    index('users__workspace_status_id').on(t.workspaceId, t.status, t.id),
    // Prefix searches (`q`, SCIM `sw`) and the email order: byte order ("C") lets a btree
    // serve `LIKE 'prefix%'` whatever the server's locale.
    index('users__workspace_email_c').on(t.workspaceId, sql`(lower(${t.email}) collate "C")`),
    index('users__workspace_first_name_c').on(t.workspaceId, sql`(lower(${t.firstName}) collate "C")`),
    index('users__workspace_last_name_c').on(t.workspaceId, sql`(lower(${t.lastName}) collate "C")`),
    index('users__workspace_external_id').on(t.workspaceId, t.externalId),
    // The last-owner check counts these few rows, not a workspace's million users.
    index('users__active_owners').on(t.workspaceId).where(sql`${t.status} = 'active' and ${t.role} = 'owner'`),
    check('users__role', sql`${t.role} in ('owner', 'non_owner')`),
    check('users__status', sql`${t.status} in ('active', 'deactivated')`),
  ],
);

/**
 * Users are counted at several levels of blocks of consecutive ids: level `k` counts blocks
 * of 2^`USER_COUNT_LEVEL_BITS[k]` ids (`user_counts.block` = id >> those bits). Level 0 blocks
 * hold 128 ids, each next level 32 blocks of the one below, and the last level one block for
 * the whole workspace (its total). Part of the schema: the rows of `user_counts` are bucketed
 * with it, and migration 0007 (its count and the `user_page_ids` function) spells the same
 * levels out, so changing it means a migration re-bucketing that table.
 */
export const USER_COUNT_LEVEL_BITS = [7, 12, 17, 22, 63] as const;

/**
 * How many users each workspace has in each status, per level and block of user ids (see
 * {@link USER_COUNT_LEVEL_BITS}), kept exact by the same statements that add, deactivate and
 * reactivate users (storage/users.queries.ts). The top level is `total_count`, a few rows
 * whatever the workspace's size; going down the levels, a running sum over the blocks of the
 * parent, read in key order from its nearer end and stopped at the block holding the page's
 * row, finds the 128-id block any page starts in, so no page walks more than 64 index entries
 * however deep. The key puts `status` after `block` so that one index range, already in block
 * order, serves one status or both. Each block's count is spread over a few `slot` rows (user
 * id modulo a small number) so that concurrent adds to one workspace do not all wait for one
 * row lock.
 */
export const userCounts = pgTable(
  'user_counts',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    status: text('status').notNull(),
    block: bigint('block', { mode: 'number' }).notNull(),
    slot: smallint('slot').notNull(),
    userCount: bigint('user_count', { mode: 'number' }).notNull(),
    level: smallint('level').notNull(),
  },
  (t) => [primaryKey({ name: 'user_counts__pk', columns: [t.workspaceId, t.level, t.block, t.status, t.slot] })],
);

/**
 * Product roles a user holds, by product and role name, so that a deactivated user keeps
 * showing what it held even after the operator changes the catalogue.
 */
export const userApps = pgTable(
  'user_apps',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' }).notNull(),
    userId: bigint('user_id', { mode: 'number' }).notNull(),
    product: text('product').notNull(),
    role: text('role').notNull(),
    position: integer('position').notNull(),
    /** When this grant ends (it is then removed); null: never. */
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 6 }),
  },
  (t) => [
    primaryKey({ name: 'user_apps__pk', columns: [t.workspaceId, t.userId, t.product, t.role] }),
    // Grants due: one range of this small index.
    index('user_apps__due_expiry').on(t.expiresAt).where(sql`${t.expiresAt} is not null`),
    foreignKey({
      name: 'user_apps__user',
      columns: [t.workspaceId, t.userId],
      foreignColumns: [users.workspaceId, users.id],
    }).onDelete('cascade'),
    index('user_apps__product_role').on(t.product, t.role),
    // The `app` filter and SCIM group members: holders of a role within one workspace.
    index('user_apps__workspace_product_role').on(t.workspaceId, t.product, t.role, t.userId),
  ],
);

/**
 * SCIM groups: the product roles a workspace linked as groups (docs/contract.md Part B, SCIM 2.0
 * provisioning). Members are not stored here: they are the users holding the role
 * (`user_apps`). `id` is the group's SCIM id.
 */
export const scimGroups = pgTable(
  'scim_groups',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: uuid('id').notNull(),
    product: text('product').notNull(),
    role: text('role').notNull(),
    externalId: text('external_id'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'scim_groups__pk', columns: [t.workspaceId, t.id] }),
    unique('scim_groups__workspace_role').on(t.workspaceId, t.product, t.role),
  ],
);

/** Append-only audit trail, written in the same transaction as the change it records. */
export const auditEvents = pgTable(
  'audit_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    workspaceId: bigint('workspace_id', { mode: 'number' }).references(() => workspaces.id, {
      onDelete: 'cascade',
    }),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    actorType: text('actor_type').notNull(),
    actorId: text('actor_id'),
    /** A readable name of the actor at the time (a key's name and prefix, a person's email). */
    actorLabel: text('actor_label'),
    requestId: text('request_id'),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id').notNull(),
    /** The `id` of the user a user event is about, so a user's history survives renames. */
    userId: uuid('user_id'),
    before: jsonb('before'),
    after: jsonb('after'),
  },
  (t) => [
    index('audit_events__workspace_id').on(t.workspaceId, t.id),
    index('audit_events__workspace_user_id').on(t.workspaceId, t.userId, t.id).where(sql`${t.userId} is not null`),
    // The pruner's way to the rows past AUDIT_RETENTION (docs/operations.md, "Retention of the audit trail").
    index('audit_events__occurred_at').on(t.occurredAt),
  ],
);

/**
 * The outbox of user events (docs/contract.md Part B, Events and webhooks): written by the statement or
 * transaction that changes the user, so there is no change without its event and no event
 * without its change. `sequence` increases strictly within a workspace, in commit order.
 * `data` is `{"user": <the user after the change>, "previous"?: <changed fields before>}`.
 */
export const events = pgTable(
  'events',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    sequence: bigint('sequence', { mode: 'number' }).notNull(),
    id: text('id').notNull(),
    type: text('type').notNull(),
    createdAt: createdAt(),
    data: jsonb('data').notNull(),
    /** Who made the change: `{type, id, label}` (null for events written before migration 0008). */
    actor: jsonb('actor'),
  },
  (t) => [
    primaryKey({ name: 'events__pk', columns: [t.workspaceId, t.sequence] }),
    index('events__created_at').on(t.createdAt),
  ],
);

/**
 * Webhook endpoints of a workspace (docs/contract.md Part B, Events and webhooks). `secret` is the
 * Standard Webhooks signing key (`whsec_…`), stored encrypted (`v1:<kid>:…`) because an HMAC
 * needs the key itself back; after a rotation `previous_secret` still signs until
 * `previous_secret_expires_at`.
 * `event_types` null means every type. A disabled endpoint gets no new deliveries and its
 * pending ones wait until it is enabled again.
 */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: uuid('id').notNull().defaultRandom(),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    eventTypes: text('event_types').array(),
    secret: text('secret').notNull(),
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true, precision: 6 }),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason'),
    /** The last time a delivery to it succeeded: a failing delivery disables it only if none has since. */
    lastSuccessAt: timestamp('last_success_at', { withTimezone: true, precision: 6 }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: 'webhook_endpoints__pk', columns: [t.workspaceId, t.id] })],
);

/**
 * One event to be sent to one endpoint, written in the transaction of the event itself (so no
 * crash can lose it) and claimed by the delivery worker of any process. `status` is `pending`
 * until a `2xx` (`succeeded`) or the end of the retry schedule (`failed`); a claimed delivery
 * has `next_attempt_at` pushed past its attempt's timeout (its lease), so a process that dies
 * mid-attempt leaves it to be claimed again. `attempt_log` lists every attempt's time,
 * response status, error and duration.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' }).notNull(),
    id: uuid('id').notNull().defaultRandom(),
    endpointId: uuid('endpoint_id').notNull(),
    eventSequence: bigint('event_sequence', { mode: 'number' }).notNull(),
    status: text('status').notNull().default('pending'),
    /** Attempts made since the delivery was created or redelivered (the retry schedule's index). */
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    /** When a failing streak began (the first failed attempt since the last success or redelivery). */
    firstFailedAt: timestamp('first_failed_at', { withTimezone: true, precision: 6 }),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true, precision: 6 }),
    lastResponseStatus: integer('last_response_status'),
    attemptLog: jsonb('attempt_log').notNull().default(sql`'[]'::jsonb`),
    createdAt: createdAt(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true, precision: 6 }),
  },
  (t) => [
    primaryKey({ name: 'webhook_deliveries__pk', columns: [t.workspaceId, t.id] }),
    foreignKey({
      name: 'webhook_deliveries__endpoint',
      columns: [t.workspaceId, t.endpointId],
      foreignColumns: [webhookEndpoints.workspaceId, webhookEndpoints.id],
    }).onDelete('cascade'),
    foreignKey({
      name: 'webhook_deliveries__event',
      columns: [t.workspaceId, t.eventSequence],
      foreignColumns: [events.workspaceId, events.sequence],
    }).onDelete('cascade'),
    // What the worker claims: due pending deliveries, per endpoint, oldest first; and the pending
    // gauge's count. (A second index of pending deliveries by due time alone, which the claim's
    // per-endpoint probes read with a filter instead of this one, was dropped: migration 0020.)
    index('webhook_deliveries__due').on(t.endpointId, t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
    index('webhook_deliveries__endpoint_created').on(t.workspaceId, t.endpointId, t.createdAt),
    // Deleting (pruning) an event finds its deliveries.
    index('webhook_deliveries__event').on(t.workspaceId, t.eventSequence),
    check('webhook_deliveries__status', sql`${t.status} in ('pending', 'succeeded', 'failed')`),
  ],
);

/** Stored first responses of requests sent with an `Idempotency-Key` (docs/contract.md Part B, Retries). */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    createdAt: createdAt(),
    lockedUntil: timestamp('locked_until', { withTimezone: true, precision: 6 }),
    responseStatus: integer('response_status'),
    responseHeaders: jsonb('response_headers').$type<Record<string, string>>(),
    responseBody: text('response_body'),
  },
  (t) => [
    primaryKey({ name: 'idempotency_keys__pk', columns: [t.workspaceId, t.key] }),
    index('idempotency_keys__created_at').on(t.createdAt),
  ],
);

/**
 * A workspace's access policies (docs/contract.md Part B, "Access that ends on time"): the
 * inactivity policy (`inactivity_after` null: none) and the warning before an expiry. Durations
 * are ISO 8601 as the client wrote them, so `GET` answers them as `PUT` took them.
 */
export const workspacePolicies = pgTable('workspace_policies', {
  workspaceId: bigint('workspace_id', { mode: 'number' })
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  inactivityAfter: text('inactivity_after'),
  /** The same duration in seconds, which the scheduler's SQL compares with. */
  inactivityAfterSeconds: bigint('inactivity_after_seconds', { mode: 'number' }),
  inactivityAppliesTo: text('inactivity_applies_to'),
  inactivityWarnBefore: text('inactivity_warn_before'),
  inactivityWarnBeforeSeconds: bigint('inactivity_warn_before_seconds', { mode: 'number' }),
  expiryWarnBefore: text('expiry_warn_before'),
  expiryWarnBeforeSeconds: bigint('expiry_warn_before_seconds', { mode: 'number' }),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
});

/**
 * What the scheduler has recorded once per user and due instant: a warning sent
 * (`warned_expiry`, `warned_inactivity`) or a last owner's end deferred (`deferred`). A new due
 * instant is another key, so changing the date re-arms it.
 */
export const lifecycleMarks = pgTable(
  'lifecycle_marks',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' }).notNull(),
    userId: bigint('user_id', { mode: 'number' }).notNull(),
    kind: text('kind').notNull(),
    dueAt: timestamp('due_at', { withTimezone: true, precision: 6 }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ name: 'lifecycle_marks__pk', columns: [t.workspaceId, t.userId, t.kind, t.dueAt] }),
    foreignKey({ name: 'lifecycle_marks__user', columns: [t.workspaceId, t.userId], foreignColumns: [users.workspaceId, users.id] }).onDelete('cascade'),
  ],
);

/**
 * Audit streams (docs/api.md, "Audit streams"): each sends the audit rows after its `cursor`
 * (the last audit id delivered), in id order, to one destination. `workspace_id` null: every
 * workspace's rows (an operator's stream), so the key is the stream's id alone, like
 * `audit_events`'s (docs/scaling.md). `destination` holds the address without credentials;
 * `credentials` the write-only part (a signing secret, a token, a secret key) as encrypted JSON
 * (docs/security.md, "Secrets at rest"). A claim (`claim_id`, `claimed_until`, a lease) lets one
 * process at a time send a stream's next batch; a process that dies leaves it to the lease.
 */
export const auditStreams = pgTable(
  'audit_streams',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspaceId: bigint('workspace_id', { mode: 'number' }).references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    format: text('format').notNull(),
    actions: text('actions').array(),
    destinationType: text('destination_type').notNull(),
    destination: jsonb('destination').notNull(),
    credentials: text('credentials').notNull(),
    status: text('status').notNull().default('active'),
    cursor: bigint('cursor', { mode: 'number' }).notNull(),
    lastDeliveredAt: timestamp('last_delivered_at', { withTimezone: true, precision: 6 }),
    lastError: text('last_error'),
    /** When the current run of failed sends began; null while the last send succeeded. */
    failingSince: timestamp('failing_since', { withTimezone: true, precision: 6 }),
    /** Failed sends in a row: the retry backoff's index. */
    failures: integer('failures').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    claimId: uuid('claim_id'),
    claimedUntil: timestamp('claimed_until', { withTimezone: true, precision: 6 }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
  },
  (t) => [
    index('audit_streams__workspace_id').on(t.workspaceId, t.createdAt),
    // What the worker claims: streams not paused whose next attempt is due.
    index('audit_streams__due').on(t.nextAttemptAt).where(sql`${t.status} <> 'paused'`),
    check('audit_streams__format', sql`${t.format} in ('json', 'ocsf')`),
    check('audit_streams__status', sql`${t.status} in ('active', 'failing', 'paused')`),
    check('audit_streams__destination_type', sql`${t.destinationType} in ('https', 'splunk_hec', 's3', 'syslog')`),
  ],
);

/**
 * Bulk import jobs of users (docs/contract.md Part B, "Importing users in bulk"). At most one
 * job per workspace is queued or running: the partial unique index refuses a second
 * (`import_in_progress`). `uploaded_at` is set once every row is staged: only then may a worker
 * claim the job. `lease_owner`/`lease_until` name the process working on it (or still
 * uploading it); a lease that ran out is taken over by any process, so a job outlives a
 * crash. `actor` is who started it, recorded on each user's audit row and event.
 */
export const userImportJobs = pgTable(
  'user_import_jobs',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' })
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: uuid('id').notNull().defaultRandom(),
    status: text('status').notNull(),
    format: text('format').notNull(),
    actor: jsonb('actor').notNull(),
    rowsTotal: integer('rows_total'),
    rowsDone: integer('rows_done').notNull().default(0),
    added: integer('added').notNull().default(0),
    reactivated: integer('reactivated').notNull().default(0),
    skipped: integer('skipped').notNull().default(0),
    rejected: integer('rejected').notNull().default(0),
    /** Why a job failed (a problem's detail); null otherwise. */
    error: text('error'),
    createdAt: createdAt(),
    uploadedAt: timestamp('uploaded_at', { withTimezone: true, precision: 6 }),
    startedAt: timestamp('started_at', { withTimezone: true, precision: 6 }),
    completedAt: timestamp('completed_at', { withTimezone: true, precision: 6 }),
    leaseOwner: text('lease_owner'),
    leaseUntil: timestamp('lease_until', { withTimezone: true, precision: 6 }),
  },
  (t) => [
    primaryKey({ name: 'user_import_jobs__pk', columns: [t.workspaceId, t.id] }),
    uniqueIndex('user_import_jobs__one_active')
      .on(t.workspaceId)
      .where(sql`${t.status} in ('queued', 'running')`),
    // The workers' claim: jobs not finished, by lease.
    index('user_import_jobs__unfinished').on(t.leaseUntil).where(sql`${t.status} in ('queued', 'running')`),
    index('user_import_jobs__workspace_created').on(t.workspaceId, t.createdAt),
    check('user_import_jobs__status', sql`${t.status} in ('queued', 'running', 'completed', 'failed', 'cancelled')`),
  ],
);

/**
 * The rows of an import job: staged as the upload streams in (`payload`, the user to add, or
 * already `rejected` when the row itself is invalid), then given their outcome by the batch
 * that processes them, which clears `payload`. What stays is the job's per-row report.
 */
export const userImportRows = pgTable(
  'user_import_rows',
  {
    workspaceId: bigint('workspace_id', { mode: 'number' }).notNull(),
    jobId: uuid('job_id').notNull(),
    /** The row's line in the uploaded file (the CSV header is line 1). */
    rowNumber: integer('row_number').notNull(),
    email: text('email').notNull(),
    payload: jsonb('payload'),
    /** `added`, `reactivated`, `skipped`, `rejected`; null while the row waits for its batch. */
    outcome: text('outcome'),
    code: text('code'),
    detail: text('detail'),
  },
  (t) => [
    primaryKey({ name: 'user_import_rows__pk', columns: [t.workspaceId, t.jobId, t.rowNumber] }),
    foreignKey({
      name: 'user_import_rows__job',
      columns: [t.workspaceId, t.jobId],
      foreignColumns: [userImportJobs.workspaceId, userImportJobs.id],
    }).onDelete('cascade'),
    // The next batch: the rows still waiting, in file order.
    index('user_import_rows__pending').on(t.workspaceId, t.jobId, t.rowNumber).where(sql`${t.outcome} is null`),
  ],
);
