/*
 * The signed-in credentials: a workspace API key and/or the operator token. They live in this
 * tab's sessionStorage only (gone when the tab closes), never in a URL, a cookie, a log or
 * localStorage; "Sign out" forgets them (docs/console.md, "Using it").
 */
import { useSyncExternalStore } from 'react';

/** What the person signed in with; either may be absent. */
export interface Credentials {
  /** A workspace API key (`wum_…`), sent as `X-Api-Key` to this host's workspace. */
  readonly apiKey?: string;
  /** The server's `ADMIN_TOKEN`, sent as `Authorization: Bearer` to `/admin/v1`. */
  readonly adminToken?: string;
}

const STORAGE_KEY = 'wum-console-credentials';
const listeners = new Set<() => void>();

function read(): Credentials {
  try {
    const parsed: unknown = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? '{}');
    if (typeof parsed !== 'object' || parsed === null) return {};
    const { apiKey, adminToken } = parsed as Record<string, unknown>;
    return {
      ...(typeof apiKey === 'string' && apiKey ? { apiKey } : {}),
      ...(typeof adminToken === 'string' && adminToken ? { adminToken } : {}),
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

/** Forgets every credential (Sign out). */
export function signOut(): void {
  setCredentials({ apiKey: undefined, adminToken: undefined });
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
