import { execFile } from 'node:child_process';
import { REPO_ROOT } from './server-process.ts';

/** How one `wum` run ended. */
export interface WumRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed as JSON. */
  json(): any;
}

const WUM_ENV = ['WUM_URL', 'WUM_API_KEY', 'WUM_ADMIN_URL', 'WUM_ADMIN_TOKEN'];

/**
 * Runs `bin/wum.js args…` as a user would (a new node process, stdout not a terminal) with the
 * inherited environment minus `WUM_*`, plus `env`.
 */
export function runWum(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<WumRun> {
  const inherited = { ...process.env };
  for (const name of WUM_ENV) delete inherited[name];
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['bin/wum.js', ...args],
      { cwd: REPO_ROOT, env: { ...inherited, ...env }, timeout: timeoutMs, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        if (error && code === -1) return reject(new Error(`wum ${args.join(' ')} did not finish: ${error.message}\n${stderr}`));
        resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) });
      },
    );
  });
}
