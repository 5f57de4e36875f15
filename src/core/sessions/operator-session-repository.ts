import type { ActorJson } from '../actor.ts';

/*
 * Operators' console sessions and sign-ins as the domain stores them: the session, the sign-in
 * under way and the port (storage/operator-sessions.queries.ts).
 */

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
