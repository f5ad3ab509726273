/**
 * The repository's boundaries, checked by `npm test` (dependency-cruiser, test/unit/boundaries.test.ts):
 *
 * - packages depend in one direction: `idempotent-consumer` (the runtime) on no other package;
 *   `@idempotent-consumer/local` and `@idempotent-consumer/cdk` on the runtime only;
 *   `@idempotent-consumer/cli` on the runtime and the local runtime; examples and tools on any;
 * - a package, an example or a tool reaches another only by its name (its `exports`), never by a
 *   relative path into it;
 * - the packages never import an example, a tool or a test;
 * - no import cycle anywhere in the packages, examples or tools (type-only imports included).
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle: break it (move the shared piece down, or invert the dependency).',
      severity: 'error',
      from: { path: '^(packages|examples|tools)/' },
      to: { circular: true },
    },
    {
      name: 'library-imports-example-or-tool',
      comment: 'The library must not know its examples, tools or tests: move what you need into the library.',
      severity: 'error',
      from: { path: '^packages/' },
      to: { path: '^(examples|tools|test)/' },
    },
    {
      name: 'runtime-imports-tooling',
      comment: 'The runtime is bundled into every function: it must not pull in the constructs, the local runtime or the CLI.',
      severity: 'error',
      from: { path: '^packages/idempotent-consumer/' },
      to: { path: '^packages/(cdk|local|cli)/' },
    },
    {
      name: 'constructs-import-tooling',
      comment: 'The constructs depend on the runtime only.',
      severity: 'error',
      from: { path: '^packages/cdk/' },
      to: { path: '^packages/(local|cli)/' },
    },
    {
      name: 'local-runtime-imports-above',
      comment: 'The local runtime depends on the runtime only.',
      severity: 'error',
      from: { path: '^packages/local/' },
      to: { path: '^packages/(cdk|cli)/' },
    },
    {
      name: 'cli-imports-constructs',
      comment: 'The command line depends on the runtime and the local runtime.',
      severity: 'error',
      from: { path: '^packages/cli/' },
      to: { path: '^packages/cdk/' },
    },
    {
      name: 'relative-import-across-packages',
      comment: 'Reach another package by its name (`idempotent-consumer/…`, `@idempotent-consumer/…`), not a relative path into it.',
      severity: 'error',
      from: { path: '^(packages|examples|tools)/([^/]+)/', pathNot: '^examples/[^/]+/test/' },
      to: { path: '^(packages|examples|tools)/', pathNot: '^$1/$2/', dependencyTypes: ['local'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|cdk\\.out)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      conditionNames: ['@idempotent-consumer/source', 'import', 'require', 'node', 'default'],
      exportsFields: ['exports'],
    },
  },
};
