import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { resilientStdout } from '../../src/http/log-destination.ts';
import { BACKEND } from '../helpers/test-context.ts';

const DESTINATION_MODULE = fileURLToPath(new URL('../../src/http/log-destination.ts', import.meta.url));

/*
 * The server log's destination (src/http/log-destination.ts) writes the lines of a turn of the
 * event loop together: every line arrives, whole and in order, by the end of the turn, and a
 * process that exits within the turn still writes its last lines.
 */
describe(`the server log's destination [${BACKEND}]`, () => {
  test('the lines of a turn arrive whole and in order once the turn ends', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'log-destination-'));
    const fd = openSync(join(dir, 'log'), 'w');
    try {
      const log = resilientStdout(fd);
      const lines = Array.from({ length: 500 }, (_, i) => `${JSON.stringify({ msg: 'request completed', n: i, note: 'é'.repeat(200) })}\n`);
      for (const line of lines) log.write(line);
      await nextTurn();
      assert.equal(readFileSync(join(dir, 'log'), 'utf8'), lines.join(''));
      log.write('{"msg":"later"}\n');
      await nextTurn();
      assert.equal(readFileSync(join(dir, 'log'), 'utf8'), `${lines.join('')}{"msg":"later"}\n`);
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a process that exits right after logging still writes the line', () => {
    const script = `import { resilientStdout } from ${JSON.stringify(DESTINATION_MODULE)};
      const log = resilientStdout();
      log.write('{"msg":"first"}\\n');
      log.write('{"msg":"last words"}\\n');
      process.exit(3);`;
    let stdout = '';
    try {
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    } catch (error) {
      const failed = error as { status: number; stdout: string };
      assert.equal(failed.status, 3);
      stdout = failed.stdout;
    }
    assert.equal(stdout, '{"msg":"first"}\n{"msg":"last words"}\n');
  });
});
