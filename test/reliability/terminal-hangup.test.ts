import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { SERVER_BUNDLE } from '../../scripts/build-bundles.ts';
import { freePort } from '../../harness/postgres-cluster.ts';
import { listeningPid, spawnServer } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { LISTENING, START_TIMEOUT_MS, serverStorage, sleep, type ServerStorage } from './support.ts';

/** CPU time of process `pid` so far, in seconds (utime + stime of /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
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
      pid = listeningPid(terminal.stdout().replace(/\r/g, ''));
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
