/*
 * What the "build when stale" steps share (the web console, scripts/build-console.ts, and the
 * bundled server and CLI, scripts/build-bundles.ts): a fingerprint of a build's inputs, recorded
 * beside its output, and a lock directory so that concurrent callers (test files, a second
 * `npm start`) wait for one build instead of building twice.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is in scripts/). */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A lock older than this was left by a build that died: taken over. */
const STALE_LOCK_MS = 5 * 60_000;

/** Every file under `dir` (absolute paths), sorted. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile())
    .sort();
}

/** A hash (hex SHA-256) of `files`' paths relative to {@link ROOT} and their contents. */
export function fingerprint(files: readonly string[]): string {
  const hash = createHash('sha256');
  for (const file of files) hash.update(file.slice(ROOT.length)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

/** A build's record of the inputs it was made from: a file holding their fingerprint. */
export interface BuildStamp {
  /** Path of the stamp file, inside the build's output. */
  readonly file: string;
  /** The inputs' files (absolute paths), read afresh on every call. */
  readonly inputs: () => string[];
}

/** True when the build recorded in `stamp` was made from the current inputs (and `outputs` all exist). */
export function isCurrent(stamp: BuildStamp, outputs: readonly string[]): boolean {
  return outputs.every((f) => existsSync(f)) && existsSync(stamp.file) && readFileSync(stamp.file, 'utf8') === fingerprint(stamp.inputs());
}

/** Records that the build now in place was made from the inputs fingerprinted as `print`. */
export function writeStamp(stamp: BuildStamp, print: string): void {
  writeFileSync(stamp.file, print);
}

/** Runs `work` while holding the lock directory `lock` (created and removed here); waits for another holder. */
export async function withLock<T>(lock: string, work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? 0) > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
