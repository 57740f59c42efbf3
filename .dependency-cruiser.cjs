/**
 * The architecture's dependency rules (docs/architecture.md), checked on every CI run.
 * Test files are exempt: they may reach into any layer to set up a scenario.
 */
const notTests = '\\.test\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'dashboard-imports-only-schemas',
      comment: "The dashboard (web/) shares the server's types through its *.schemas.ts files (and the event envelope), never its code.",
      severity: 'error',
      from: { path: '^web/' },
      to: { path: '^src/', pathNot: ['\\.schemas\\.ts$', '^src/events/envelope\\.ts$'] },
    },
    {
      name: 'routes-call-services-only',
      comment: 'A route file talks to services, never to stores or the database.',
      severity: 'error',
      from: { path: '\\.routes\\.ts$' },
      to: { path: ['\\.store\\.ts$', '^src/db/'] },
    },
    {
      name: 'no-foreign-stores',
      comment: "A module reaches another module's data through its service, never its store.",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/', pathNot: notTests },
      to: { path: '^src/modules/([^/]+)/.+\\.store\\.ts$', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'services-and-stores-know-no-http',
      comment: 'Services hold the rules and stores hold queries; neither knows Fastify or the HTTP layer.',
      severity: 'error',
      from: { path: '\\.(service|store)\\.ts$' },
      to: { path: ['^src/http/', 'node_modules/fastify/', 'node_modules/@fastify/'] },
    },
    {
      name: 'stores-are-queries-only',
      comment: 'A store depends on the database layer and its own types, not on services.',
      severity: 'error',
      from: { path: '\\.store\\.ts$' },
      to: { path: '\\.service\\.ts$' },
    },
    {
      name: 'lib-and-config-are-leaves',
      comment: 'lib/ and config/ import nothing internal.',
      severity: 'error',
      from: { path: '^src/(lib|config)/', pathNot: notTests },
      to: { path: '^src/', pathNot: '^src/(lib|config)/' },
    },
    {
      name: 'jobs-use-db-and-lib-only',
      severity: 'error',
      from: { path: '^src/jobs/', pathNot: notTests },
      to: { path: '^src/', pathNot: '^src/(jobs|db|lib)/' },
    },
    {
      name: 'provider-uses-its-port-and-lib-only',
      comment:
        "The sandbox's own entry point (npm run sandbox) is a composition root: it opens the store it runs on. " +
        "The sandbox's store compiles its hottest statements with the store's query cache (db/compiled-query.ts), generic over the tables it is given.",
      severity: 'error',
      from: { path: '^src/provider/', pathNot: [notTests, '^src/provider/sandbox/main\\.ts$'] },
      to: { path: '^src/', pathNot: ['^src/(provider|lib)/', '^src/db/compiled-query\\.ts$'] },
    },
    {
      name: 'db-knows-no-modules',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: ['^src/modules/', '^src/http/'] },
    },
    {
      name: 'schemas-stand-alone',
      comment:
        "A schema file imports only other schema files and lib/, so that the dashboard can bundle the API's schemas without the server. " +
        "The sandbox's control schemas describe the stand-in provider, not the API, and are exempt.",
      severity: 'error',
      from: { path: '[/.]schemas\\.ts$', pathNot: '^src/provider/sandbox/' },
      to: { path: '^src/', pathNot: ['[/.]schemas\\.ts$', '^src/lib/'] },
    },
    {
      name: 'schemas-use-typebox-only',
      comment: 'The only package a schema file may import is TypeBox: anything else would follow it into the browser.',
      severity: 'error',
      from: { path: '[/.]schemas\\.ts$', pathNot: '^src/provider/sandbox/' },
      to: { dependencyTypes: ['npm', 'npm-dev', 'core'], pathNot: 'node_modules/typebox/' },
    },
    {
      name: 'http-knows-no-services',
      comment: "The HTTP plumbing names no business module's service: what it needs of one is a port it declares (IdempotencyGate).",
      severity: 'error',
      from: { path: '^src/http/', pathNot: notTests },
      to: { path: ['^src/modules/[^/]+/index\\.ts$', '\\.service\\.ts$', '\\.store\\.ts$'] },
    },
    {
      name: 'modules-know-no-composition',
      comment: 'Modules are built by the area files of src/composition/; none of them reaches back into it.',
      severity: 'error',
      from: { path: '^src/(modules|http|events|jobs|provider|db)/' },
      to: { path: '^src/(composition/|app\\.ts$)' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { pathNot: notTests },
      to: { circular: true },
    },
    {
      name: 'env-only-in-main',
      comment: 'Only main.ts reads process.env; configuration travels as an argument.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/main\\.ts$', notTests] },
      to: { path: '^src/main\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(test|bench|scripts)/' },
  },
};
