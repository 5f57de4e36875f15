/*
 * `npm start` runs this first: it bundles the server and the CLI when the sources changed
 * since the last bundle (scripts/build-bundles.ts; a failure stops the start, as the server
 * could not run), and builds the web console when stale (scripts/build-console.ts; a failure
 * there is reported and the API starts anyway). Both are no-ops once built.
 */
import { buildBundles } from './build-bundles.ts';
import { buildConsoleForStart } from './build-console.ts';

if (await buildBundles({ ifStale: true })) process.stdout.write('Bundled the server and the CLI into bundle/.\n');
await buildConsoleForStart();
