import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DEMO_KEY_FILE, handOverDemoKey } from '../../src/server/demo-key.ts';
import { BACKEND, testConfig } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Where the demo key goes (docs/security.md, "The demo key"): to a terminal, printed; otherwise
 * into a file of the data directory that only its owner can read, with its path (never the key)
 * in the log. test/e2e/server.test.ts checks the piped case on a real first start.
 */
describe(`the demo key's hand-over [${BACKEND}]`, () => {
  const dirs: string[] = [];
  const newDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'wum-demo-key-'));
    dirs.push(dir);
    return dir;
  };
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** A standard output that records what is written to it; `isTTY` as given. */
  function fakeStdout(isTTY: boolean) {
    const written: string[] = [];
    const stream = { isTTY, write: (chunk: string) => written.push(chunk) > 0 } as unknown as NodeJS.WriteStream;
    return { stream, written };
  }
  function recordingLog() {
    const lines: string[] = [];
    return { lines, log: { info: (fields: object, message: string) => void lines.push(JSON.stringify({ ...fields, message })) } };
  }

  const KEY = 'wum_demo-key-for-the-test';

  test('on a terminal: the banner is printed, with the export and curl lines; no file, nothing logged', () => {
    const dir = newDir();
    const stdout = fakeStdout(true);
    const { lines, log } = recordingLog();
    assert.equal(handOverDemoKey(testConfig({ PORT: '3000' }), KEY, { stdout: stdout.stream, dataDir: dir, log }), undefined);
    const banner = stdout.written.join('');
    assert.match(banner, new RegExp(`^\\s*export WUM_API_KEY=${KEY}$`, 'm'));
    assert.match(banner, new RegExp(`curl -H "X-Api-Key: ${KEY}" http://demo\\.localhost:3000/api/external/v2/users`));
    assert.equal(existsSync(join(dir, DEMO_KEY_FILE)), false);
    assert.deepEqual(lines, []);
  });

  test('not a terminal: nothing on stdout; the key in a 0600 file (even one that existed with a looser mode), its path logged, not the key', () => {
    const dir = newDir();
    const file = join(dir, DEMO_KEY_FILE);
    writeFileSync(file, 'an old file anyone could read\n', { mode: 0o644 });
    const stdout = fakeStdout(false);
    const { lines, log } = recordingLog();
    assert.equal(handOverDemoKey(testConfig(), KEY, { stdout: stdout.stream, dataDir: dir, log }), file);
    assert.deepEqual(stdout.written, []);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const content = readFileSync(file, 'utf8');
    assert.match(content, new RegExp(`^\\s*export WUM_API_KEY=${KEY}$`, 'm'));
    assert.doesNotMatch(content, /anyone could read/);
    assert.equal(lines.length, 1);
    assert.equal(json<{ file: string }>(lines[0]!).file, file);
    assert.ok(!lines[0]!.includes(KEY), 'the log holds the path, not the key');
  });
});
