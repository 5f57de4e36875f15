/*
 * `npm run build`: compiles the server (src/ but the CLI, which runs through tsx like the SDK
 * it imports; with the SDK modules the server shares) to dist/src/ and dist/sdk/ with tsc
 * (tsconfig.build.json rewrites the `.ts` import extensions to `.js`; nothing is written on a
 * type error), which `npm run start:prod` and the benchmarks
 * run; bundles the server and the CLI into bundle/ (scripts/build-bundles.ts), which
 * `npm start` and `wum` run; and builds the web console into console/dist
 * (scripts/build-console.ts). dist/ is emptied first so that a file removed from src/ cannot
 * linger in the build. The compiled code finds the migrations and the PGlite template in src/
 * (src/package-root.ts).
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { buildBundles } from './build-bundles.ts';
import { buildConsole } from './build-console.ts';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync('dist', { recursive: true, force: true });
const compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
await buildBundles();
await buildConsole();
