/*
 * The directory of wum's package.json, found from this module's own location by walking up.
 * Files that ship beside the code (SQL migrations, the PGlite template, the built console,
 * package.json) are named from it, so that the same code finds them whether it runs as
 * TypeScript from src/, compiled by tsc into dist/, or bundled into one file by esbuild
 * (scripts/build-bundles.ts), where every module shares the bundle's `import.meta.url`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

/** Absolute path of the package's root directory (the one holding its package.json). */
export const PACKAGE_ROOT: string = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** Absolute path of `relative` (slash-separated) inside the package, e.g. `src/storage/migrations`. */
export function packagePath(relative: string): string {
  return join(PACKAGE_ROOT, ...relative.split('/'));
}

/** wum's name and version, as its package.json gives them (read once, when first asked for). */
export interface PackageManifest {
  readonly name: string;
  readonly version: string;
}

let manifest: PackageManifest | undefined;

/** The package's {@link PackageManifest}: the CLI's `--version`, OCSF's `metadata.product`. */
export function packageManifest(): PackageManifest {
  if (!manifest) {
    const { name, version } = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as PackageManifest;
    manifest = { name, version };
  }
  return manifest;
}
