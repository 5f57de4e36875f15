/*
 * `npm run build`: compiles the server (src/ but the CLI, which runs through tsx like the SDK
 * it imports) to dist/ with tsc (tsconfig.build.json rewrites the `.ts` import extensions to
 * `.js`; nothing is written on a type error) and copies the SQL migrations next to the
 * compiled storage code, where `openDatabase` looks for them (and the pre-initialised PGlite
 * data directory, src/storage/pglite-template/). dist/ is emptied first so that
 * a file removed from src/ cannot linger in the build. Then it builds the web console into
 * console/dist (scripts/build-console.ts).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { buildConsole } from './build-console.ts';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync('dist', { recursive: true, force: true });
const compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
cpSync('src/storage/migrations', 'dist/storage/migrations', { recursive: true });
cpSync('src/storage/pglite-template', 'dist/storage/pglite-template', { recursive: true });
await buildConsole();
