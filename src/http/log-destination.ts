import { closeSync, openSync, writeSync } from 'node:fs';

/** Errors that mean the standard output is gone or cannot take the lines now. */
const GONE = new Set(['EPIPE', 'EIO', 'EBADF', 'ENXIO', 'ECONNRESET', 'EAGAIN', 'EWOULDBLOCK']);
/** Lines gathered past this many characters are written at once, not at the end of the turn. */
const FLUSH_AT_CHARACTERS = 64 * 1024;
/** How soon the end of a line a full pipe cut is offered again. */
const RETRY_MS = 10;

/** Every destination holding lines not written yet: a process that exits writes them first. */
const unflushed = new Set<() => void>();
let flushOnExit = false;

/** Holds `flush` until it runs, and makes the process run it on `exit` should that come first. */
function holdUntilFlushed(flush: () => void): void {
  unflushed.add(flush);
  if (flushOnExit) return;
  flushOnExit = true;
  process.on('exit', () => {
    for (const pending of [...unflushed]) pending();
  });
}

/**
 * The destination of the server log: the lines of one turn of the event loop gathered and
 * written to standard output synchronously, in one write, when the turn ends (or once they pass
 * 64 KiB, and when the process exits); once that output is gone (its terminal closed: `EIO`;
 * its reader exited: `EPIPE`), the rest dropped instead of retried. One write per request cost
 * a system call per line, the largest cost of a cheap request after the response's own write
 * (docs/performance.md, "The fixed cost of a request"). pino's default destination retries a
 * write that fails with `EAGAIN` in a loop that holds the event loop, and re-emits other errors
 * as uncaught exceptions, each of which logs again: a server whose terminal closed then spun at
 * full CPU and never reached its SIGTERM handler. Lines that cannot be written now (`EAGAIN`)
 * are dropped too: a log line is not worth a blocked server; the part of them a full pipe did
 * not take is kept for the next write, so that no line reaches the reader cut. Lines of a
 * process killed by SIGKILL within the turn are lost. See docs/security.md.
 */
export function resilientStdout(fd = 1): { write(line: string): void } {
  let gone = false;
  let pending = '';
  /** What a full pipe did not take of the last write: the end of a line its reader has the start of. */
  let rest: Buffer | undefined;
  let scheduled = false;

  /** Writes `data`; answers what was not written of it (all of it on `EAGAIN`), undefined when nothing is left. */
  const writeOut = (data: Buffer): Buffer | undefined => {
    try {
      const written = writeSync(fd, data);
      return written < data.length ? data.subarray(written) : undefined;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (!GONE.has(code)) throw error;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return data;
      gone = true;
      detachStdio();
      return undefined;
    }
  };

  const flush = () => {
    scheduled = false;
    unflushed.delete(flush);
    if (rest && !gone) rest = writeOut(rest);
    if (rest) {
      // The cut line is finished first, when the reader takes it; lines since are dropped.
      pending = '';
      schedule(RETRY_MS);
      return;
    }
    if (gone || pending === '') return;
    const data = Buffer.from(pending);
    pending = '';
    const left = writeOut(data);
    // Nothing taken (`EAGAIN`): the lines are dropped; part taken: the rest follows.
    if (left && left !== data) {
      rest = left;
      schedule(RETRY_MS);
    }
  };

  /** Runs `flush` at the end of this turn of the event loop (or after `delayMs`), once however many lines come. */
  function schedule(delayMs = 0): void {
    if (scheduled) return;
    scheduled = true;
    holdUntilFlushed(flush);
    if (delayMs === 0) setImmediate(flush);
    else setTimeout(flush, delayMs).unref();
  }

  return {
    write(line: string) {
      if (gone) return;
      pending += line;
      if (pending.length >= FLUSH_AT_CHARACTERS && !rest) flush();
      else schedule();
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
