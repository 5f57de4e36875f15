// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { WumApiError, type NewUser, type User, type UserPage, type WumClient } from 'wum/sdk';
import { UsageError } from '../../src/cli/context.ts';
import { parse } from 'csv-parse/sync';
import { parseApps, parseImportRecords, recordToUser, RowError } from '../../sdk/users-csv.ts';
import { importRows, summarize } from '../../sdk/users-import-rows.ts';
import { checkImportFile } from '../../src/cli/users-import.ts';

const dir = mkdtempSync(join(tmpdir(), 'wum-import-unit-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

function csv(text: string): string {
  const file = join(dir, `f${(files += 1)}.csv`);
  writeFileSync(file, text);
  return file;
}

function user(add: NewUser, reactivated = false): User {
  return {
    id: '0b9e7f3c-4a51-4c2e-9d7a-6f1e2b3c4d5e',
    email: add.email,
    role: add.role,
    first_name: add.first_name ?? '-',
    last_name: add.last_name ?? '-',
    apps: add.apps.map((app) => ({ name: app.name, role: app.role })),
    status: 'active',
    expires_at: null,
    created_at: '2025-01-15T09:30:00.000Z',
    updated_at: reactivated ? '2025-02-01T10:00:00.000Z' : '2025-01-15T09:30:00.000Z',
    last_active_at: null,
  };
}

/** A workspace client stand-in: `add` answers from `answer`, listings from `active`. */
function fakeClient(answer: (add: NewUser, call: number) => User | WumApiError, active: string[] = []) {
  const added: string[] = [];
  const page = (emails: string[], n: number, size: number): UserPage => ({
    users: emails.slice((n - 1) * size, n * size).map((email) => user({ email, role: 'non_owner', apps: [] })),
    pagination: { total_records: emails.length, current_page_number: n, total_pages: Math.ceil(emails.length / size), page_size: size },
    total_count: emails.length,
  });
  const client = {
    users: {
      async add(add: NewUser) {
        added.push(add.email);
        const result = answer(add, added.length);
        if (result instanceof WumApiError) throw result;
        return result;
      },
      async list(query: { page_number?: number; page_size?: number } = {}) {
        return page(active, query.page_number ?? 1, query.page_size ?? 30);
      },
      async *iterate() {
        for (const email of active) yield user({ email, role: 'non_owner', apps: [] });
      },
    },
  } as unknown as WumClient;
  return { client, added };
}

function apiError(status: number, code: string, errors: Array<{ field: string; message: string }> = []): WumApiError {
  return new WumApiError({ status, code, detail: `detail of ${code}`, errors, operation: 'POST /users' });
}

/** The rows of a CSV file as the console's import reads them (sdk/users-csv.ts). */
function readImportFile(file: string) {
  const records = parse(readFileSync(file, 'utf8'), { bom: true, skip_empty_lines: true, relax_column_count: true, info: true }) as unknown as Array<{
    record: string[];
    info: { lines: number };
  }>;
  return parseImportRecords(records.map(({ record, info }) => ({ cells: record, line: info.lines })), file);
}

describe('reading an import file', () => {
  test('columns in any order, optional ones missing; names kept exactly; email, role and apps trimmed', () => {
    const rows = readImportFile(csv('role,Email, apps \r\n owner , ada@example.com , crm:admin ; analytics:viewer \n'));
    assert.deepEqual(rows, [
      { line: 2, email: 'ada@example.com', user: { email: 'ada@example.com', role: 'owner', apps: [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }] } },
    ]);
    const [named] = readImportFile(csv('email,role,first_name,last_name\nb@example.com,non_owner, Bo ,"Smith, ""Jr"""\n'));
    assert.deepEqual(named!.user, { email: 'b@example.com', role: 'non_owner', apps: [], first_name: ' Bo ', last_name: 'Smith, "Jr"' });
  });

  test('rows that cannot be sent are rejected up front: wrong cell count, malformed apps, a repeated email', () => {
    const rows = readImportFile(
      csv('email,role,apps\na@example.com,owner,crm:admin\nb@example.com,owner\nc@example.com,owner,crm\nA@EXAMPLE.COM,non_owner,\n\nd@example.com,owner,:admin\n'),
    );
    assert.deepEqual(
      rows.map((r) => [r.line, r.email, r.error?.code]),
      [
        [2, 'a@example.com', undefined],
        [3, 'b@example.com', 'invalid_row'],
        [4, 'c@example.com', 'invalid_apps'],
        [5, 'A@EXAMPLE.COM', 'duplicate_row'],
        [7, 'd@example.com', 'invalid_apps'],
      ],
    );
    assert.equal(rows[3]!.error!.message, 'the same email as line 2');
  });

  test('a missing, empty or misnamed header is a usage error of the CLI, before any upload', () => {
    assert.throws(() => checkImportFile(join(dir, 'absent.csv')), UsageError);
    assert.throws(() => checkImportFile(csv('')), /is empty/);
    assert.throws(() => checkImportFile(csv('email,first_name\n')), /missing: role/);
    assert.throws(() => checkImportFile(csv('email,role,firstName\n')), /unknown: firstname/);
    assert.throws(() => checkImportFile(csv('email,role,email\n')), UsageError);
    assert.doesNotThrow(() => checkImportFile(csv('email,role\na@example.com,owner\n')));
  });

  test('apps cells and empty names', () => {
    assert.deepEqual(parseApps(''), []);
    assert.deepEqual(parseApps('crm:admin;;crm:member;'), [{ name: 'crm', role: 'admin' }, { name: 'crm', role: 'member' }]);
    assert.throws(() => parseApps('crm:'), RowError);
    assert.deepEqual(recordToUser({ email: 'a@example.com', role: 'owner', first_name: '', last_name: '' }), {
      email: 'a@example.com',
      role: 'owner',
      apps: [],
    });
  });
});

describe('importing rows', () => {
  test('added, reactivated (updated_at later than created_at), skipped (409 or already listed), rejected with the problem', async () => {
    const rows = readImportFile(
      csv('email,role\nnew@example.com,owner\nback@example.com,owner\ntaken@example.com,owner\nlisted@example.com,owner\nbad@example.com,boss\n'),
    );
    const { client, added } = fakeClient(
      (add) =>
        add.email === 'back@example.com'
          ? user(add, true)
          : add.email === 'taken@example.com'
            ? apiError(409, 'user_already_exists')
            : add.role === ('boss' as string)
              ? apiError(400, 'validation_failed', [{ field: 'user.role', message: 'must be one of: owner, non_owner' }])
              : user(add),
      ['listed@example.com'],
    );
    const reports = await importRows(client, rows, { concurrency: 2 });
    assert.deepEqual(reports, [
      { line: 2, email: 'new@example.com', outcome: 'added' },
      { line: 3, email: 'back@example.com', outcome: 'reactivated' },
      { line: 4, email: 'taken@example.com', outcome: 'skipped', code: 'user_already_exists', detail: 'already active' },
      { line: 5, email: 'listed@example.com', outcome: 'skipped', code: 'user_already_exists', detail: 'already active' },
      {
        line: 6,
        email: 'bad@example.com',
        outcome: 'rejected',
        code: 'validation_failed',
        detail: 'detail of validation_failed (user.role: must be one of: owner, non_owner)',
      },
    ]);
    assert.ok(!added.includes('listed@example.com'), 'a user listed as active is skipped without a request');
    assert.deepEqual(summarize(reports), { rows: 5, added: 1, reactivated: 1, skipped: 2, rejected: 1, not_attempted: 0 });
  });

  test('an error every row would meet (unreachable server, bad key) stops the import: the rest is not attempted', async () => {
    const lines = ['email,role', ...Array.from({ length: 20 }, (_, i) => `u${i}@example.com,owner`)];
    const rows = readImportFile(csv(`${lines.join('\n')}\n`));
    const { client, added } = fakeClient((add, call) => (call >= 3 ? apiError(0, 'network_error') : user(add)));
    const reports = await importRows(client, rows, { concurrency: 1 });
    const summary = summarize(reports);
    assert.deepEqual(summary, { rows: 20, added: 2, reactivated: 0, skipped: 0, rejected: 1, not_attempted: 17 });
    assert.equal(added.length, 3, 'nothing is sent after the failure');
    assert.deepEqual(reports[2], { line: 4, email: 'u2@example.com', outcome: 'rejected', code: 'network_error', detail: 'detail of network_error' });
    assert.match(reports[3]!.detail!, /^the import stopped: /);
  });

  test('rows run concurrently, and the report keeps the file order', async () => {
    const lines = ['email,role', ...Array.from({ length: 50 }, (_, i) => `c${i}@example.com,owner`)];
    const rows = readImportFile(csv(`${lines.join('\n')}\n`));
    let inFlight = 0;
    let most = 0;
    const client = {
      users: {
        async add(add: NewUser) {
          inFlight += 1;
          most = Math.max(most, inFlight);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
          inFlight -= 1;
          return user(add);
        },
        async list() {
          return { users: [], pagination: { total_records: 0, current_page_number: 1, total_pages: 0, page_size: 1 }, total_count: 0 };
        },
        async *iterate() {},
      },
    } as unknown as WumClient;
    const reports = await importRows(client, rows, { concurrency: 8 });
    assert.equal(most, 8);
    assert.deepEqual(reports.map((r) => r.email), rows.map((r) => r.email));
  });
});
