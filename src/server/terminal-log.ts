import pretty from 'pino-pretty';

/** The fields of a request's line (src/http/request-log.ts) that its message shows on a terminal. */
const REQUEST_FIELDS = ['method', 'route', 'statusCode', 'responseTime'] as const;

/**
 * A log entry's message on a terminal: a request's line reads `GET /api/external/v2/users 200 3.1 ms`,
 * any other its own message.
 */
export function terminalMessage(log: Record<string, unknown>, messageKey: string): string {
  if (typeof log.route === 'string' && typeof log.statusCode === 'number') {
    return `${String(log.method)} ${log.route} ${log.statusCode} ${String(log.responseTime)} ms`;
  }
  const message = log[messageKey];
  return typeof message === 'string' ? message : '';
}

/**
 * Readable log lines for a person: when stdout is a terminal, a pino-pretty stream: one line
 * per entry (local time, level, message, then the entry's other fields as JSON on the same
 * line; an error's stack below it), a request's line as {@link terminalMessage} with its request
 * id; otherwise `undefined`, and the logger writes JSON lines for machines (log shippers, `jq`).
 * pino-pretty runs in this thread, not as a pino transport, so it works from the bundle
 * `npm start` runs (scripts/build-bundles.ts), and takes a function as its message format.
 */
export function terminalLogStream(stdout: NodeJS.WriteStream = process.stdout): NodeJS.WritableStream | undefined {
  if (!stdout.isTTY) return undefined;
  return pretty({
    colorize: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: ['pid', 'hostname', ...REQUEST_FIELDS].join(','),
    singleLine: true,
    messageFormat: (log, messageKey) => terminalMessage(log, messageKey),
    destination: stdout,
  });
}
