import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GROUP_PRODUCT, adaptCollection, runMicrosoftCollection } from './microsoft.ts';
import { runOktaCrudTest, runOktaSpecTest } from './okta.ts';
import type { SuiteResult } from './report.ts';
import { addNativeUser, createSuiteWorkspace, putProduct, type ServerTarget } from './target.ts';

/** Where the suites are kept: `../shared/conformance/scim` beside the repository, never copied into it. */
export const DEFAULT_SUITES_DIR = resolve(fileURLToPath(new URL('../..', import.meta.url)), '..', 'shared', 'conformance', 'scim');

/**
 * Replays the three suites against a running server, each in a workspace of its own:
 * Okta's SPEC test (after adding the one user it needs), Okta's CRUD test twice (as an OIN app
 * and as a wizard-built app), and Microsoft's collection (after putting the catalogue product
 * its group names become roles of).
 */
export async function runScimConformance(target: ServerTarget, suitesDir = DEFAULT_SUITES_DIR): Promise<SuiteResult[]> {
  if (!existsSync(join(suitesDir, 'SOURCES.md'))) throw new Error(`no SCIM suites in ${suitesDir}`);
  const results: SuiteResult[] = [];

  const spec = await createSuiteWorkspace(target, 'okta-spec');
  await addNativeUser(spec, { email: 'existing.user@example.com', first_name: 'Existing', last_name: 'User' });
  results.push(await runOktaSpecTest(suitesDir, spec));

  for (const kind of ['oin', 'aiw'] as const) {
    results.push(await runOktaCrudTest(suitesDir, await createSuiteWorkspace(target, `okta-crud-${kind}`), kind));
  }

  const adapted = adaptCollection(suitesDir);
  await putProduct(target, GROUP_PRODUCT, adapted.roles);
  results.push(await runMicrosoftCollection(adapted, await createSuiteWorkspace(target, 'microsoft')));
  return results;
}
