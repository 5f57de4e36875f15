import type { ApiKeyRepository } from './api-keys/api-key-repository.ts';
import type { AuditStreamRepository } from './audit-streams/audit-stream-repository.ts';
import type { AuditRepository } from './audit/audit-repository.ts';
import type { EventRepository } from './events/event-repository.ts';
import type { GroupRepository } from './groups/group-repository.ts';
import type { IdentityProviderRepository } from './identity-providers/identity-provider-repository.ts';
import type { LifecycleRepository } from './lifecycle/lifecycle-repository.ts';
import type { PolicyRepository } from './lifecycle/policy-repository.ts';
import type { ProductRepository } from './products/product-repository.ts';
import type { ReencryptionReport, ReencryptionScope } from './secrets/reencryption.ts';
import type { OperatorSessionRepository } from './sessions/operator-session-repository.ts';
import type { SessionRepository } from './sessions/session-repository.ts';
import type { UserImportRepository } from './users/import-repository.ts';
import type { UserRepository } from './users/user-repository.ts';
import type { WebhookRepository } from './webhooks/webhook-repository.ts';
import type { WorkspaceRepository } from './workspaces/workspace-repository.ts';

/*
 * The aggregate of the domain's storage: every repository, and the store that binds them to a
 * transaction. Each feature declares its entity types and its port in its own folder
 * (core/<feature>/); this file only assembles them, for server/ to build and the services to
 * receive (docs/architecture.md, "Ports by feature").
 */

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
