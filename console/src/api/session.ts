/*
 * Who the console's workspace session is and what it may do: its actor (a person by email, or
 * an API key by name) and its scopes, read from the session itself
 * (`GET /api/external/v2/console/session`). Pages use the scopes to hide or turn off, with the
 * reason, what the API would refuse anyway (docs/security.md, "Console sessions").
 */
import { useQuery } from '@tanstack/react-query';
import { EVERY_SCOPE } from '../../../sdk/api-key-scopes.ts';
import { useCredentials } from '../session.ts';
import { readSession } from './console-client.ts';

/** The workspace session while signed in to a workspace (cached a minute; cleared at sign-out). */
export function useSessionInfo() {
  const { workspace } = useCredentials();
  return useQuery({ queryKey: ['session', workspace], queryFn: ({ signal }) => readSession(signal), enabled: Boolean(workspace), staleTime: 60_000 });
}

/** What a session may do, scope by scope. */
export interface Scopes {
  /** True once the scopes are known (an operator's at once). */
  readonly known: boolean;
  /** True when the session holds `scope` (or every scope, `*`). */
  allows(scope: string): boolean;
  /** Why a control needing `scope` is off, or undefined when the session holds it (or is not known yet). */
  lacking(scope: string): string | undefined;
}

const OPERATOR: Scopes = { known: true, allows: () => true, lacking: () => undefined };

/** The sentence that says why a control is off. */
export function lackingScope(scope: string): string {
  return `This session lacks the ${scope} scope (an owner’s session has every scope; a key needs it granted).`;
}

/**
 * The scopes of whoever acts: the operator may do everything (the operator API checks no
 * scope); a workspace session what its scopes allow. Until the session is read, nothing is
 * allowed and no reason is given (controls stay off a moment rather than flash on).
 * @param operator - true on the operator's pages.
 */
export function useScopes(operator = false): Scopes {
  const session = useSessionInfo();
  const scopes = session.data?.scopes;
  if (operator) return OPERATOR;
  const allows = (scope: string) => Boolean(scopes && (scopes.includes(scope) || scopes.includes(EVERY_SCOPE)));
  return { known: scopes !== undefined, allows, lacking: (scope) => (scopes === undefined || allows(scope) ? undefined : lackingScope(scope)) };
}
