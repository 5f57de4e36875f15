import { spawnSync } from 'node:child_process';

function onPath(binary: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Makes sure `binary` is on PATH, installing the Debian package `pkg` with apt-get when it is
 * missing and this process runs as root (as CI does; `.ci/run` installs them up front too).
 * @throws Error naming the package when the program is still missing.
 */
export function ensureDebianProgram(binary: string, pkg: string): void {
  if (onPath(binary)) return;
  if (process.getuid?.() === 0) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () => spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: 'ignore', env, timeout: 300_000 });
    if (install().status !== 0) {
      spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env, timeout: 300_000 });
      install();
    }
  }
  if (!onPath(binary)) throw new Error(`${binary} is needed by this test: install the Debian package ${pkg} (apt-get install ${pkg})`);
}

/**
 * Path of Debian's Chromium headless shell (package chromium-headless-shell), installed first
 * when missing: the same Blink and V8 as the `chromium` package without the browser's user
 * interface, and the lighter of the two to start (docs/performance.md, "npm test").
 * @throws Error naming the package when it cannot be installed.
 */
export function chromiumHeadlessShell(): string {
  ensureDebianProgram('chromium-headless-shell', 'chromium-headless-shell');
  return '/usr/bin/chromium-headless-shell';
}
