// Lint for the TypeScript sources: typescript-eslint's type-aware recommended rules, zero
// warnings allowed; `npm test` runs it (scripts/run-tests.ts). Each file is checked against the
// tsconfig nearest to it (the console has its own).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/', 'dist/', 'bundle/', 'console/dist/', 'data/', 'sdk/schema.ts', '**/*.js', '**/*.mjs'] },
  {
    files: ['src/**/*.ts', 'sdk/**/*.ts', 'console/src/**/*.{ts,tsx}', 'scripts/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A parameter or binding named `_x` is unused on purpose (a callback's position), as tsc allows.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      // Preact ignores what an event handler returns; the console's async handlers report their own errors.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
      // Ports and stores are object literals of closures that never use `this`, declared with method syntax.
      '@typescript-eslint/unbound-method': 'off',
      // Its newest check wants `db.execute<T>()` / `res.json<T>()` instead of a cast of the result, which
      // drizzle's per-driver result types do not allow alike; its other findings were fixed (50).
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // Fastify hooks, handlers and port implementations are async by signature even when one does no await.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['test/**/*.ts', 'scripts/scim-conformance/**/*.ts'],
    rules: {
      // Tests and the conformance runner read bodies of any shape and print them in failure messages.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
);
