// one backend: pglite: the OpenAPI document, the same on either store (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, test } from 'node:test';
import { buildOpenApiDocument } from '../../scripts/openapi-document.ts';
import { CONSOLE_SCHEMA_FILE, renderConsoleTypes, renderSdkTypes, SCHEMA_FILE } from '../../scripts/generate-sdk-types.ts';
import { lintOpenApiDocument } from '../../scripts/lint-openapi.ts';
import { BACKEND } from '../helpers/test-context.ts';

type Operation = {
  operationId?: string;
  description?: string;
  parameters?: Array<{ name: string; description?: string; example?: unknown; examples?: unknown }>;
  responses: Record<string, { description: string; content?: Record<string, { example?: unknown; examples?: Record<string, { value: { code: string } }> }> }>;
};

// The document is built on an in-memory PGlite whatever the backend: checked once, in the PGlite run.
if (BACKEND === 'pglite') {
  describe('the OpenAPI document the service serves', () => {
    let document: Record<string, unknown>;
    before(async () => {
      document = await buildOpenApiDocument();
    });

    test('sdk/schema.ts is what `npm run sdk:generate` writes now (run it after changing a route schema)', async () => {
      const expected = await renderSdkTypes(structuredClone(document));
      const committed = readFileSync(SCHEMA_FILE, 'utf8');
      assert.ok(committed === expected, 'sdk/schema.ts is stale: run `npm run sdk:generate` and commit the result');
    });

    test('the console\'s routes are in the console\'s document only, and console/src/api/console-schema.ts is generated from it', async () => {
      const paths = Object.keys(document.paths as object);
      assert.equal(paths.filter((path) => path === '/console' || path.startsWith('/console/') || path.endsWith('/console/session')).length, 0, paths.join(', '));
      const consoleDocument = await buildOpenApiDocument('console');
      assert.deepEqual(Object.keys(consoleDocument.paths as object).sort(), [
        '/api/external/v2/console/session',
        '/console',
        '/console/',
        '/console/oidc/callback',
        '/console/oidc/options',
        '/console/oidc/start',
        '/console/operator/oidc/callback',
        '/console/operator/oidc/start',
        '/console/operator/options',
        '/console/operator/session',
        '/console/{*}',
      ]);
      const committed = readFileSync(CONSOLE_SCHEMA_FILE, 'utf8');
      assert.ok(committed === (await renderConsoleTypes(consoleDocument)), 'console/src/api/console-schema.ts is stale: run `npm run sdk:generate` and commit the result');
    });

    test('passes `redocly lint` with redocly.yaml (recommended rules as errors, everything described and exemplified)', () => {
      const result = lintOpenApiDocument(structuredClone(document));
      assert.equal(result.status, 0, result.output);
      assert.doesNotMatch(result.output, /You have \d+ warnings?/, result.output);
    });

    test('every error response shows one problem example per code it names, with the right status and type', () => {
      const paths = document.paths as Record<string, Record<string, Operation>>;
      let checked = 0;
      for (const [path, methods] of Object.entries(paths)) {
        for (const [method, operation] of Object.entries(methods)) {
          for (const [status, response] of Object.entries(operation.responses)) {
            if (Number(status) < 400) continue;
            const media = response.content?.['application/problem+json'];
            assert.ok(media?.examples, `${method} ${path} ${status} has problem examples`);
            const codes = [...(response.description.split(' is ')[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
            assert.deepEqual(Object.keys(media.examples).sort(), [...codes].sort(), `${method} ${path} ${status}`);
            for (const [code, example] of Object.entries(media.examples)) {
              assert.deepEqual(
                { code: example.value.code, status: (example.value as unknown as { status: number }).status },
                { code, status: Number(status) },
              );
              checked += 1;
            }
          }
        }
      }
      assert.ok(checked > 50, `checked ${checked} problem examples`);
    });
  });
}
