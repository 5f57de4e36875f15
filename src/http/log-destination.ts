import { closeSync, openSync, writeSync } from 'node:fs';

/** Errors that mean the standard output is gone or cannot take the line now. */
const GONE = new Set(['EPIPE', 'EIO', 'EBADF', 'ENXIO', 'ECONNRESET', 'EAGAIN', 'EWOULDBLOCK']);

/**
 * The destination of the server log: each line written synchronously to standard output,
 * and, once that output is gone (its terminal closed: `EIO`; its reader exited: `EPIPE`), the
 * rest dropped instead of retried. pino's default destination retries a write that fails
 * with `EAGAIN` in a loop that holds the event loop, and re-emits other errors as uncaught
 * exceptions, each of which logs again: a server whose terminal closed then spun at full CPU
 * and never reached its SIGTERM handler. A line that cannot be written now (`EAGAIN`) is
 * dropped too: a log line is not worth a blocked server. See docs/security.md.
 */
export function resilientStdout(fd = 1): { write(line: string): void } {
  let gone = false;
  return {
    write(line: string) {
      if (gone) return;
      try {
        writeSync(fd, line);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? '';
        if (!GONE.has(code)) throw error;
        if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') {
          gone = true;
          detachStdio();
        }
      }
    },
  };
}

let detached = false;

/**
 * Points standard input, output and error at `/dev/null` once their terminal is gone. Node
 * restores the terminal's settings of its standard streams when the process exits; on a
 * terminal that hung up that fails (`EIO`) and Node aborts inside its exit handlers, where the
 * process then hangs, spinning, deaf to SIGTERM. Node skips a standard stream that was
 * reopened on another file, so reopening them makes the exit clean. Each descriptor is
 * closed and `/dev/null` opened right away, which takes the lowest free number: the same one.
 */
export function detachStdio(): void {
  if (detached) return;
  detached = true;
  for (const fd of [0, 1, 2]) {
    try {
      closeSync(fd);
    } catch {
      // Already closed: nothing to restore at exit either.
    }
    const opened = openSync('/dev/null', fd === 0 ? 'r' : 'w');
    // Another descriptor was free below it (fd was closed before): keep /dev/null there too.
    if (opened !== fd) closeSync(opened);
  }
}

/**
 * Keeps a write error of `process.stdout`/`process.stderr` (a closed terminal) from becoming
 * an uncaught exception, which would start a shutdown that logs, fails and throws again.
 */
export function ignoreStdioErrors(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
}

/**
 * When the terminal hangs up (SIGHUP: the window closed, the SSH session dropped), its
 * streams are detached ({@link detachStdio}) before the graceful shutdown that SIGHUP starts,
 * so that shutdown ends the process instead of hanging in Node's exit. Register it before the
 * shutdown handler: listeners run in order.
 */
export function detachStdioOnHangup(): void {
  process.on('SIGHUP', detachStdio);
}
