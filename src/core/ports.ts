import type { Awaitable } from './awaitable.ts';
import type { Actor, ActorJson } from './actor.ts';
import type { StoredScope } from './api-keys/scopes.ts';
import type { AuditStream, AuditStreamChanges, NewAuditStream, StreamLag } from './audit-streams/audit-stream.ts';
import type { EventAppend, WorkspaceEvent } from './events/event.ts';
import type { Group } from './groups/group.ts';
import type { ExpiryPolicy, InactivityPolicy, WorkspacePolicies } from './lifecycle/policy.ts';
import type { PageRequest } from './pagination.ts';
import type { RowWindow, UserCondition, UserQuery } from './users/user-query.ts';
import type {
  ImportClaim,
  ImportFormat,
  ImportJob,
  ImportReportRow,
  ImportRowResult,
  PendingImportRow,
  StagedImportRow,
} from './users/import-job.ts';
import type { PolicyReason, StatusFilter, StoredUser, UserChangeType, UserNoticeType, UserRef, UserWrite } from './users/user.ts';
import type {
  NewWebhookEndpoint,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointChanges,
} from './webhooks/webhook-endpoint.ts';

/** A product of the catalogue with its roles in the operator's order. */
export interface Product {
  readonly name: string;
  readonly roles: readonly string[];
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A customer workspace. */
export interface Workspace {
  readonly id: number;
  readonly subdomain: string;
  readonly name: string;
  readonly createdAt: Date;
}

/** An API key's public record; the plaintext is never stored. */
export interface ApiKeyRecord {
  readonly id: string;
  readonly prefix: string;
  /** A name people give it (e.g. `okta-scim`); empty for keys made before names existed. */
  readonly name: string;
  /** The scopes it carries, in canonical order, or `['*']`: every scope, present and future. */
  readonly scopes: readonly StoredScope[];
  /** When it stops working; null for never. */
  readonly expiresAt: Date | null;
  /** Who made it; null for keys made before actors were recorded. */
  readonly createdBy: ActorJson | null;
  readonly createdAt: Date;
  readonly lastUsedAt: Date | null;
  readonly revokedAt: Date | null;
}

/** What a new key is stored with, beside its workspace. */
export interface NewApiKey {
  readonly prefix: string;
  readonly keyHash: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly expiresAt: Date | null;
  readonly createdBy: ActorJson;
}

/** An unrevoked key as authentication sees it (possibly expired: the caller checks the time). */
export interface LiveApiKey {
  readonly id: string;
  readonly name: string;
  readonly prefix: string;
  readonly scopes: readonly string[];
  readonly expiresAt: Date | null;
}

/** One entry of the audit trail. `before`/`after` are wire-shaped snapshots or null. */
export interface AuditEvent {
  readonly id: number;
  readonly workspaceId: number | null;
  readonly occurredAt: Date;
  readonly actor: Actor;
  readonly action: string;
  readonly targetType: string;
  readonly targetId: string;
  /** The `id` of the user the event is about (user events only), kept across renames. */
  readonly userId?: string | null;
  readonly before: unknown;
  readonly after: unknown;
}

/** What a change writes to the audit trail (the store adds id and time). */
export type AuditEntry = Omit<AuditEvent, 'id' | 'occurredAt'>;

/** Filters of an audit listing; each one given narrows it (AND). */
export interface AuditFilter {
  readonly action?: string;
  readonly actorType?: string;
  readonly targetId?: string;
  /** Only the events of this user (its `id`). */
  readonly userId?: string;
  /** Only the events that occurred at or after this instant (inclusive). */
  readonly since?: Date;
  /** Only the events that occurred before this instant (exclusive). */
  readonly until?: Date;
  /** Newest first instead of oldest first. */
  readonly newestFirst?: boolean;
}

/** Where a keyset read of the audit trail resumes: past this event id, in the listing's order. */
export interface AuditKeyset {
  /** The id of the last event already read; the read returns the events after it in the listing's order. */
  readonly afterId?: number;
  /** No event with a larger id (an export fixes the end of the trail when it starts). */
  readonly maxId?: number;
}

/**
 * What a user change writes besides the user, in the same statement or transaction: its
 * audit entry and its outbox event, whose `data` is the user after the change (built by the
 * store from the row it wrote) and `previous`, the changed fields before, in the API's names
 * (docs/contract.md Part B, Events and webhooks: "no change without its event").
 */
export interface UserChangeRecord {
  readonly audit: AuditEntry;
  readonly eventType: UserChangeType;
  readonly previous: Readonly<Record<string, unknown>> | null;
  /** Why a policy made the change: the event's `data.reason` (docs/contract.md Part B, "Access that ends on time"). */
  readonly reason?: PolicyReason;
}

/**
 * What a policy records about a user without changing it (a deferral, a warning): once per user,
 * `mark` and due instant `dueAt`, with its audit entry and its event (`data`: the user,
 * `reason`, `ends_at`).
 */
export interface UserNotice {
  readonly type: UserNoticeType;
  readonly mark: 'deferred_expiry' | 'deferred_inactivity' | 'warned_expiry' | 'warned_inactivity';
  readonly reason: PolicyReason;
  readonly dueAt: Date;
  readonly audit: AuditEntry;
}

/** The result of recording activity reports. */
export interface ActivityResult {
  /** Users whose `last_active_at` moved forward. */
  readonly updated: number;
  /** Reports that named a user of the workspace but were not newer than what it had. */
  readonly unchanged: number;
  /** Emails of the reports no user of the workspace has, as sent. */
  readonly unknown: string[];
}

/** Rows of one page plus the total over all pages. */
export interface Slice<T> {
  readonly rows: readonly T[];
  readonly total: number;
}

/** Users of a workspace. Every method takes the workspace id first: no query can omit it. */
export interface UserRepository {
  /**
   * Finds a user by email (case-insensitively) or id; `lock` takes a row lock until commit,
   * and the user returned (apps included) is then as it is once the lock is held — never a
   * version from before a concurrent change the lock waited for.
   */
  find(workspaceId: number, ref: UserRef, options?: { lock?: boolean }): Promise<StoredUser | undefined>;
  /**
   * Inserts a user with id `id`, its apps, its audit entry and its event, atomically, unless
   * the workspace already has a user with that email (in any letter case, any status) or the
   * catalogue lacks one of the user's product roles: then nothing is written and the result
   * is undefined. The products named are share-locked until commit. A concurrent insert of
   * the same email is waited for, so exactly one of them inserts.
   */
  insertIfAbsent(workspaceId: number, id: string, user: UserWrite, record: UserChangeRecord): Promise<StoredUser | undefined>;
  /**
   * Inserts each new user whose email is free, with its apps, counts, audit entry and event, in
   * set-based statements (a bulk import's batch); the apps were checked by the caller under the
   * products' share locks. Users whose email a concurrent add took are left out.
   * @returns the ids of the users inserted.
   */
  insertMany(workspaceId: number, users: ReadonlyArray<{ readonly id: string; readonly user: UserWrite; readonly record: UserChangeRecord }>): Promise<Set<string>>;
  /** The users holding any of `emails` (case-insensitively), row-locked until commit. */
  lockByEmails(workspaceId: number, emails: readonly string[]): Promise<StoredUser[]>;
  /**
   * Writes every attribute of `current` (locked by the caller) from `user`, its apps when
   * they differ, one more version, the audit entry and the event, in one statement.
   */
  write(workspaceId: number, current: StoredUser, user: UserWrite, record: UserChangeRecord): Promise<StoredUser>;
  /**
   * As {@link write}, for a `current` read without a lock: writes only while the user is still
   * at `current.version` (a compare-and-set in the same statement, which waits for a
   * concurrent writer of the row and then sees its version), and never its apps (`user.apps`
   * must equal `current.apps`). One statement, its own transaction outside one.
   * @returns the user as written, or undefined when its version moved on (nothing written).
   */
  writeIfUnchanged(workspaceId: number, current: StoredUser, user: UserWrite, record: UserChangeRecord): Promise<StoredUser | undefined>;
  /** Counts active owners of the workspace. */
  countActiveOwners(workspaceId: number): Promise<number>;
  /** One page of users, oldest first, with the total matching `status` (the unfiltered listing). */
  findPage(workspaceId: number, status: StatusFilter, page: PageRequest): Promise<Slice<StoredUser>>;
  /** A window of the users matching `query`, in its order, with the exact total matching it. */
  findMatching(workspaceId: number, query: UserQuery, window: RowWindow): Promise<Slice<StoredUser>>;
  /** Locks every user matching `condition` until commit, in creation order (so that bulk changes cannot deadlock), and returns them. */
  lockMatching(workspaceId: number, condition: UserCondition): Promise<StoredUser[]>;
  /**
   * Records `notice` about user `userId` (its public id) unless the same mark and due instant
   * is recorded already: the mark, the audit entry and the event in one statement.
   * @returns whether it was recorded now.
   */
  recordNotice(workspaceId: number, userId: string, notice: UserNotice): Promise<boolean>;
  /**
   * Moves each named user's `last_active_at` forward to the instant reported (never back; the
   * latest of several reports of one email), in one statement; neither a version nor an event.
   */
  recordActivity(workspaceId: number, reports: ReadonlyArray<{ readonly email: string; readonly at: Date }>): Promise<ActivityResult>;
}

/** The global product catalogue. */
export interface ProductRepository {
  /** All products sorted by name: at once (no promise) when held in memory, else a promise of them. */
  findAll(): Awaitable<Product[]>;
  /** The named products, share-locked until commit so they cannot be removed meanwhile. */
  findByNamesForShare(names: readonly string[]): Promise<Product[]>;
  /** One product, optionally locked for update. */
  findByName(name: string, options?: { lock?: boolean }): Promise<Product | undefined>;
  /** Creates or replaces a product's roles; `created` tells which. */
  upsert(name: string, roles: readonly string[]): Promise<{ product: Product; created: boolean }>;
  /** Deletes a product. */
  delete(name: string): Promise<void>;
  /** Of the given roles of a product, those an active user of any workspace holds. */
  findRolesHeldByActiveUsers(product: string, roles?: readonly string[]): Promise<string[]>;
  /** Of the given roles of a product, those a workspace has linked as a SCIM group. */
  findRolesLinkedAsGroups(product: string, roles?: readonly string[]): Promise<string[]>;
}

/** Workspaces, addressed by lower-cased subdomain. */
export interface WorkspaceRepository {
  insert(subdomain: string, name: string): Promise<Workspace>;
  findBySubdomain(subdomain: string): Promise<Workspace | undefined>;
  /** The subdomains of the workspaces with these ids (a deleted one is absent). */
  findSubdomains(ids: readonly number[]): Promise<Map<number, string>>;
  findPage(page: PageRequest): Promise<Slice<Workspace>>;
  delete(id: number): Promise<void>;
  /** Locks the workspace row until commit (serialises last-owner checks). */
  lock(id: number): Promise<void>;
}

/** Result of resolving a request's workspace and API key in one look-up. */
export interface Credentials {
  readonly workspace: Workspace | undefined;
  /** The matching, unrevoked key of that workspace, if any. */
  readonly apiKey: LiveApiKey | undefined;
}

/** API keys of workspaces, stored as hashes. */
export interface ApiKeyRepository {
  insert(workspaceId: number, key: NewApiKey): Promise<ApiKeyRecord>;
  findAll(workspaceId: number): Promise<ApiKeyRecord[]>;
  /** Marks a key revoked (keeping the first revocation time); undefined when unknown. */
  revoke(workspaceId: number, id: string): Promise<{ before: ApiKeyRecord; after: ApiKeyRecord } | undefined>;
  /**
   * Resolves a subdomain and a key hash to the workspace and its live key: at once (no
   * promise) when the answer is held in memory, else a promise of it.
   */
  resolve(subdomain: string, keyHash: string): Awaitable<Credentials>;
  /** Records that a key was used (callers throttle how often). */
  touch(workspaceId: number, id: string): Promise<void>;
}

/** A console session as stored: the key it acts with (if still live) and its times. */
export interface StoredSession {
  /** The unrevoked key the session acts with; undefined once revoked (the session is then over). */
  readonly apiKey: LiveApiKey | undefined;
  /**
   * A person's session: whether its person is still an active owner of the workspace and the
   * workspace's identity provider is still the one it signed in with (else the session is over).
   */
  readonly person?: { readonly userId: string; readonly stillOwner: boolean; readonly sameIdentityProvider: boolean };
  readonly actor: ActorJson;
  readonly lastSeenAt: Date;
  readonly expiresAt: Date;
  readonly endedAt: Date | null;
}

/** Console sessions, stored by the SHA-256 hash of their id; never cached, so an end is seen at once everywhere. */
export interface SessionRepository {
  insert(
    workspaceId: number,
    session: { idHash: string; apiKeyId?: string; userId?: number; idpRevision?: string; actor: ActorJson; expiresAt: Date },
  ): Promise<void>;
  /** The workspace of `subdomain` and, when it has one with this hash, the session. */
  resolve(subdomain: string, idHash: string): Promise<{ workspace: Workspace | undefined; session: StoredSession | undefined }>;
  /** Records a use (callers throttle how often). */
  touch(workspaceId: number, idHash: string): Promise<void>;
  /** Ends the session (sign-out); ending an ended or unknown one changes nothing. */
  end(workspaceId: number, idHash: string): Promise<void>;
  /**
   * Ends for good the workspace's sessions opened with a key: those of `apiKeyId` (the key is
   * revoked), or all of them (the workspace enrols an identity provider).
   */
  endKeySessions(workspaceId: number, apiKeyId?: string): Promise<void>;
  /**
   * Ends the live sessions of one key or one person (`users.id`) beyond the `keep` newest
   * (the cap on sessions per principal); resolves with how many it ended.
   */
  endOldest(workspaceId: number, principal: { readonly apiKeyId: string } | { readonly userId: number }, keep: number): Promise<number>;
}

/** An operator's console session as stored (signed in with the operator identity provider). */
export interface StoredOperatorSession {
  /** The email the provider vouched for at sign-in, as it sent it. */
  readonly email: string;
  /** The operator identity provider it signed in with. */
  readonly issuer: string;
  readonly actor: ActorJson;
  readonly lastSeenAt: Date;
  readonly expiresAt: Date;
  readonly endedAt: Date | null;
}

/** An operator sign-in under way: what must come back with its `state`. */
export interface PendingOperatorSignIn {
  readonly codeVerifier: string;
  readonly nonce: string;
  readonly expiresAt: Date;
}

/**
 * Operators' console sessions and sign-ins under way, stored by the SHA-256 hash of the session
 * id or `state`; never cached, so an end is seen at once everywhere.
 */
export interface OperatorSessionRepository {
  insert(session: { idHash: string; email: string; issuer: string; actor: ActorJson; expiresAt: Date }): Promise<void>;
  find(idHash: string): Promise<StoredOperatorSession | undefined>;
  /** Records a use (callers throttle how often). */
  touch(idHash: string): Promise<void>;
  /** Ends the session (sign-out); ending an ended or unknown one changes nothing. */
  end(idHash: string): Promise<void>;
  /** Ends the live sessions of the operator `email` (any case) beyond the `keep` newest; resolves with how many it ended. */
  endOldest(email: string, keep: number): Promise<number>;
  saveSignIn(stateHash: string, pending: PendingOperatorSignIn): Promise<void>;
  /** Takes (deletes and returns) a sign-in, so a `state` serves once. */
  takeSignIn(stateHash: string): Promise<PendingOperatorSignIn | undefined>;
  /**
   * The `sub` bound to `email` (canonical: `canonicalEmail`) at the provider of `issuer`: `subject` when this is
   * the email's first sign-in there (it is stored), else the one stored then.
   */
  bindSubject(issuer: string, email: string, subject: string): Promise<string>;
}

/** A workspace's OpenID Connect identity provider; `revision` changes with every change. */
export interface IdentityProvider {
  readonly issuer: string;
  readonly clientId: string;
  /** Encrypted as stored: {@link Store.openSecret} decrypts it where it is used. */
  readonly clientSecret: string;
  readonly revision: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A sign-in under way: what must come back with its `state`. */
export interface PendingSignIn {
  readonly codeVerifier: string;
  readonly nonce: string;
  readonly idpRevision: string;
  readonly expiresAt: Date;
}

/** An owner a person may sign in as. */
export interface SignInCandidate {
  /** `users.id`. */
  readonly id: number;
  readonly publicId: string;
  readonly email: string;
}

/** Identity providers of workspaces, the sign-ins under way and the people they let in. */
export interface IdentityProviderRepository {
  find(workspaceId: number): Promise<IdentityProvider | undefined>;
  /** Creates or replaces the configuration, with a new revision; `clientSecret` in clear (it is stored encrypted). */
  put(workspaceId: number, config: { issuer: string; clientId: string; clientSecret: string }): Promise<IdentityProvider>;
  /** Removes it; false when there was none. */
  delete(workspaceId: number): Promise<boolean>;
  saveSignIn(workspaceId: number, stateHash: string, pending: PendingSignIn): Promise<void>;
  /** Takes (deletes and returns) a sign-in, so a `state` serves once. */
  takeSignIn(workspaceId: number, stateHash: string): Promise<PendingSignIn | undefined>;
  /** The active owner with this email, given in its canonical form (`foldEmail`: ASCII letters folded), if any. */
  findActiveOwner(workspaceId: number, email: string): Promise<SignInCandidate | undefined>;
  /**
   * The `sub` bound to a user at the provider of `issuer`: `subject` when none is bound there
   * yet (it is stored, replacing one of another provider), else the one bound before; undefined
   * when the user is gone. One statement, so two first sign-ins at once bind one `sub`.
   */
  bindSubject(workspaceId: number, userId: number, issuer: string, subject: string): Promise<string | undefined>;
}

/** The audit trail. */
export interface AuditRepository {
  append(entry: AuditEntry): Promise<void>;
  /** A page of events, oldest first unless `filter.newestFirst`; `workspaceId` null means every event. */
  findPage(workspaceId: number | null, page: PageRequest, filter?: AuditFilter): Promise<Slice<AuditEvent>>;
  /**
   * Up to `limit` events past `keyset.afterId` (and up to `keyset.maxId`) in the order of
   * `filter`, without a count: a page read by cursor, or a batch of an export.
   */
  findBatch(workspaceId: number | null, limit: number, filter: AuditFilter, keyset: AuditKeyset): Promise<AuditEvent[]>;
  /** The largest event id written so far, 0 when the trail is empty. */
  lastId(): Promise<number>;
}

/** SCIM groups linked in workspaces (product roles made assignable as groups). */
export interface GroupRepository {
  /** Links a product role; a role linked already → AppError `group_exists` (a unique constraint). */
  insert(workspaceId: number, group: Pick<Group, 'id' | 'product' | 'role' | 'externalId'>): Promise<Group>;
  /** A group by id; `lock` holds its row until commit. */
  find(workspaceId: number, id: string, options?: { lock?: boolean }): Promise<Group | undefined>;
  /** Every group of the workspace, in linking order. */
  findAll(workspaceId: number): Promise<Group[]>;
  /** Changes a group's `externalId` (and its update time). */
  update(workspaceId: number, id: string, changes: { externalId: string | null }): Promise<Group>;
  /** Removes a group's link. */
  delete(workspaceId: number, id: string): Promise<void>;
}

/** The outbox of events, read as the workspace's feed. */
export interface EventRepository extends EventAppend {
  /** Up to `limit` events of the workspace with a sequence above `after`, in sequence order. */
  findAfter(workspaceId: number, after: number, limit: number): Promise<WorkspaceEvent[]>;
}

/** Webhook endpoints of workspaces and their deliveries. Every method takes the workspace id first. */
export interface WebhookRepository {
  insert(workspaceId: number, endpoint: NewWebhookEndpoint): Promise<WebhookEndpoint>;
  /** Every endpoint of the workspace, oldest first. */
  findAll(workspaceId: number): Promise<WebhookEndpoint[]>;
  /** One endpoint (undefined when unknown or not a UUID); `lock` holds its row until commit. */
  find(workspaceId: number, id: string, options?: { lock?: boolean }): Promise<WebhookEndpoint | undefined>;
  /** Applies `changes` (enabling clears the disabled reason) and returns the endpoint after. */
  update(workspaceId: number, id: string, changes: WebhookEndpointChanges): Promise<WebhookEndpoint>;
  /** Replaces the secret (given in clear, stored encrypted); the old one keeps signing until `previousExpiresAt`. */
  rotateSecret(workspaceId: number, id: string, secret: string, previousExpiresAt: Date): Promise<WebhookEndpoint>;
  /**
   * Disables an enabled endpoint (reason `failing`) unless a delivery to it succeeded at or
   * after `failingSince`; the endpoint after, or undefined when it was left as it was.
   */
  disableFailing(workspaceId: number, id: string, failingSince: Date): Promise<WebhookEndpoint | undefined>;
  /** Deletes an endpoint with its deliveries. */
  delete(workspaceId: number, id: string): Promise<void>;
  /** A page of an endpoint's deliveries, newest first, with their total. */
  findDeliveries(workspaceId: number, endpointId: string, page: PageRequest): Promise<Slice<WebhookDelivery>>;
  /**
   * Makes a delivery pending again, due now, with a fresh retry schedule (its attempt log is
   * kept); undefined when the endpoint has no such delivery.
   */
  redeliver(workspaceId: number, endpointId: string, deliveryId: string): Promise<WebhookDelivery | undefined>;
}

/** Workspaces' access policies (docs/contract.md Part B, "Access that ends on time"). */
export interface PolicyRepository {
  /** The workspace's policies; undefined when it never set one. */
  find(workspaceId: number): Promise<WorkspacePolicies | undefined>;
  /** Replaces (null: removes) the inactivity policy; false when removing one that did not exist. */
  putInactivity(workspaceId: number, policy: InactivityPolicy | null): Promise<boolean>;
  /** Replaces the expiry policy. */
  putExpiry(workspaceId: number, policy: ExpiryPolicy): Promise<void>;
}

/** A user a policy's change is due for, and the instant it was due. */
export interface DueUser {
  readonly workspaceId: number;
  /** The user's public id. */
  readonly userId: string;
  readonly dueAt: Date;
}

/** A warning due: the user, when its access ends and why. */
export interface DueWarning extends DueUser {
  readonly reason: 'expired' | 'inactive';
}

/**
 * What the scheduler finds due at `now` (docs/contract.md Part B, "Access that ends on time").
 * The claims row-lock the users they return until the caller's transaction ends and skip those
 * another transaction holds (`FOR UPDATE SKIP LOCKED`), so replicas share a sweep and never
 * change one user twice; each returns at most `limit` users, earliest due first.
 */
export interface LifecycleRepository {
  /** Active users past `expires_at`, except a deferred last owner while it is still the last one. */
  claimExpired(now: Date, limit: number): Promise<DueUser[]>;
  /** Active users the workspace's inactivity policy has made due, with the same exception. */
  claimInactive(now: Date, limit: number): Promise<DueUser[]>;
  /** Users holding a grant past its `expires_at` (`dueAt`: the earliest such). */
  claimExpiredGrants(now: Date, limit: number): Promise<DueUser[]>;
  /** Warnings due at `now` not yet recorded for their due instant (no lock: the mark is the guard). */
  findWarnings(now: Date, limit: number): Promise<DueWarning[]>;
  /** The earliest instant after `now` at which anything becomes due; undefined when nothing will. */
  nextDue(now: Date): Promise<Date | undefined>;
}

/**
 * Which streams a call may see: one workspace's (its own API), or every stream (the operator's).
 * A workspace never sees an operator's stream of every workspace.
 */
export type StreamScope = { readonly workspaceId: number } | 'all';

/** An audit row as a stream sends it: the row, and its workspace's subdomain (null: the operator's). */
export interface StreamedAuditEvent extends AuditEvent {
  readonly workspace: string | null;
}

/** Audit streams (storage/audit-streams.queries.ts). */
export interface AuditStreamRepository {
  /**
   * Stores a new stream whose cursor is the greatest audit id now (it sends the rows written
   * after its creation); `credentials` are stored encrypted.
   */
  insert(stream: NewAuditStream): Promise<AuditStream>;
  /** The stream `id` if `scope` sees it; `lock` holds its row until commit. */
  find(scope: StreamScope, id: string, options?: { lock?: boolean }): Promise<AuditStream | undefined>;
  /** Every stream `scope` sees, oldest first. */
  findAll(scope: StreamScope): Promise<AuditStream[]>;
  /** The stream's lag: rows after its cursor (of its workspace and actions) and the age of the oldest, in seconds. */
  lag(stream: AuditStream): Promise<StreamLag>;
  /**
   * Applies `changes` (credentials encrypted). Resuming clears the failure streak and makes the
   * stream due now; any change of what is sent, or a pause, voids a claim in flight, so a batch
   * sent by the old settings does not move the cursor.
   */
  update(id: string, changes: AuditStreamChanges): Promise<AuditStream>;
  /**
   * Moves the cursor back to just before the first row at or after `from` (never forward), due
   * now, voiding a claim in flight. Returns the stream and the time of the oldest audit row
   * kept of its workspace (null when none: retention may have removed older ones).
   */
  rewind(id: string, from: Date): Promise<{ stream: AuditStream; oldestKept: Date | null }>;
  delete(id: string): Promise<void>;
  /** The encrypted credentials of a stream (for a test send). */
  credentials(id: string): Promise<string | undefined>;
  /**
   * Pauses every stream failing since before `failingBefore` (row-locked, skipping those
   * another transaction holds) and returns them as they are now.
   */
  pauseFailing(failingBefore: Date): Promise<AuditStream[]>;
}

/**
 * Bulk import jobs and their rows (docs/contract.md Part B, "Importing users in bulk"). Every
 * method takes the workspace id first, but for the workers' claim, which looks across
 * workspaces.
 */
export interface UserImportRepository {
  /**
   * Creates a queued job, not yet uploaded, leased to `owner` (the uploading process) for `leaseMs`.
   * @throws AppError `import_in_progress` (409) when the workspace has a queued or running job.
   */
  create(workspaceId: number, job: { readonly format: ImportFormat; readonly actor: Actor; readonly owner: string; readonly leaseMs: number }): Promise<ImportJob>;
  /** Stages rows of an uploading job (in one statement) and extends its lease. */
  stage(workspaceId: number, jobId: string, rows: readonly StagedImportRow[], leaseMs: number): Promise<void>;
  /** Marks a job's upload complete: `rowsTotal` rows, `rejected` of them invalid already; workers may claim it. */
  uploaded(workspaceId: number, jobId: string, rowsTotal: number, rejected: number): Promise<ImportJob>;
  /** Ends a job that is not finished as `failed` with `error`, dropping the payloads of its rows. */
  fail(workspaceId: number, jobId: string, error: string): Promise<void>;
  /** One job, or undefined. */
  find(workspaceId: number, jobId: string): Promise<ImportJob | undefined>;
  /** A page of the workspace's jobs, newest first, with their total. */
  findPage(workspaceId: number, page: PageRequest): Promise<Slice<ImportJob>>;
  /** Up to `limit` rows of a job's report after row `afterRow`, in file order. */
  report(workspaceId: number, jobId: string, afterRow: number, limit: number): Promise<ImportReportRow[]>;
  /** Cancels a queued or running job (its rows not yet processed are `not_attempted`); the job after, undefined if unknown. */
  cancel(workspaceId: number, jobId: string): Promise<ImportJob | undefined>;
  /**
   * Claims one uploaded job that no live lease holds (queued, or running under a lease that ran
   * out: its process died), skipping jobs another transaction holds, and leases it to `owner`;
   * first fails the uploads whose uploader's lease ran out.
   */
  claim(owner: string, leaseMs: number): Promise<ImportClaim | undefined>;
  /** Locks a running job still leased to `owner` until commit; undefined when it was cancelled or taken over. */
  lockLeased(workspaceId: number, jobId: string, owner: string): Promise<ImportJob | undefined>;
  /** Up to `limit` of a job's rows waiting for their batch, in file order. */
  pending(workspaceId: number, jobId: string, limit: number): Promise<PendingImportRow[]>;
  /** Records a batch's outcomes (clearing their payloads), adds them to the job's counts and extends its lease. */
  record(workspaceId: number, jobId: string, outcomes: readonly ImportRowResult[], leaseMs: number): Promise<void>;
  /** Completes a running job. */
  complete(workspaceId: number, jobId: string): Promise<void>;
}

/** Every repository, bound to one transaction (or to the pool outside one). */
export interface Repositories {
  readonly users: UserRepository;
  readonly groups: GroupRepository;
  readonly products: ProductRepository;
  readonly workspaces: WorkspaceRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly sessions: SessionRepository;
  readonly operatorSessions: OperatorSessionRepository;
  readonly identityProviders: IdentityProviderRepository;
  readonly audit: AuditRepository;
  readonly events: EventRepository;
  readonly webhooks: WebhookRepository;
  readonly policies: PolicyRepository;
  readonly lifecycle: LifecycleRepository;
  readonly auditStreams: AuditStreamRepository;
  readonly imports: UserImportRepository;
}

/**
 * The storage the domain runs on. `transaction` runs `work` in one database transaction
 * (READ COMMITTED) and commits when it resolves; database constraint violations surface as
 * AppErrors (e.g. `user_already_exists`).
 */
export interface Store extends Repositories {
  transaction<T>(work: (tx: Repositories) => Promise<T>): Promise<T>;
  /**
   * Translates a failure of this storage that escaped a repository call (reads outside a
   * transaction) into the domain's AppError when it is one (a conflict, a busy or unavailable
   * database: 409, 404, 503); returns anything else unchanged, a bug that stays a 500.
   */
  mapError(error: unknown): unknown;
  /**
   * Decrypts a secret as this store keeps it (a webhook endpoint's signing secrets, an identity
   * provider's client secret), where it is used: signing a delivery, a token request.
   * @throws SecretDecryptionError (core/secrets/secret-box.ts) when this server's keys cannot.
   */
  openSecret(stored: string): string;
  /**
   * (Re-)encrypts with the current key the stored secrets `scope` selects, in batches,
   * idempotently (docs/operations.md, "Rotating the secrets key").
   */
  reencryptSecrets(scope: ReencryptionScope): Promise<ReencryptionReport>;
}

/**
 * Which stored secrets a pass re-encrypts: `plaintext`, those stored before encryption (at
 * start); `not-current`, every one not encrypted with the current key (a rotation).
 */
export type ReencryptionScope = 'plaintext' | 'not-current';

/**
 * What a pass over the stored secrets did: the id of the key they are now encrypted with, how
 * many it (re-)encrypted, and how many no key of the server could decrypt (left as they were).
 */
export interface ReencryptionReport {
  readonly keyId: string;
  readonly reencrypted: number;
  readonly undecryptable: number;
}
