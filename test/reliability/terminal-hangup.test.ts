import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { SERVER_BUNDLE } from '../../scripts/build-bundles.ts';
import { freePort } from '../../harness/free-port.ts';
import { spawnServer } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { LISTENING, START_TIMEOUT_MS, serverStorage, sleep, type ServerStorage } from './support.ts';

/** CPU time of process `pid` so far, in seconds (utime + stime of /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * The process under `root` (a descendant, found through each process's parent in /proc) whose
 * command line names `script`: the server behind `script` and its shell. On a terminal the log
 * is pino-pretty's readable lines, which do not carry the pid the JSON lines do.
 */
function descendantRunning(root: number, script: string): number | undefined {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      parents.set(Number(entry), Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const under = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === root) return true;
    return false;
  };
  return [...parents.keys()].find((pid) => {
    if (!under(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(script);
    } catch {
      return false;
    }
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie has exited; it only waits for its parent to read its status.
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

async function exitWithin(pid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(pid)) return true;
    await sleep(100);
  }
  return !alive(pid);
}

describe(`a server whose terminal goes away [${BACKEND}]`, () => {
  let storage: ServerStorage | undefined;
  after(() => storage?.remove());

  test('closing the terminal neither spins nor blocks: the server is idle or gone, and SIGTERM ends it within its shutdown timeout', { timeout: 120_000 }, async () => {
    storage = await serverStorage('wum_hangup');
    const port = await freePort();
    // `script` runs the server on a pseudo-terminal, as a shell in a terminal window would.
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(SERVER_BUNDLE)}`;
    const terminal = spawnServer('script', ['-qfec', command, '/dev/null'], { ...storage.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '3000' });
    let pid: number | undefined;
    try {
      await terminal.waitForOutput(LISTENING, START_TIMEOUT_MS);
      pid = descendantRunning(terminal.child.pid!, SERVER_BUNDLE);
      assert.ok(pid, terminal.stdout());
      // Close the terminal: `script` holds its master side; killed, the server's side hangs up.
      process.kill(terminal.child.pid!, 'SIGKILL');
      await sleep(1500);
      if (alive(pid)) {
        const before = cpuSeconds(pid);
        await sleep(2000);
        const share = (cpuSeconds(pid) - before) / 2;
        assert.ok(share < 0.2, `the server spins at ${Math.round(share * 100)} % CPU after its terminal closed`);
        process.kill(pid, 'SIGTERM');
        assert.ok(await exitWithin(pid, 3000 + 2000), 'SIGTERM ended the server within its shutdown timeout');
      }
      assert.equal(alive(pid), false);
    } finally {
      if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
      terminal.kill();
    }
  });
});
