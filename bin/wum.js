#!/usr/bin/env node
// The `wum` command. It runs the bundled CLI (bundle/wum.mjs, written by `npm start`,
// `npm run build` or `npm test`) when no source is newer than it: a tenth of the start-up
// time of running the TypeScript (src/cli/main.ts) through tsx, which it does otherwise.
import { readdirSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const bundle = new URL('bundle/wum.mjs', root);

function newestSource() {
  let newest = statSync(new URL('package-lock.json', root)).mtimeMs;
  for (const dir of ['src', 'sdk']) {
    for (const entry of readdirSync(new URL(`${dir}/`, root), { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) newest = Math.max(newest, statSync(`${entry.parentPath ?? entry.path}/${entry.name}`).mtimeMs);
    }
  }
  return newest;
}

const built = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs;
if (built !== undefined && built >= newestSource()) {
  await import(bundle.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
