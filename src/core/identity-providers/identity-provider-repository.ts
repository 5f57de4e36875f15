/*
 * Workspaces' identity providers as the domain stores them: the provider, a sign-in under way, the
 * owner it may let in, and the port (storage/identity-providers.queries.ts).
 */

/** A workspace's OpenID Connect identity provider; `revision` changes with every change. */
export interface IdentityProvider {
  readonly issuer: string;
  readonly clientId: string;
  /** Encrypted as stored: `Store.openSecret` (core/ports.ts) decrypts it where it is used. */
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
