import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config/load-config.ts';
import { DEMO_SUBDOMAIN } from '../core/demo.ts';
import { EXTERNAL_PREFIX } from '../http/plugins/tenant.ts';

/** The file, in the embedded store's data directory, that holds the demo key when stdout is not a terminal. */
export const DEMO_KEY_FILE = 'demo-api-key.txt';

/** The few logger methods used (pino's shape: fields first, then the message). */
export interface DemoKeyLog {
  info(fields: object, message: string): void;
}

/** The banner that hands a newcomer the demo key: the lines to paste. */
function demoBanner(config: Config, apiKey: string): string {
  // The workspace is named by the Host header, so the URL uses BASE_DOMAIN whatever HOST binds.
  const base = `http://${DEMO_SUBDOMAIN}.${config.baseDomain}:${config.port}${EXTERNAL_PREFIX}`;
  return [
    '',
    `Created the demo workspace "${DEMO_SUBDOMAIN}". Its API key is shown only this once:`,
    '',
    `  export WUM_API_KEY=${apiKey}`,
    `  curl -H "X-Api-Key: ${apiKey}" ${base}/users`,
    '',
  ].join('\n');
}

/**
 * Hands over the demo workspace's key once (docs/security.md, "The demo key"): on a terminal,
 * the banner is printed there; otherwise standard output is a log stream (a file, a shipper, a
 * container's log), where a key would be kept and copied, so the banner goes to neither stdout
 * nor stderr but to `DEMO_KEY_FILE` in `dataDir`, created readable and writable by the owner
 * only (mode 0600, also when it existed), and only that file's path is logged.
 *
 * @param stdout - the process's standard output (its `isTTY` decides).
 * @param dataDir - the embedded store's data directory.
 * @returns the file written, or undefined when the banner went to the terminal.
 * @throws the file system's error when the file cannot be written.
 */
export function handOverDemoKey(
  config: Config,
  apiKey: string,
  options: { readonly stdout: NodeJS.WriteStream; readonly dataDir: string; readonly log: DemoKeyLog },
): string | undefined {
  const banner = `${demoBanner(config, apiKey)}\n`;
  if (options.stdout.isTTY) {
    options.stdout.write(banner);
    return undefined;
  }
  const file = resolve(options.dataDir, DEMO_KEY_FILE);
  const fd = openSync(file, 'w', 0o600);
  try {
    // The mode of open() applies only to a new file (and under the umask).
    fchmodSync(fd, 0o600);
    writeSync(fd, banner);
  } finally {
    closeSync(fd);
  }
  options.log.info({ file }, `Created the demo workspace "${DEMO_SUBDOMAIN}"; its API key is in ${file} (readable by this user only), not in the log`);
  return file;
}
