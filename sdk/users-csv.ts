/*
 * The users CSV format of `wum users import`/`export`, and of the web console's import and
 * export: pure functions without Node APIs, so that the console (console/src) bundles this
 * same file and both read and write one format the same way.
 */
import type { components, operations } from './schema.ts';

type User = components['schemas']['User'];
type NewUser = operations['addUser']['requestBody']['content']['application/json']['user'];
type AppRole = NewUser['apps'][number];

/** The columns of `wum users import` and `wum users export`, in export order. */
export const CSV_COLUMNS = ['email', 'role', 'first_name', 'last_name', 'apps', 'expires_at'] as const;
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
    // Empty: the membership never ends (docs/contract.md Part B, "Access that ends on time").
    ...(record.expires_at?.trim() ? { expires_at: record.expires_at.trim() } : {}),
  };
}

/** `crm:admin;analytics:viewer`: a user's apps as the CSV and the tables show them. */
export function formatApps(apps: ReadonlyArray<{ name: string; role: string }>): string {
  return apps.map((a) => `${a.name}:${a.role}`).join(';');
}

/** True when a 201 from `POST /users` was a reactivation: the user existed before this call. */
export function wasReactivated(user: User): boolean {
  return user.updated_at !== user.created_at;
}

/**
 * A cell a spreadsheet would run as a formula: it begins with `=`, `+`, `-`, `@`, a tab or a
 * carriage return (OWASP, "CSV Injection") — possibly behind quotes this module itself added,
 * so that the escape can always be undone.
 */
const FORMULA_START = /^'*[=+\-@\t\r]/;
/**
 * A lone `-` (behind any quotes) starts no formula: it is the name wum gives a user created
 * without one (docs/contract.md Part B, Users), and a spreadsheet shows it as text.
 */
const LONE_DASH = /^'*-$/;

/** True when a spreadsheet could read `value` as a formula (OWASP, "CSV Injection"). */
function formulaLike(value: string): boolean {
  return FORMULA_START.test(value) && !LONE_DASH.test(value);
}

/**
 * A cell as the export writes it: one `'` in front of a value a spreadsheet would read as a
 * formula (OWASP, "CSV Injection"), so `=cmd|' /C calc'!A0` shows as text; any other value
 * (a lone `-` among them) unchanged. {@link unescapeCell} undoes it exactly.
 */
export function escapeCell(value: string): string {
  return formulaLike(value) ? `'${value}` : value;
}

/** A cell as the import reads it: the `'` that {@link escapeCell} added is removed, other values are kept. */
export function unescapeCell(cell: string): string {
  return cell.startsWith("'") && formulaLike(cell) ? cell.slice(1) : cell;
}

/** A user as an export row, in {@link CSV_COLUMNS} order, each cell escaped with {@link escapeCell}. */
export function userToRecord(user: User): string[] {
  return [user.email, user.role, user.first_name, user.last_name, formatApps(user.apps), user.expires_at ?? ''].map(escapeCell);
}

/** An import file that cannot be read as a whole: empty, or a header that is not {@link CSV_COLUMNS}. */
export class ImportFileError extends Error {
  override readonly name = 'ImportFileError';
}

/** One data row of an import file: the user to send, or why it cannot be sent. */
export interface ParsedRow {
  /** Line of the file the row ends on (the header is line 1). */
  readonly line: number;
  readonly email: string;
  readonly user?: NewUser;
  readonly error?: RowError;
}

/** One parsed CSV record and the line it ends on, as a CSV parser reports them. */
export interface CsvLine {
  readonly cells: readonly string[];
  readonly line: number;
}

/**
 * Checks the header row of an import file: it names the columns (any order; `email` and `role`
 * required, `first_name`, `last_name`, `apps`, `expires_at` optional, nothing else, each once).
 * @param source - the file's name, for messages.
 * @returns the columns, lower-cased, in the file's order.
 * @throws ImportFileError when there is no header or it is wrong.
 */
export function importColumns(header: CsvLine | undefined, source: string): string[] {
  if (!header) throw new ImportFileError(`${source} is empty: expected a header row ${CSV_COLUMNS.join(',')}`);
  const columns = header.cells.map((c) => c.trim().toLowerCase());
  const unknown = columns.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  const missing = REQUIRED_COLUMNS.filter((c) => !columns.includes(c));
  if (unknown.length > 0 || missing.length > 0 || new Set(columns).size !== columns.length) {
    throw new ImportFileError(
      `${source}: the header must name the columns ${CSV_COLUMNS.join(',')} (email and role required, each once)` +
        (unknown.length ? `; unknown: ${unknown.join(', ')}` : '') +
        (missing.length ? `; missing: ${missing.join(', ')}` : ''),
    );
  }
  return columns;
}

/**
 * One data record of an import file under `columns` (from {@link importColumns}): the user it
 * asks for, or why it cannot be sent (`invalid_row`: the wrong number of cells; `invalid_apps`).
 * A cell escaped against formula injection by the export is read back unescaped.
 */
export function parseImportRecord(columns: readonly string[], { cells, line }: CsvLine): ParsedRow {
  const record = Object.fromEntries(columns.map((c, i) => [c, cells[i] === undefined ? undefined : unescapeCell(cells[i]!)])) as CsvRecord;
  const email = (record.email ?? '').trim();
  try {
    if (cells.length !== columns.length) {
      throw new RowError('invalid_row', `the row has ${cells.length} cells, the header ${columns.length}`);
    }
    return { line, email, user: recordToUser(record) };
  } catch (error) {
    if (error instanceof RowError) return { line, email, error };
    throw error;
  }
}

/**
 * Checks the records of an import file: a header row ({@link importColumns}), then one user per
 * row ({@link parseImportRecord}). A row with the email of an earlier row (compared
 * case-insensitively, as the API does) is rejected too, before anything is sent.
 * @param source - the file's name, for messages.
 * @throws ImportFileError when there is no header or it is wrong.
 */
export function parseImportRecords(records: readonly CsvLine[], source: string): ParsedRow[] {
  const [header, ...data] = records;
  const columns = importColumns(header, source);
  const firstLine = new Map<string, number>();
  return data.map((record) => {
    const parsed = parseImportRecord(columns, record);
    if (parsed.error) return parsed;
    const key = parsed.email.toLowerCase();
    const earlier = firstLine.get(key);
    if (earlier !== undefined) return { line: parsed.line, email: parsed.email, error: new RowError('duplicate_row', `the same email as line ${earlier}`) };
    firstLine.set(key, parsed.line);
    return parsed;
  });
}
