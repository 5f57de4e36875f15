/*
 * `npm run lint:openapi`: lints the OpenAPI document the service serves (built in-process, see
 * openapi-document.ts) with Redocly CLI and the rules of redocly.yaml: the recommended ruleset
 * with warnings as errors, plus "every operation, parameter and response is described and has
 * an example". Exits with Redocly's status: 0 only when nothing is reported.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildOpenApiDocument } from './openapi-document.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REDOCLY = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');

/** What Redocly said about a document. */
export interface LintResult {
  /** Redocly's exit status: 0 when no rule reported anything. */
  readonly status: number;
  /** Its report (stdout and stderr). */
  readonly output: string;
}

/**
 * Lints `document` with Redocly CLI and redocly.yaml; `rules` overrides some of its rules (by
 * name, e.g. `off`), for a document that follows another convention on purpose.
 */
export function lintOpenApiDocument(document: unknown, options: { inherit?: boolean; rules?: Record<string, string> } = {}): LintResult {
  const dir = mkdtempSync(join(tmpdir(), 'wum-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document, null, 2));
    let config = join(ROOT, 'redocly.yaml');
    if (options.rules) {
      // A configuration of its own that extends redocly.yaml (JSON is YAML).
      config = join(dir, 'redocly.yaml');
      writeFileSync(config, JSON.stringify({ extends: [join(ROOT, 'redocly.yaml')], rules: options.rules }));
    }
    const result = spawnSync(
      process.execPath,
      [REDOCLY, 'lint', file, '--config', config, '--format', 'codeframe'],
      {
        stdio: options.inherit ? 'inherit' : 'pipe',
        encoding: 'utf8',
        // No telemetry and no update check: linting must not need the network.
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    );
    return { status: result.status ?? 1, output: `${result.stdout ?? ''}${result.stderr ?? ''}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = lintOpenApiDocument(await buildOpenApiDocument(), { inherit: true }).status;
}
