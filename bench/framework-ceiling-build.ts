/*
 * Compiles the bare Fastify server of the framework ceilings (bench/framework-ceiling.ts) and
 * the modules it imports to plain JavaScript, so that it runs on plain node like the service's
 * compiled server: `npm run bench` and `npm run bench:scenario` start it from here.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import ts from 'typescript';

const CEILING_DIR = join('node_modules', '.cache', 'wum-bench');
/** The compiled bare Fastify server: start it with `node CEILING_SCRIPT`. */
export const CEILING_SCRIPT = join(CEILING_DIR, 'framework-ceiling.js');
/** The compiled bare Fastify server of the plain writes (bench/plain-writes.ts). */
export const PLAIN_WRITES_SCRIPT = join(CEILING_DIR, 'plain-writes.js');
/** The bare Fastify servers and the modules they import, compiled into CEILING_DIR. */
const CEILING_SOURCES = ['bench/framework-ceiling.ts', 'bench/plain-writes.ts', 'bench/sql-replay.ts', 'bench/measurement.ts'];

/** Writes {@link CEILING_SCRIPT} and its imports (TypeScript's transpiler, no type check). */
export function buildFrameworkCeiling(): void {
  mkdirSync(CEILING_DIR, { recursive: true });
  writeFileSync(join(CEILING_DIR, 'package.json'), '{ "type": "module" }\n');
  for (const source of CEILING_SOURCES) {
    const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, rewriteRelativeImportExtensions: true },
    });
    writeFileSync(join(CEILING_DIR, basename(source).replace(/\.ts$/, '.js')), outputText);
  }
}
