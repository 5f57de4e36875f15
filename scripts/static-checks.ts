/*
 * The checks `npm test` runs beside the suites: the type checker (server and console), ESLint
 * with no finding allowed (eslint.config.js), and knip's dependency check (knip.json: a package
 * in package.json that nothing imports, or one imported without being listed, fails it;
 * docs/architecture.md, "Dependencies"). Each runs as the package's own binary.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { readFileSync } from 'node:fs';

/** `npm run lint`'s command line, so that `npm test` lints exactly as it does. */
function lintCommand(): string[] {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { lint: string } };
  return manifest.scripts.lint.split(' ');
}

/** One check's command line (binaries of node_modules/.bin) and what it is called in the summary. */
const CHECKS: readonly { name: string; command: readonly string[] }[] = [
  { name: 'tsc', command: ['tsc', '--noEmit'] },
  { name: 'tsc (console)', command: ['tsc', '--noEmit', '-p', 'console'] },
  { name: 'eslint', command: lintCommand() },
  { name: 'knip', command: ['knip', '--no-progress'] },
];

/** What the checks found: how many ran and passed, and the output of the failed ones. */
export interface StaticCheckResult {
  checks: number;
  passed: number;
  /** `== <name> ==` followed by the check's own output, for each failed check. */
  report: string;
}

function run(command: readonly string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    const [bin, ...args] = command as [string, ...string[]];
    const child = spawn(`node_modules/.bin/${bin}`, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    // Below the test suites: on a busy machine the checks take the CPU the tests leave idle
    // (a test waiting for a process, a socket or a timer) rather than slow the tests down.
    if (child.pid !== undefined) setPriority(child.pid, 10);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => resolve({ ok: false, output: error.message }));
    child.once('close', (code) => resolve({ ok: code === 0, output }));
  });
}

/** Runs the type checker and ESLint one after the other (each is heavy); never throws. */
export async function runStaticChecks(): Promise<StaticCheckResult> {
  let passed = 0;
  let report = '';
  for (const check of CHECKS) {
    const { ok, output } = await run(check.command);
    if (ok) passed += 1;
    else report += `\n== ${check.name} ==\n${output}`;
  }
  return { checks: CHECKS.length, passed, report };
}
