import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'csv-stringify/sync';
import { createAdminClient, createClient, type User, type WumClient } from 'wum/sdk';
import { BACKEND } from '../helpers/test-context.ts';
import { startWumServer, type WumServer } from '../helpers/wum-server.ts';
import { runWum, type WumRun } from './run-wum.ts';

const ROWS = 10_000;
const TIMEOUT = { timeout: 300_000 };

interface Row {
  email: string;
  role: string;
  first_name: string;
  last_name: string;
  apps: string;
}

/** The good row number `i` (1-based): a spread of roles, names and apps. */
function goodRow(i: number): Row {
  const apps = ['', 'crm:member', 'crm:admin;analytics:viewer', 'analytics:editor;analytics:viewer'][i % 4]!;
  return {
    email: `user${String(i).padStart(5, '0')}@bulk.example`,
    role: i % 500 === 0 ? 'owner' : 'non_owner',
    first_name: i % 7 === 0 ? '' : `First${i}`,
    last_name: i % 11 === 0 ? '' : `Last, ${i}`,
    apps,
  };
}

/** Bad rows by data row number: what they break, and the code the report must give. */
const BAD: Record<number, { change: Partial<Row>; code: string; outcome: 'rejected' }> = {
  1200: { change: { apps: 'crm:member;billing:admin' }, code: 'unknown_product', outcome: 'rejected' },
  3400: { change: { email: 'not-an-email' }, code: 'validation_failed', outcome: 'rejected' },
  5600: { change: { role: 'boss' }, code: 'validation_failed', outcome: 'rejected' },
  7800: { change: { email: 'USER00042@bulk.example', role: 'owner' }, code: 'duplicate_row', outcome: 'rejected' },
  9000: { change: { apps: 'crm:wizard' }, code: 'unknown_product_role', outcome: 'rejected' },
};
/** Rows whose user is already active before the import: skipped. */
const ACTIVE = [10, 5000, 9999];
/** Rows whose user exists deactivated before the import: reactivated. */
const DEACTIVATED = [20, 6000, 10_000];

