import { parse as parseConnectionString } from 'pg-connection-string';

/**
 * What a server must be for wum to use a session on it, as libpq's `target_session_attrs`:
 * `any` (the first host that answers), `read-write` (not a hot standby and
 * `default_transaction_read_only` off) or `primary` (not a hot standby). wum writes, so the
 * read-only modes of libpq (`read-only`, `standby`, `prefer-standby`) are refused.
 * Source: PostgreSQL documentation, libpq §34.1.2 "target_session_attrs".
 */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary';

/** One `host:port` of a multi-host URL. */
export interface DatabaseHost {
  readonly host: string;
  readonly port: number;
}

/** A `DATABASE_URL` split into its hosts and the connection settings they share. */
export interface DatabaseUrl {
  /** The hosts in the order given (at least one). */
  readonly hosts: readonly DatabaseHost[];
  readonly targetSessionAttrs: TargetSessionAttrs;
  /**
   * The URL of each host alone (`postgres://user@host:port/db?…` without
   * `target_session_attrs`), in the order of {@link hosts}: what node-postgres understands.
   */
  readonly hostUrls: readonly string[];
}

/** Thrown by {@link parseDatabaseUrl}; `message` says what is wrong, never the password. */
export class DatabaseUrlError extends Error {
  override readonly name = 'DatabaseUrlError';
}

const DEFAULT_PORT = 5432;
const TARGETS: readonly string[] = ['any', 'read-write', 'primary'];
/** scheme, user information with its `@`, the host list, and the rest (path, query, fragment). */
const URL_PARTS = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/s;
/** One host: a bracketed IPv6 address or a name/IPv4, then an optional port. */
const HOST_PART = /^(\[[^\]]+\]|[^:[\]]*)(?::(\d*))?$/;

function splitHosts(list: string): Array<DatabaseHost & { readonly raw: string }> {
  return list.split(',').map((part) => {
    const match = HOST_PART.exec(part);
    if (!match) throw new DatabaseUrlError(`DATABASE_URL has a malformed host "${part}"`);
    const host = decodeURIComponent(match[1]!);
    const port = match[2] ? Number(match[2]) : DEFAULT_PORT;
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new DatabaseUrlError(`DATABASE_URL has an invalid port in "${part}"`);
    }
    // `raw` keeps the host as written (percent-encoding included) for the single-host URL.
    return { host: host === '' ? 'localhost' : host, port, raw: match[1] === '' ? 'localhost' : match[1]! };
  });
}

/** The query string without `target_session_attrs`, and that parameter's value. */
function takeTarget(rest: string): { rest: string; target: string } {
  const hash = rest.indexOf('#');
  const beforeHash = hash === -1 ? rest : rest.slice(0, hash);
  const question = beforeHash.indexOf('?');
  if (question === -1) return { rest: beforeHash, target: 'any' };
  const params = new URLSearchParams(beforeHash.slice(question + 1));
  const target = params.get('target_session_attrs') ?? 'any';
  params.delete('target_session_attrs');
  const query = params.toString();
  return { rest: beforeHash.slice(0, question) + (query ? `?${query}` : ''), target };
}

/**
 * Parses a PostgreSQL connection URI in libpq's form, one host or several:
 * `postgres://user:password@h1:5432,h2:5432/db?target_session_attrs=read-write&sslmode=…`.
 * Each host keeps its own port (5432 when omitted); every other part (user, password,
 * database, `sslmode`, `application_name`, …) applies to all hosts and is read by
 * node-postgres's own parser (`pg-connection-string`) from each host's single-host URL.
 * Without `target_session_attrs` the mode is `any`, as in libpq.
 * Source: PostgreSQL documentation, libpq §34.1.1.2 "Connection URIs" and §34.1.1.3
 * "Specifying Multiple Hosts"; docs/contract.md Part B, "A highly available database".
 *
 * @throws DatabaseUrlError for a URL that is not `postgres://` or `postgresql://`, a malformed
 *   host or port, or a `target_session_attrs` other than `any`, `read-write` or `primary`.
 */
export function parseDatabaseUrl(url: string): DatabaseUrl {
  const parts = URL_PARTS.exec(url);
  if (!parts) throw new DatabaseUrlError('DATABASE_URL must start with postgres:// or postgresql://');
  const [, scheme, userinfo = '', hostList, tail] = parts as unknown as [string, string, string | undefined, string, string];
  const hosts = splitHosts(hostList);
  const { rest, target } = takeTarget(tail);
  if (!TARGETS.includes(target)) {
    throw new DatabaseUrlError(
      `DATABASE_URL has target_session_attrs=${target}; wum writes, so it takes any, read-write or primary`,
    );
  }
  const hostUrls = hosts.map(({ raw, port }) => `${scheme}${userinfo}${raw}:${port}${rest}`);
  for (const hostUrl of hostUrls) {
    try {
      parseConnectionString(hostUrl);
    } catch {
      throw new DatabaseUrlError('DATABASE_URL is not a valid connection URI');
    }
  }
  return {
    hosts: hosts.map(({ host, port }) => ({ host, port })),
    targetSessionAttrs: target as TargetSessionAttrs,
    hostUrls,
  };
}
