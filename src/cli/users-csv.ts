import type { AppRole, NewUser, User } from 'wum/sdk';
import { formatApps } from './output.ts';

/** The columns of `wum users import` and `wum users export`, in export order. */
export const CSV_COLUMNS = ['email', 'role', 'first_name', 'last_name', 'apps'] as const;
/** Columns an import file must have. */
export const REQUIRED_COLUMNS = ['email', 'role'] as const;

type Column = (typeof CSV_COLUMNS)[number];
/** One CSV record by column name (missing optional columns are undefined). */
export type CsvRecord = Partial<Record<Column, string>>;

/** Why a CSV row cannot be sent: a stable code and a message, like a problem's. */
export class RowError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Parses the apps cell: `crm:admin;analytics:viewer` (empty → no apps; spaces around parts
 * are ignored; a product may appear with several roles).
 * @throws RowError `invalid_apps` when a part is not `<product>:<role>`.
 */
export function parseApps(cell: string | undefined): AppRole[] {
  const apps: AppRole[] = [];
  for (const part of (cell ?? '').split(';')) {
    const item = part.trim();
    if (!item) continue;
    const colon = item.indexOf(':');
    const name = item.slice(0, colon).trim();
    const role = item.slice(colon + 1).trim();
    if (colon < 0 || !name || !role) {
      throw new RowError('invalid_apps', `apps entry "${item}" is not <product>:<role> (e.g. crm:admin;analytics:viewer)`);
    }
    apps.push({ name, role });
  }
  return apps;
}

/**
 * The user a CSV record asks for. Email, role and apps are trimmed; names are sent exactly as
 * they are (an export re-imports unchanged), and an empty name cell is omitted (the API then
 * keeps the name of a reactivated user, or sets `-`).
 */
export function recordToUser(record: CsvRecord): NewUser {
  return {
    email: (record.email ?? '').trim(),
    role: (record.role ?? '').trim() as NewUser['role'],
    apps: parseApps(record.apps),
    ...(record.first_name ? { first_name: record.first_name } : {}),
    ...(record.last_name ? { last_name: record.last_name } : {}),
  };
}

/** A user as an export row, in {@link CSV_COLUMNS} order. */
export function userToRecord(user: User): string[] {
  return [user.email, user.role, user.first_name, user.last_name, formatApps(user.apps)];
}
