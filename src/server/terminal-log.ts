import pretty from 'pino-pretty';

/**
 * Readable log lines for a person: when stdout is a terminal, a pino-pretty stream (one
 * coloured line per entry, local time); otherwise `undefined`, and the logger writes JSON lines
 * for machines (log shippers, `jq`). pino-pretty runs in this thread, not as a pino transport,
 * so it works from the bundle `npm start` runs (scripts/build-bundles.ts).
 */
export function terminalLogStream(stdout: NodeJS.WriteStream = process.stdout): NodeJS.WritableStream | undefined {
  if (!stdout.isTTY) return undefined;
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: stdout });
}
