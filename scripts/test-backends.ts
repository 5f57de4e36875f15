/*
 * Which backends `npm test` runs a test file on (docs/architecture.md, "Tests"). Every file
 * that opens a database runs on both, embedded PGlite and PostgreSQL, unless its header has a
 * line `// one backend: pglite` or `// one backend: postgres`: a file whose subject is a
 * process or a program rather than the store (the web console in Chromium, the CLI, the SDK,
 * replicas, failover), which reaches the store only through the HTTP API that the files run on
 * both backends already cover, or a file about one backend's own machinery.
 */
import { readFileSync } from 'node:fs';

/** A backend of the test suites, as `WUM_TEST_BACKEND` names it (harness/backend.ts). */
export type TestBackend = 'pglite' | 'postgres';

const MARKER = /^\/\/ one backend: (pglite|postgres)\b/m;

/**
 * The one backend the test file at `path` runs on (read from its `// one backend: …` line),
 * or undefined when it runs on both.
 */
export function oneBackendOf(path: string): TestBackend | undefined {
  return MARKER.exec(readFileSync(path, 'utf8'))?.[1] as TestBackend | undefined;
}