describe(`wum users import: 10,000 rows with bad ones, resumable [${BACKEND}]`, () => {
  let server: WumServer;
  let dir: string;
  let file: string;
  let wum: WumClient;
  let env: Record<string, string>;
  const rows: Row[] = [];

  before(async () => {
    // Bulk load: no per-key rate limit, and no load shedding on a busy test machine (the SDK's
    // handling of 429 and 503 is tested in test/sdk/); this test is about the import itself.
    server = await startWumServer({ RATE_LIMIT_PER_KEY: '0', SHED_EVENT_LOOP_DELAY_MS: '0' });
    dir = mkdtempSync(join(tmpdir(), 'wum-import-'));
    const admin = createAdminClient({ baseUrl: server.adminUrl, adminToken: server.adminToken });
    await admin.products.put('crm', ['admin', 'member']);
    await admin.products.put('analytics', ['editor', 'viewer']);
    const { api_key: key } = await admin.workspaces.create({ subdomain: 'bulk' });
    await admin.close();
    env = { WUM_URL: server.workspaceUrl('bulk'), WUM_API_KEY: key.key };
    wum = createClient({ baseUrl: env.WUM_URL!, apiKey: key.key });

    for (let i = 1; i <= ROWS; i += 1) rows.push({ ...goodRow(i), ...BAD[i]?.change });
    for (const i of ACTIVE) await wum.users.add({ email: rows[i - 1]!.email, role: 'non_owner', apps: [] });
    for (const i of DEACTIVATED) {
      await wum.users.add({ email: rows[i - 1]!.email, role: 'owner', first_name: 'Before', apps: [{ name: 'crm', role: 'admin' }] });
    }
    // An owner stays active, so the deactivations below are not the last owner's.
    await wum.users.add({ email: 'keeper@bulk.example', role: 'owner', apps: [] });
    for (const i of DEACTIVATED) await wum.users.remove(rows[i - 1]!.email);
    file = join(dir, 'users.csv');
    writeFileSync(file, stringify(rows, { header: true, columns: ['email', 'role', 'first_name', 'last_name', 'apps'] }));
  }, TIMEOUT);
  after(async () => {
    await wum?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const line = (i: number) => i + 1; // the header is line 1
  const badCount = Object.keys(BAD).length;

  function assertRejections(run: WumRun) {
    const report = run.json();
    const rejected = report.rows.filter((r: { outcome: string }) => r.outcome === 'rejected');
    assert.deepEqual(
      rejected.map((r: { line: number; code: string }) => [r.line, r.code]),
      Object.entries(BAD).map(([i, bad]) => [line(Number(i)), bad.code]),
    );
    const detail = (i: number) => rejected.find((r: { line: number }) => r.line === line(i)).detail as string;
    assert.match(detail(1200), /user\.apps\[1\]\.name: unknown product "billing"/);
    assert.match(detail(3400), /user\.email: must be a valid email address/);
    assert.match(detail(5600), /user\.role: must be one of: owner, non_owner/);
    assert.match(detail(7800), /the same email as line 43/);
    assert.match(detail(9000), /user\.apps\[0\]\.role/);
  }

  test('the first import adds and reactivates the good rows, skips active users, rejects the bad rows (exit 1)', TIMEOUT, async () => {
    const run = await runWum(['users', 'import', file, '--json'], env, 240_000);
    assert.equal(run.code, 1, `exit 1 because rows were rejected\n${run.stderr}`);
    assert.deepEqual(run.json().summary, {
      rows: ROWS,
      added: ROWS - badCount - ACTIVE.length - DEACTIVATED.length,
      reactivated: DEACTIVATED.length,
      skipped: ACTIVE.length,
      rejected: badCount,
      not_attempted: 0,
    });
    const byLine = new Map(run.json().rows.map((r: { line: number; outcome: string }) => [r.line, r.outcome]));
    for (const i of ACTIVE) assert.equal(byLine.get(line(i)), 'skipped');
    for (const i of DEACTIVATED) assert.equal(byLine.get(line(i)), 'reactivated');
    assert.equal(byLine.get(line(1)), 'added');
    assertRejections(run);
  });

  test('the users stored are exactly the good rows, with their roles, names and apps', TIMEOUT, async () => {
    const stored = new Map<string, User>();
    for await (const user of wum.users.iterate({ status: 'all' })) stored.set(user.email, user);
    assert.equal(stored.size, ROWS - badCount + 1, 'every good row, plus keeper@');
    for (const [i, row] of rows.entries()) {
      const n = i + 1;
      const user = stored.get(row.email);
      if (BAD[n]) {
        if (BAD[n].code !== 'duplicate_row') assert.equal(user, undefined, `row ${n} was not stored`);
        continue;
      }
      assert.ok(user, `row ${n} stored`);
      assert.equal(user.status, 'active');
      if (ACTIVE.includes(n)) {
        assert.equal(user.role, 'non_owner', 'a skipped user is left as it was');
        continue;
      }
      const expectedApps = row.apps ? row.apps.split(';').map((a) => ({ name: a.split(':')[0], role: a.split(':')[1] })) : [];
      assert.deepEqual(
        { role: user.role, apps: user.apps },
        { role: row.role, apps: expectedApps },
        `row ${n}`,
      );
      const keptFirst = DEACTIVATED.includes(n) ? 'Before' : '-';
      assert.equal(user.first_name, row.first_name || keptFirst, `row ${n} first_name`);
      assert.equal(user.last_name, row.last_name || '-', `row ${n} last_name`);
    }
    assert.equal(stored.get('user00042@bulk.example')!.role, rows[41]!.role, 'the duplicate row did not change the first');
  });

  test('running the same import again skips everything already there (resumable)', TIMEOUT, async () => {
    const run = await runWum(['users', 'import', file, '--json'], env, 240_000);
    assert.equal(run.code, 1, 'the bad rows are still rejected');
    assert.deepEqual(run.json().summary, {
      rows: ROWS,
      added: 0,
      reactivated: 0,
      skipped: ROWS - badCount,
      rejected: badCount,
      not_attempted: 0,
    });
    assertRejections(run);
    assert.equal((await wum.users.list({ status: 'all', page_size: 1 })).total_count, ROWS - badCount + 1);
  });
});
