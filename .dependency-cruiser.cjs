/*
 * The import graph's rules, checked by test/architecture/import-graph.test.ts (in `npm test`)
 * and by `npx depcruise src sdk console/src harness`. Rooms: core is the domain (no HTTP, SQL or
 * framework), http/ the HTTP adapter, rate-limits/ the buckets behind the rate-limit port, storage/ the database,
 * webhooks/ the delivery worker, audit-streams/ the audit stream worker, scim/ the SCIM translation (free of HTTP
 * and storage), server/ the composition root that wires them; the console sees the server only through sdk/.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No module reaches itself through its imports.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'adapters-not-into-storage',
      severity: 'error',
      comment: 'http/, webhooks/ and audit-streams/ depend on ports in core/; only the composition root (src/server/) imports storage/.',
      from: { path: '^src/(http|webhooks|audit-streams)/' },
      to: { path: '^src/storage/' },
    },
    {
      name: 'http-not-into-webhooks',
      severity: 'error',
      comment: 'The HTTP adapter gets what it needs of the webhook and audit stream workers (the URL checks, the test send) from the composition root.',
      from: { path: '^src/http/' },
      to: { path: '^src/(webhooks|audit-streams)/' },
    },
    {
      name: 'http-without-redis',
      severity: 'error',
      comment: 'The HTTP adapter asks the rate limits through their port (rate-limits/rate-limits.ts); the Redis store behind it is chosen and connected by the composition root.',
      from: { path: '^src/http/' },
      to: { path: ['node_modules/ioredis/', '^src/rate-limits/(redis-|shared-redis)'] },
    },
    {
      name: 'rate-limits-without-http',
      severity: 'error',
      comment: 'The rate limits hold buckets; the HTTP fields and the 429 are written by http/rate-limit/.',
      from: { path: '^src/rate-limits/' },
      to: { path: ['^src/(http|storage|server)/', 'node_modules/(fastify|@fastify)/'] },
    },
    {
      name: 'core-is-the-domain',
      severity: 'error',
      comment: 'src/core imports neither the adapters nor the composition root.',
      from: { path: '^src/core/' },
      to: { path: '^src/(http|storage|webhooks|audit-streams|server|cli|scim)/' },
    },
    {
      name: 'core-without-frameworks',
      severity: 'error',
      comment: 'src/core imports neither the HTTP framework nor the database libraries.',
      from: { path: '^src/core/' },
      to: { path: 'node_modules/(fastify|@fastify|drizzle-orm|pg|@electric-sql)/' },
    },
    {
      name: 'scim-without-http-or-storage',
      severity: 'error',
      comment: 'src/scim translates SCIM to the domain and back: it imports neither the HTTP framework nor the HTTP adapter, storage/ or the database libraries (http/routes/scim/ is its adapter).',
      from: { path: '^src/scim/' },
      to: { path: ['^src/(http|storage)/', 'node_modules/(fastify|@fastify|drizzle-orm|pg|@electric-sql)/'] },
    },
    {
      name: 'storage-not-into-adapters',
      severity: 'error',
      comment: 'src/storage implements the ports of core/: it imports neither the HTTP adapter nor the SCIM translation.',
      from: { path: '^src/storage/' },
      to: { path: '^src/(http|scim)/' },
    },
    {
      name: 'console-through-the-sdk',
      severity: 'error',
      comment: 'The console talks to the server only through sdk/, never its sources.',
      from: { path: '^console/' },
      to: { path: '^src/' },
    },
    {
      name: 'sdk-stands-alone',
      severity: 'error',
      comment: 'The SDK is published on its own and bundled into the console: nothing from src/.',
      from: { path: '^sdk/' },
      to: { path: '^(src|console|harness|test)/' },
    },
    {
      name: 'tooling-not-into-tests',
      severity: 'error',
      comment: 'bench/, scripts/ and harness/ share tooling through harness/, not test/.',
      from: { path: '^(bench|scripts|harness)/' },
      to: { path: '^test/' },
    },
    {
      name: 'only-the-root-imports-the-root',
      severity: 'error',
      comment: 'Nothing in src/ but the composition root imports it (it is the entry point).',
      from: { path: '^src/', pathNot: '^src/server/' },
      to: { path: '^src/server/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // node_modules is not followed, but stays in the graph: excluding it would hide the imports
    // of fastify, drizzle-orm, pg and PGlite that the framework rules forbid.
    exclude: { path: '(^|/)(dist|bundle)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
