// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../harness/server-process.ts';

/*
 * The rooms of the tree, kept by dependency-cruiser's rules (.dependency-cruiser.cjs): http/
 * and webhooks/ reach storage/ only through the composition root (src/server/), the console
 * only through sdk/, core/ neither adapters nor frameworks, and no circle anywhere.
 */

const DEPCRUISE = join(REPO_ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const CONFIG = join(REPO_ROOT, '.dependency-cruiser.cjs');
const TIMEOUT = { timeout: 180_000 };

interface Violation {
  readonly from: string;
  readonly to: string;
  readonly rule: { readonly name: string };
}

/** Runs depcruise over `folders` of `cwd` with the repository's rules; resolves with its violations. */
async function violations(cwd: string, folders: readonly string[]): Promise<Violation[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [DEPCRUISE, ...folders, '--config', CONFIG, '--output-type', 'json'], {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => {
    // depcruise exits non-zero when it finds violations; its report is still on stdout.
    if (error.stdout) return { stdout: error.stdout };
    throw error;
  });
  const result = JSON.parse(stdout) as { summary: { violations: Violation[]; totalCruised: number } };
  assert.ok(result.summary.totalCruised > 0, 'depcruise read some modules');
  return result.summary.violations;
}

/** The tsconfig.json of a tree of {@link tree}: TypeScript sources importing each other with `.ts`. */
const TSCONFIG = JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true } });

/** Writes `files` (path → content) under a new temporary directory; returns it. */
async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'wum-import-graph-'));
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return root;
}

/** The violations, as `rule: from → to` sorted, of a temporary tree of `files` read in `folders`. */
async function violationsIn(files: Record<string, string>, folders: readonly string[]): Promise<string[]> {
  const root = await tree({ 'tsconfig.json': TSCONFIG, ...files });
  try {
    return (await violations(root, folders)).map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

describe('import graph', () => {
  test('the repository keeps every rule: no violation in src, sdk, console, harness, bench, scripts, test', TIMEOUT, async () => {
    const found = await violations(REPO_ROOT, ['src', 'sdk', 'console/src', 'harness', 'bench', 'scripts', 'test']);
    assert.deepEqual(found.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`), []);
  });

  test('the rules catch what they forbid: http → storage, webhooks → storage, console → src, core → http, scim → http, storage or fastify, storage → http, a circle', TIMEOUT, async () => {
    const found = await violationsIn(
      {
        'src/storage/store.ts': "export const store = 1;\n",
        'src/http/app.ts': "import { store } from '../storage/store.ts';\nexport const app = store;\n",
        'src/webhooks/worker.ts': "import { store } from '../storage/store.ts';\nexport const worker = store;\n",
        'src/server/server.ts': "import { store } from '../storage/store.ts';\nimport { app } from '../http/app.ts';\nexport const server = [store, app];\n",
        'src/core/domain.ts': "import { app } from '../http/app.ts';\nexport const domain = app;\n",
        'console/src/page.ts': "import { domain } from '../../src/core/domain.ts';\nexport const page = domain;\n",
        'src/core/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
        'src/core/b.ts': "import { a } from './a.ts';\nexport const b = () => a;\n",
        'src/scim/resource.ts': "import { store } from '../storage/store.ts';\nimport { app } from '../http/app.ts';\nexport const resource = [store, app];\n",
        'src/scim/routes.ts': "import fastify from 'fastify';\nexport const routes = fastify;\n",
        'node_modules/fastify/package.json': JSON.stringify({ name: 'fastify', main: 'index.js' }),
        'node_modules/fastify/index.js': 'module.exports = function fastify() {};\n',
        'src/storage/queries.ts': "import { app } from '../http/app.ts';\nexport const queries = app;\n",
      },
      ['src', 'console'],
    );
    assert.deepEqual(found, [
      'adapters-not-into-storage: src/http/app.ts → src/storage/store.ts',
      'adapters-not-into-storage: src/webhooks/worker.ts → src/storage/store.ts',
      'console-through-the-sdk: console/src/page.ts → src/core/domain.ts',
      'core-is-the-domain: src/core/domain.ts → src/http/app.ts',
      'no-circular: src/core/a.ts → src/core/b.ts',
      'scim-without-http-or-storage: src/scim/resource.ts → src/http/app.ts',
      'scim-without-http-or-storage: src/scim/resource.ts → src/storage/store.ts',
      'scim-without-http-or-storage: src/scim/routes.ts → node_modules/fastify/index.js',
      'storage-not-into-adapters: src/storage/queries.ts → src/http/app.ts',
    ]);
  });

  test('the rate limits stay behind their port: http → the Redis buckets, rate-limits → http', TIMEOUT, async () => {
    const found = await violationsIn(
      {
        'src/rate-limits/rate-limits.ts': "export const limits = 1;\n",
        'src/rate-limits/redis-token-buckets.ts': "export const redis = 1;\n",
        'src/http/hook.ts': "import { limits } from '../rate-limits/rate-limits.ts';\nimport { redis } from '../rate-limits/redis-token-buckets.ts';\nexport const hook = [limits, redis];\n",
        'src/rate-limits/fields.ts': "import { hook } from '../http/hook.ts';\nexport const fields = hook;\n",
      },
      ['src'],
    );
    assert.deepEqual(found, [
      'http-without-redis: src/http/hook.ts → src/rate-limits/redis-token-buckets.ts',
      'rate-limits-without-http: src/rate-limits/fields.ts → src/http/hook.ts',
    ]);
  });

  test('no periodic loop in the HTTP adapter: setInterval appears nowhere under src/http/ (periodic work is on the scheduler in server/)', async () => {
    const files = (await readdir(join(REPO_ROOT, 'src', 'http'), { recursive: true })).filter((f) => f.endsWith('.ts'));
    const looping: string[] = [];
    for (const file of files) if (/\bsetInterval\s*\(/.test(await readFile(join(REPO_ROOT, 'src', 'http', file), 'utf8'))) looping.push(file);
    assert.deepEqual(looping, []);
  });
});
