import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { REPO_ROOT } from '../../harness/server-process.ts';

/*
 * Honest figures (docs/performance.md, "How to read the figures"): every benchmark the package's scripts
 * run reads the load average through bench/machine-load.ts, before it builds, and prints it
 * with its results, so that a ratio measured on a busy machine is marked as not a figure. This
 * reads the files only.
 */

const packageJson = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

/** The bench/ file each `bench*` (and `soak`) script runs. */
function benchEntries(): Array<{ script: string; file: string }> {
  return Object.entries(packageJson.scripts)
    .filter(([name]) => name === 'bench' || name.startsWith('bench:') || name === 'soak')
    .map(([script, command]) => {
      const file = /\bbench\/[\w-]+\.ts\b/.exec(command)?.[0];
      assert.ok(file, `npm run ${script} runs a file under bench/: ${command}`);
      return { script, file };
    });
}

describe('benchmarks print the load average and mark figures taken on a busy machine', () => {
  test('every bench entry script reads the load through bench/machine-load.ts and prints it with its results', () => {
    const entries = benchEntries();
    assert.ok(entries.length >= 15, `the bench scripts are found (${entries.length})`);
    for (const { script, file } of entries) {
      const source = readFileSync(join(REPO_ROOT, file), 'utf8');
      assert.match(source, /from '\.\/machine-load\.ts'/, `${file} (npm run ${script}) imports the shared helper`);
      assert.match(source, /watchMachineLoad\(/, `${file} (npm run ${script}) reads the load average at start`);
      assert.match(source, /renderReport\([^)]*\bload\)|load\.summary\(\)/, `${file} (npm run ${script}) prints the load average with its results`);
    }
  });

  test('no benchmark reads the load average for a verdict of its own', () => {
    // api-seeded.ts samples the load beside each maintenance tally, as a note, not a verdict.
    const ownReaders = readdirSync(join(REPO_ROOT, 'bench'))
      .filter((name) => name.endsWith('.ts') && !['machine-load.ts', 'api-seeded.ts'].includes(name))
      .filter((name) => /\bloadavg\b/.test(readFileSync(join(REPO_ROOT, 'bench', name), 'utf8')));
    assert.deepEqual(ownReaders, []);
  });
});
