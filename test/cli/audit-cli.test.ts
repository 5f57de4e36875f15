// one backend: postgres: the CLI against a server process, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { createAdminClient, createClient, type OwnAuditEvent, type OwnAuditEventPage, type WumAdminClient, type WumClient } from 'wum/sdk';
import { BACKEND } from '../helpers/test-context.ts';
import { startWumServer, type WumServer } from '../../harness/wum-server.ts';
import { runWum } from '../../harness/run-wum.ts';
import { REPO_ROOT } from '../../harness/server-process.ts';
import { json } from '../helpers/json.ts';

const TIMEOUT = { timeout: 180_000 };

/** `wum audit list|tail|export` and the SDK's audit iterator against a server process. */
describe(`wum audit against a server process [${BACKEND}]`, () => {
  let server: WumServer;
  let admin: WumAdminClient;
  let wum: WumClient;
  let env: Record<string, string>;
  let serial = 0;

  const addUser = async (email = `u${++serial}@example.com`, first_name?: string) => {
    await wum.users.add({ email, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }], ...(first_name ? { first_name } : {}) });
  };
  /** Every event of the workspace, oldest first, through the SDK's cursor iterator. */
  const everything = async (query: Parameters<WumClient['auditEvents']['iterate']>[0] = {}) => {
    const all: OwnAuditEvent[] = [];
    for await (const event of wum.auditEvents.iterate({ sort: 'occurred_at', page_size: 2, ...query })) all.push(event);
    return all;
  };

  before(async () => {
    server = await startWumServer({ RATE_LIMIT_PER_KEY: '0' });
    admin = createAdminClient({ baseUrl: server.adminUrl, adminToken: server.adminToken });
    await admin.products.put('crm', ['admin', 'member']);
    const created = await admin.workspaces.create({ subdomain: 'trail' });
    wum = createClient({ baseUrl: server.workspaceUrl('trail'), apiKey: created.api_key.key });
    env = { WUM_URL: server.workspaceUrl('trail'), WUM_API_KEY: created.api_key.key };
    for (let i = 0; i < 5; i += 1) await addUser();
    await addUser('=formula@example.com', 'Ada, "quoted"');
  }, TIMEOUT);
  after(async () => {
    await admin?.close();
    await wum?.close();
    await server?.stop();
  });

  test('the SDK iterates every event by cursor, with since and until; the admin client too', TIMEOUT, async () => {
    const all = await everything();
    const pages: OwnAuditEvent[] = [];
    for (let page = 1; ; page += 1) {
      const { audit_events: items } = await wum.auditEvents.list({ sort: 'occurred_at', page_size: 100, page_number: page });
      if (items.length === 0) break;
      pages.push(...items);
    }
    assert.deepEqual(all, pages);
    const pivot = all[3]!.occurred_at;
    assert.deepEqual((await everything({ since: pivot })).map((e) => e.id), all.filter((e) => e.occurred_at >= pivot).map((e) => e.id));
    assert.deepEqual((await everything({ until: pivot })).map((e) => e.id), all.filter((e) => e.occurred_at < pivot).map((e) => e.id));
    const operator: number[] = [];
    for await (const e of admin.auditEvents.iterate('trail', { page_size: 3 })) operator.push(e.id);
    assert.deepEqual(operator, all.map((e) => e.id));
  });

  test('wum audit list --since --until --action --actor-type --target-id; a bad instant is a usage error', TIMEOUT, async () => {
    const all = await everything();
    const users = all.filter((e) => e.action === 'user.created');
    const since = users[1]!.occurred_at;
    const until = users[4]!.occurred_at;
    const run = await runWum(['audit', 'list', '--json', '--oldest-first', '--action', 'user.created', '--actor-type', 'api_key', '--since', since, '--until', until], env);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(json<OwnAuditEventPage>(run).audit_events.map((e: OwnAuditEvent) => e.id), users.slice(1, 4).map((e) => e.id));
    const one = await runWum(['audit', 'list', '--json', '--target-id', users[0]!.target_id], env);
    assert.deepEqual(json<OwnAuditEventPage>(one).audit_events.map((e: OwnAuditEvent) => e.id), [users[0]!.id]);
    for (const bad of ['yesterday', '2025-01-01', '2025-01-01T00:00:00']) {
      const refused = await runWum(['audit', 'list', '--since', bad], env);
      assert.equal(refused.code, 2, `${bad}: ${refused.stderr}`);
      assert.match(refused.stderr, /RFC 3339/);
    }
  });

  test('wum audit export streams JSON Lines equal to the listing, and CSV with formula-like cells quoted', TIMEOUT, async () => {
    const all = await everything();
    const jsonl = await runWum(['audit', 'export', '--format', 'jsonl'], env);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    assert.deepEqual(jsonl.stdout.trim().split('\n').map((line) => json<OwnAuditEvent>(line)), all);
    const since = all[2]!.occurred_at;
    const narrowed = await runWum(['audit', 'export', '--since', since, '--action', 'user.created'], env);
    assert.deepEqual(
      narrowed.stdout.trim().split('\n').map((line) => json<OwnAuditEvent>(line).id),
      all.filter((e) => e.occurred_at >= since && e.action === 'user.created').map((e) => e.id),
    );
    const csv = await runWum(['audit', 'export', '--format', 'csv'], env);
    assert.equal(csv.code, 0, csv.stderr);
    const rows: Record<string, string>[] = parse(csv.stdout, { columns: true });
    assert.deepEqual(rows.map((r) => Number(r.id)), all.map((e) => e.id));
    const formula = rows.find((r) => r.target_id!.includes('formula@'))!;
    assert.equal(formula.target_id, "'=formula@example.com");
    assert.equal(json<{ first_name: string }>(formula.after!).first_name, 'Ada, "quoted"');
    assert.equal((await runWum(['audit', 'export', '--format', 'xml'], env)).code, 2);
  });

  test('wum audit tail prints the last events, follows new ones oldest first, and stops on SIGINT with 0', TIMEOUT, async () => {
    const before = await everything();
    const tail = spawn(process.execPath, ['bin/wum.js', 'audit', 'tail', '--json', '--last', '3', '--interval', '100'], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
    });
    let out = '';
    let err = '';
    tail.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    tail.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const lines = () => out.split('\n').filter(Boolean).map((line) => JSON.parse(line) as OwnAuditEvent);
    const waitFor = async (count: number) => {
      const deadline = Date.now() + 30_000;
      while (lines().length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(lines().length >= count, `${lines().length} lines of ${count}: ${err}`);
    };
    const exited = once(tail, 'exit');
    try {
      await waitFor(3);
      for (let i = 0; i < 3; i += 1) await addUser(`tailed${i}@example.com`);
      await waitFor(6);
      tail.kill('SIGINT');
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0, err);
    } finally {
      if (tail.exitCode === null) tail.kill();
    }
    const after = await everything();
    const ids = lines().map((e) => e.id);
    assert.deepEqual(ids, [...before.slice(-3), ...after.slice(before.length)].map((e) => e.id), 'the last 3, then the new ones, each once, oldest first');
    assert.deepEqual(lines().slice(3).map((e) => e.target_id), ['tailed0@example.com', 'tailed1@example.com', 'tailed2@example.com']);

    // From --since, without following: every event since then, then the process ends.
    const since = after[2]!.occurred_at;
    const fromSince = await runWum(['audit', 'tail', '--since', since, '--no-follow'], env);
    assert.equal(fromSince.code, 0, fromSince.stderr);
    const printed = fromSince.stdout.trim().split('\n');
    assert.equal(printed.length, after.filter((e) => e.occurred_at >= since).length);
    assert.match(printed[0]!, new RegExp(`^${after[2]!.id}  ${since}  `));
  });
});
