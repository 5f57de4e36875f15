import type { Actor } from './actor.ts';
import type { PageRequest } from './pagination.ts';
import type { StatusFilter, StoredUser, UserStatus, UserWrite } from './users/user.ts';

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
  readonly createdAt: Date;
  readonly lastUsedAt: Date | null;
  readonly revokedAt: Date | null;
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
  readonly before: unknown;
  readonly after: unknown;
}

/** What a change writes to the audit trail (the store adds id and time). */
export type AuditEntry = Omit<AuditEvent, 'id' | 'occurredAt'>;

/** Rows of one page plus the total over all pages. */
export interface Slice<T> {
  readonly rows: readonly T[];
  readonly total: number;
}

/** Users of a workspace. Every method takes the workspace id first: no query can omit it. */
export interface UserRepository {
  /**
   * Finds a user by email, case-insensitively; `lock` takes a row lock until commit, and the
   * user returned (apps included) is then as it is once the lock is held — never a version
   * from before a concurrent change the lock waited for.
   */
  findByEmail(workspaceId: number, email: string, options?: { lock?: boolean }): Promise<StoredUser | undefined>;
  /**
   * Inserts a user with its apps and appends `event` to the audit trail, atomically, unless
   * the workspace already has a user with that email (in any letter case, any status) or the
   * catalogue lacks one of the user's product roles: then nothing is written and the result
   * is undefined. The products named are share-locked until commit. A concurrent insert of
   * the same email is waited for, so exactly one of them inserts.
   */
  insertIfAbsent(workspaceId: number, user: UserWrite, event: AuditEntry): Promise<StoredUser | undefined>;
  /** Replaces every attribute and the apps of user `id`. */
  replace(workspaceId: number, id: number, user: UserWrite): Promise<StoredUser>;
  /** Sets the status of user `id`, keeping its apps. */
  setStatus(workspaceId: number, id: number, status: UserStatus): Promise<StoredUser>;
  /** Counts active owners of the workspace. */
  countActiveOwners(workspaceId: number): Promise<number>;
  /** One page of users, oldest first, with the total matching `status`. */
  findPage(workspaceId: number, status: StatusFilter, page: PageRequest): Promise<Slice<StoredUser>>;
}

/** The global product catalogue. */
export interface ProductRepository {
  /** All products sorted by name. */
  findAll(): Promise<Product[]>;
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
}

/** Workspaces, addressed by lower-cased subdomain. */
export interface WorkspaceRepository {
  insert(subdomain: string, name: string): Promise<Workspace>;
  findBySubdomain(subdomain: string): Promise<Workspace | undefined>;
  findPage(page: PageRequest): Promise<Slice<Workspace>>;
  delete(id: number): Promise<void>;
  /** Locks the workspace row until commit (serialises last-owner checks). */
  lock(id: number): Promise<void>;
}

/** Result of resolving a request's workspace and API key in one look-up. */
export interface Credentials {
  readonly workspace: Workspace | undefined;
  /** The matching, unrevoked key of that workspace, if any. */
  readonly apiKeyId: string | undefined;
}

/** API keys of workspaces, stored as hashes. */
export interface ApiKeyRepository {
  insert(workspaceId: number, prefix: string, keyHash: string): Promise<ApiKeyRecord>;
  findAll(workspaceId: number): Promise<ApiKeyRecord[]>;
  /** Marks a key revoked (keeping the first revocation time); undefined when unknown. */
  revoke(workspaceId: number, id: string): Promise<{ before: ApiKeyRecord; after: ApiKeyRecord } | undefined>;
  /** Resolves a subdomain and a key hash to the workspace and its live key. */
  resolve(subdomain: string, keyHash: string): Promise<Credentials>;
  /** Records that a key was used (callers throttle how often). */
  touch(workspaceId: number, id: string): Promise<void>;
}

/** The audit trail. */
export interface AuditRepository {
  append(entry: AuditEntry): Promise<void>;
  /** A page of events, oldest first; `workspaceId` null means every event. */
  findPage(workspaceId: number | null, page: PageRequest): Promise<Slice<AuditEvent>>;
}

/** Every repository, bound to one transaction (or to the pool outside one). */
export interface Repositories {
  readonly users: UserRepository;
  readonly products: ProductRepository;
  readonly workspaces: WorkspaceRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly audit: AuditRepository;
}

/**
 * The storage the domain runs on. `transaction` runs `work` in one database transaction
 * (READ COMMITTED) and commits when it resolves; database constraint violations surface as
 * AppErrors (e.g. `user_already_exists`).
 */
export interface Store extends Repositories {
  transaction<T>(work: (tx: Repositories) => Promise<T>): Promise<T>;
}
