/*
 * Who is signed in: the workspace of this host, through a server-side session whose id is in
 * an HttpOnly cookie the page's script cannot read (the API key typed at sign-in is exchanged
 * for it at once and never kept: docs/security.md, "Console sessions"), and/or the operator:
 * a person signed in with the operator identity provider (a session cookie too), or the
 * operator token. The token and the workspace's name live in this tab's sessionStorage only (gone when
 * the tab closes), never in a URL, a log or localStorage; "Sign out" forgets them and ends the
 * session on the server.
 */
import { useSyncExternalStore } from 'react';
import { endSession, probeSession } from './api/console-client.ts';

/** What the person signed in with; either may be absent. */
export interface Credentials {
  /** The workspace signed in through the session cookie (its subdomain; no secret). */
  readonly workspace?: string;
  /** The server's `ADMIN_TOKEN`, sent as `Authorization: Bearer` to `/admin/v1`. */
  readonly adminToken?: string;
  /**
   * An operator signed in with the operator identity provider (their email; no secret): the
   * session cookie opens `/admin/v1` on this host.
   */
  readonly operator?: string;
}

const STORAGE_KEY = 'wum-console-credentials';
const listeners = new Set<() => void>();

function read(): Credentials {
  try {
    const parsed: unknown = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? '{}');
    if (typeof parsed !== 'object' || parsed === null) return {};
    const { workspace, adminToken, operator } = parsed as Record<string, unknown>;
    return {
      ...(typeof workspace === 'string' && workspace ? { workspace } : {}),
      ...(typeof adminToken === 'string' && adminToken ? { adminToken } : {}),
      ...(typeof operator === 'string' && operator ? { operator } : {}),
    };
  } catch {
    return {};
  }
}

let current: Credentials = read();

/** The credentials now (for the API client, which reads them at each request). */
export function getCredentials(): Credentials {
  return current;
}

/** Replaces the given credentials (`undefined` forgets one) and tells every subscriber. */
export function setCredentials(change: Partial<Record<keyof Credentials, string | undefined>>): void {
  const next: Record<string, string> = { ...current };
  for (const [name, value] of Object.entries(change)) {
    if (value) next[name] = value;
    else delete next[name];
  }
  current = next;
  if (Object.keys(next).length === 0) sessionStorage.removeItem(STORAGE_KEY);
  else sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
  for (const listener of listeners) listener();
}

/** The query parameter the server adds when it sends the browser back from an identity provider. */
const RETURNED_PARAM = 'signed_in';

let restoring: Promise<void> | undefined;

/**
 * Signs the page in from the session cookies it already has, once per page load: on a
 * workspace's host the workspace session, on the operator host the operator's session. So a
 * new tab, a reload or a shared link opens signed in while the cookie is valid, and a session
 * that ended on the server is forgotten here too. Run once per load only (not on every
 * render), so a "Sign out" under way is never undone by a late answer.
 * @returns a promise that settles once both answers are in (never rejects).
 */
export function restoreSessions(): Promise<void> {
  restoring ??= (async () => {
    const url = new URL(location.href);
    if (url.searchParams.has(RETURNED_PARAM)) {
      url.searchParams.delete(RETURNED_PARAM);
      history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    }
    const workspace = workspaceOfHost();
    if (workspace !== undefined) {
      const answer = await probeSession('workspace');
      // Only a clear "no session" forgets it: a network failure keeps what this tab knew.
      if (answer?.response.ok) setCredentials({ workspace });
      else if (answer && answer.response.status < 500) setCredentials({ workspace: undefined });
      return;
    }
    const answer = await probeSession('operator');
    if (answer?.data) setCredentials({ operator: answer.data.actor.label ?? 'operator' });
    else if (answer && answer.response.status < 500) setCredentials({ operator: undefined });
  })();
  return restoring;
}

/** True when signed in as operator, with the token or as a person. */
export function isOperator(credentials: Credentials): boolean {
  return Boolean(credentials.adminToken || credentials.operator);
}

/** Forgets every credential and ends the session on the server (Sign out). */
export function signOut(): void {
  // The cookie is HttpOnly: only the server can end the session and clear it.
  if (current.workspace) endSession('workspace');
  if (current.operator) endSession('operator');
  setCredentials({ workspace: undefined, adminToken: undefined, operator: undefined });
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The credentials, re-rendering the component when they change. */
export function useCredentials(): Credentials {
  return useSyncExternalStore(subscribe, getCredentials);
}

/**
 * The workspace this page's host names: its first label when the host has more than one
 * (`acme.localhost` → `acme`), else undefined (`localhost`, an IP address). The server decides
 * for real: a host that is no workspace answers `404 workspace_not_found`.
 */
export function workspaceOfHost(hostname: string = location.hostname): string | undefined {
  if (/^[\d.]+$/.test(hostname) || hostname.includes(':')) return undefined;
  const labels = hostname.split('.');
  return labels.length > 1 ? labels[0] : undefined;
}
