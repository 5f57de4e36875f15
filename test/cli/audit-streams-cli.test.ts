// one backend: postgres: the CLI against a server process, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditStream, AuditStreamWithSecret } from 'wum/sdk';
import { json } from '../helpers/json.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { startStreamsServer, type StreamsServer } from '../helpers/streams-server.ts';
import { runWum } from '../../harness/run-wum.ts';

const TIMEOUT = { timeout: 180_000 };

/**
 * `wum audit streams …` (the workspace's) and `wum admin audit-streams …` (the operator's)
 * against a server process whose worker sends to a JSON Lines receiver on 127.0.0.1. Source:
 * docs/api.md, "Audit streams"; README, "CLI".
 */
describe(`wum audit streams against a server process [${BACKEND}]`, () => {
  let running: StreamsServer;
  let dir: string;

  const streams = (...args: string[]) => runWum(['audit', 'streams', ...args], running.env);

  before(async () => {
    running = await startStreamsServer('siem');
    dir = mkdtempSync(join(tmpdir(), 'wum-streams-cli-'));
  }, TIMEOUT);
  after(async () => {
    await running?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('create prints the https secret once; list shows health; pause, resume, get, test, replay, delete', TIMEOUT, async () => {
    const created = await streams('create', 'SIEM', '--https-url', running.receiver.url, '--action', 'user.created');
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /signing secret is shown only this once:\n\n {2}whsec_\S+\n/);
    const id = /audit stream (\S+) \(SIEM\)/.exec(created.stdout)![1]!;

    await running.wum.users.add({ email: 'ada@example.com', role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const listed = json<AuditStream[]>(await streams('list', '--json'));
      if (listed[0]?.lag_rows === 0 && listed[0].last_delivered_at !== null) break;
      assert.ok(Date.now() < deadline, `still lagging: ${JSON.stringify(listed)}`);
      await sleep(200);
    }
    assert.ok(running.receiver.rows().some((r) => r.action === 'user.created' && r.target_id === 'ada@example.com'));
    const table = await streams('list');
    assert.equal(table.code, 0, table.stderr);
    for (const column of ['status', 'lag_rows', 'lag_seconds', 'last_delivered_at', 'last_error']) assert.match(table.stdout, new RegExp(column));
    assert.match(table.stdout, new RegExp(`${id}.*SIEM.*https ${running.receiver.url.replace(/[.]/g, '\\.')}.*active +│ 0 `));

    const paused = await streams('pause', id);
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /status +│ paused/);
    assert.match(paused.stdout, /Paused: nothing is sent/);
    assert.match((await streams('list')).stdout, /paused[\s\S]*Paused: nothing is sent/);
    const resumed = await streams('resume', id, '--json');
    assert.equal(json<AuditStream>(resumed).status, 'active');
    const got = await streams('get', id);
    assert.match(got.stdout, /actions +│ user\.created/);
    assert.doesNotMatch(got.stdout, /whsec_/, 'the secret is never shown again');

    const tested = await streams('test', id);
    assert.equal(tested.code, 0, tested.stderr);
    assert.match(tested.stdout, /accepted the test row/);
    running.receiver.down(true);
    const refused = await streams('test', id);
    running.receiver.down(false);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refused the test row: HTTP 503/);

    const replayed = await streams('replay', id, '--from', '2020-01-01T00:00:00Z', '--json');
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.equal(json<'replayOwnAuditStream'>(replayed).audit_stream.id, id);
    assert.equal((await streams('replay', id, '--from', 'yesterday')).code, 2);
    assert.equal((await streams('replay', id)).code, 2, '--from is required');

    const deleted = await streams('delete', id);
    assert.equal(deleted.code, 0, deleted.stderr);
    const gone = await streams('get', id);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /audit_stream_not_found/);
  });

  test('create takes each destination type by its flags, or --destination JSON; a wrong set of flags is a usage error', TIMEOUT, async () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const made = [
      [['--splunk-url', 'http://127.0.0.1:9'], { WUM_SPLUNK_TOKEN: 'hec-token' }, { type: 'splunk_hec', url: 'http://127.0.0.1:9', token_set: true }],
      [
        ['--s3-bucket', 'audit', '--s3-region', 'eu-west-1', '--s3-endpoint', 'http://127.0.0.1:9', '--s3-prefix', 'wum/', '--s3-access-key-id', 'AKID'],
        { WUM_S3_SECRET_ACCESS_KEY: 'shh' },
        { type: 's3', endpoint: 'http://127.0.0.1:9', region: 'eu-west-1', bucket: 'audit', prefix: 'wum/', access_key_id: 'AKID', secret_access_key_set: true },
      ],
      [['--syslog-host', '127.0.0.1', '--syslog-port', '6514', '--syslog-ca-file', ca], {}, { type: 'syslog', host: '127.0.0.1', port: 6514, ca_certificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' }],
      [['--destination', `{"type":"https","url":"${running.receiver.url}"}`], {}, { type: 'https', url: running.receiver.url }],
    ] as const;
    for (const [flags, secrets, destination] of made) {
      const run = await runWum(['audit', 'streams', 'create', 'one', '--format', 'ocsf', '--json', ...flags], { ...running.env, ...secrets });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(json<AuditStream>(run).destination, destination);
      assert.equal(json<AuditStream>(run).format, 'ocsf');
      assert.equal(JSON.stringify(json<AuditStream>(run)).includes('shh') || JSON.stringify(json<AuditStream>(run)).includes('hec-token'), false, 'no credential answered');
      assert.equal((await streams('delete', json<AuditStream>(run).id)).code, 0);
    }

    const usage: Array<[string[], RegExp]> = [
      [[], /give one destination/],
      [['--https-url', running.receiver.url, '--syslog-host', '127.0.0.1'], /give one destination.*got https, syslog/],
      [['--https-url', running.receiver.url, '--s3-region', 'eu-west-1'], /--s3-region is for s3 destinations/],
      [['--s3-region', 'eu-west-1'], /give one destination/],
      [['--splunk-url', 'http://127.0.0.1:9'], /needs --splunk-token/],
      [['--s3-bucket', 'b', '--s3-region', 'r', '--s3-access-key-id', 'k'], /needs --s3-secret-access-key/],
      [['--syslog-host', '127.0.0.1'], /needs --syslog-port/],
      [['--syslog-host', '127.0.0.1', '--syslog-port', '70000'], /Not a port/],
      [['--syslog-host', '127.0.0.1', '--syslog-port', '6514', '--syslog-ca-file', join(dir, 'missing.pem')], /cannot read --syslog-ca-file/],
      [['--destination', '{nope'], /--destination is not JSON/],
      [['--destination', '{}', '--https-url', running.receiver.url], /cannot be combined/],
      [['--https-url', running.receiver.url, '--format', 'xml'], /Allowed choices are json, ocsf/],
    ];
    for (const [flags, message] of usage) {
      const run = await streams('create', 'bad', ...flags);
      assert.equal(run.code, 2, `${flags.join(' ')}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, message);
    }
    // What the API refuses is exit 1 with its code.
    const refused = await streams('create', 'bad', '--https-url', 'http://10.0.0.1/audit');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /validation_failed[\s\S]*destination\.url/);
    assert.deepEqual(await running.wum.auditStreams.list(), []);
  });

  test('wum admin audit-streams: a stream of every workspace or of one, with the workspace column', TIMEOUT, async () => {
    const all = await runWum(['admin', 'audit-streams', 'create', 'Everything', '--https-url', running.receiver.url, '--json'], running.adminEnv);
    assert.equal(all.code, 0, all.stderr);
    assert.equal(json<AuditStreamWithSecret>(all).workspace, null);
    assert.match(json<AuditStreamWithSecret>(all).secret ?? '', /^whsec_/);
    const one = await runWum(['admin', 'audit-streams', 'create', 'Siem only', '--workspace', 'siem', '--https-url', running.receiver.url], running.adminEnv);
    assert.equal(one.code, 0, one.stderr);
    const listed = await runWum(['admin', 'audit-streams', 'list'], running.adminEnv);
    assert.match(listed.stdout, /workspace/);
    assert.match(listed.stdout, /Everything +│ \(all\)/);
    assert.match(listed.stdout, /Siem only +│ siem/);
    assert.deepEqual((await running.wum.auditStreams.list()).map((s) => s.name), ['Siem only']);
    const paused = await runWum(['admin', 'audit-streams', 'pause', json<AuditStreamWithSecret>(all).id, '--json'], running.adminEnv);
    assert.equal(json<AuditStream>(paused).status, 'paused');
    for (const s of await running.admin.auditStreams.list()) assert.equal((await runWum(['admin', 'audit-streams', 'delete', s.id], running.adminEnv)).code, 0);
    assert.match((await runWum(['admin', 'audit-streams', 'list'], running.adminEnv)).stdout, /No audit streams\./);
  });
});
