import { foldEmail, isAsciiEmail } from '../users/email.ts';
import type { Store } from '../ports.ts';
import type { Workspace } from '../workspaces/workspace-repository.ts';
import type { SignedInPerson } from './sessions-service.ts';
import { SignInRefusedError } from './sign-in-refused.ts';

/** The claims of a verified ID token that decide who may enter (OpenID Connect Core 1.0 §5.1). */
export interface VerifiedIdentity {
  readonly sub: string;
  readonly email?: unknown;
  readonly email_verified?: unknown;
}

/**
 * The email an ID token vouches for: present, `email_verified: true` (else the provider vouches
 * for nothing, and anyone could claim any address there), and ASCII — wum's emails are, and one
 * with another character (U+212A KELVIN SIGN for "K", a fullwidth letter) would be another
 * mailbox than the ASCII one it resembles (docs/security.md, "One spelling of an email").
 * @throws SignInRefusedError (`sign_in_refused`, 403) saying which is missing or wrong: reason
 *   `email_missing`, `email_unverified` or `email_not_ascii`.
 */
export function verifiedEmail(identity: VerifiedIdentity): string {
  if (typeof identity.email !== 'string' || identity.email === '') {
    throw new SignInRefusedError('email_missing', 'The identity provider did not tell your email address (ask for the "email" scope).');
  }
  if (identity.email_verified !== true) {
    throw new SignInRefusedError('email_unverified', `The identity provider has not verified ${identity.email}; verify it there first.`);
  }
  if (!isAsciiEmail(identity.email)) {
    throw new SignInRefusedError('email_not_ascii', `${identity.email} is not an ASCII email address; only ASCII addresses identify people here.`);
  }
  return identity.email;
}

/**
 * Who may enter a workspace's console through its identity provider (docs/security.md,
 * "Signing in with an identity provider"): a verified email (`email_verified: true`, else the
 * provider vouches for nothing) of an active owner of the workspace. The provider's `sub` is
 * stored at the first sign-in with the provider of `issuer`; afterwards a different `sub` with
 * the same email there (an account recreated or the email moved to someone else at the provider)
 * is refused. A `sub` means something only at its issuer (OpenID Connect Core 1.0 §2), so the
 * first sign-in with another provider binds the person afresh.
 * @throws SignInRefusedError (`sign_in_refused`, 403) saying why: the reasons of {@link verifiedEmail},
 *   `not_owner`, `another_account`.
 */
export async function admitPerson(store: Store, workspace: Workspace, issuer: string, identity: VerifiedIdentity): Promise<SignedInPerson> {
  const email = verifiedEmail(identity);
  const owner = await store.identityProviders.findActiveOwner(workspace.id, foldEmail(email.trim()));
  const bound = owner ? await store.identityProviders.bindSubject(workspace.id, owner.id, issuer, identity.sub) : undefined;
  if (!owner || bound === undefined) throw new SignInRefusedError('not_owner', `${email} is not an active owner of workspace "${workspace.subdomain}".`);
  if (bound !== identity.sub) throw new SignInRefusedError('another_account', `${email} signed in before as another account of the identity provider.`);
  return { userId: owner.id, publicId: owner.publicId, email: owner.email };
}
