/*
 * The CSV of a bulk import with bad rows among good ones, for any number of rows: the test
 * (test/cli/import-1k.test.ts) imports 1,000 of them, the benchmark (bench/cli-import.ts)
 * 10,000. The special rows sit at the same fractions of the file whatever its length.
 */

/** One CSV row, as `wum users import` reads it. */
export interface ImportRow {
  email: string;
  role: string;
  first_name: string;
  last_name: string;
  apps: string;
}

/** A bad row: what it breaks, and the code the import report must give. */
export interface BadRow {
  readonly change: Partial<ImportRow>;
  readonly code: string;
}

/** The rows of an import of `count` rows (count ≥ 100), and which of them are special (1-based). */
export interface BulkImport {
  readonly rows: readonly ImportRow[];
  /** Bad rows by data row number. */
  readonly bad: Readonly<Record<number, BadRow>>;
  /** Rows whose user is already active before the import: skipped. */
  readonly active: readonly number[];
  /** Rows whose user exists deactivated before the import: reactivated. */
  readonly deactivated: readonly number[];
}

/** The good row number `i` (1-based): a spread of roles, names and apps. */
function goodRow(i: number): ImportRow {
  const apps = ['', 'crm:member', 'crm:admin;analytics:viewer', 'analytics:editor;analytics:viewer'][i % 4]!;
  return {
    email: `user${String(i).padStart(5, '0')}@bulk.example`,
    role: i % 500 === 0 ? 'owner' : 'non_owner',
    first_name: i % 7 === 0 ? '' : `First${i}`,
    last_name: i % 11 === 0 ? '' : `Last, ${i}`,
    apps,
  };
}

/**
 * The import of `count` rows: bad rows at 12, 34, 56, 78 (an earlier row's email again: row
 * 42's, line 43) and 90 % of the file; users already active at rows 10, half-way and the
 * last but one; deactivated users at rows 20, 60 % and the last.
 */
export function bulkImport(count: number): BulkImport {
  const at = (share: number) => Math.round(count * share);
  const bad: Record<number, BadRow> = {
    [at(0.12)]: { change: { apps: 'crm:member;billing:admin' }, code: 'unknown_product' },
    [at(0.34)]: { change: { email: 'not-an-email' }, code: 'validation_failed' },
    [at(0.56)]: { change: { role: 'boss' }, code: 'validation_failed' },
    [at(0.78)]: { change: { email: 'USER00042@bulk.example', role: 'owner' }, code: 'duplicate_row' },
    [at(0.9)]: { change: { apps: 'crm:wizard' }, code: 'unknown_product_role' },
  };
  const rows: ImportRow[] = [];
  for (let i = 1; i <= count; i += 1) rows.push({ ...goodRow(i), ...bad[i]?.change });
  return { rows, bad, active: [10, at(0.5), count - 1], deactivated: [20, at(0.6), count] };
}
