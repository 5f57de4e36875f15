import Table from 'cli-table3';
import type { User } from 'wum/sdk';
import { formatApps } from '../../sdk/users-csv.ts';

export { formatApps, wasReactivated } from '../../sdk/users-csv.ts';

/** Writes `value` to stdout as indented JSON. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Writes a line to stdout. */
export function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** No colours, so output is the same on a terminal and in a pipe. */
const PLAIN = { head: [], border: [] };
/** No rule between rows: one line per row. */
const COMPACT = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };

/** A table with a header row. */
export function table(head: string[], rows: Array<Array<string | number>>): string {
  const t = new Table({ head, style: PLAIN, chars: COMPACT });
  t.push(...rows.map((r) => r.map(String)));
  return t.toString();
}

/** A two-column table of a record's fields. */
export function details(record: Record<string, string>): string {
  const t = new Table({ style: PLAIN, chars: COMPACT });
  for (const [key, value] of Object.entries(record)) t.push({ [key]: value });
  return t.toString();
}

/** One user as a two-column table. */
export function userDetails(user: User): string {
  return details({
    email: user.email,
    role: user.role,
    first_name: user.first_name,
    last_name: user.last_name,
    apps: formatApps(user.apps) || '(none)',
    status: user.status,
    created_at: user.created_at,
    updated_at: user.updated_at,
  });
}

/** Users as a table, one row each. */
export function usersTable(users: readonly User[]): string {
  return table(
    ['email', 'role', 'first_name', 'last_name', 'apps', 'status'],
    users.map((u) => [u.email, u.role, u.first_name, u.last_name, formatApps(u.apps), u.status]),
  );
}
