import type { ComponentChildren } from 'preact';
import { useScopes } from '../api/session.ts';

/**
 * Says why something is hidden or off: the session lacks a scope (docs/security.md, "API keys
 * and scopes"). `what` names what is hidden ("Adding and changing users"), `reason` is the
 * sentence from `useScopes().lacking(scope)`.
 */
export function ScopeNotice({ what, reason }: { what: string; reason: string }) {
  return (
    <p class="notice" role="status">
      {what}: not available. {reason}
    </p>
  );
}

/** Props of {@link RequiresScope}. */
export interface RequiresScopeProps {
  /** The scope the children's actions need. */
  readonly scope: string;
  /** What is hidden without it, for the notice. */
  readonly what: string;
  /** True on the operator's pages (every power). */
  readonly operator?: boolean;
  readonly children: ComponentChildren;
}

/**
 * Shows `children` when the session holds `scope`, else a {@link ScopeNotice} saying why they
 * are hidden; nothing while the session's scopes are being read.
 */
export function RequiresScope({ scope, what, operator = false, children }: RequiresScopeProps) {
  const scopes = useScopes(operator);
  const reason = scopes.lacking(scope);
  if (reason) return <ScopeNotice what={what} reason={reason} />;
  return scopes.known ? <>{children}</> : null;
}
