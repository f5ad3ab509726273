/**
 * The library's boundaries, checked by `npm test` (dependency-cruiser):
 * - the library (lambda/, lib/, cli/, local/, config/) never imports an example;
 * - the Lambda runtime (lambda/) never imports the CDK constructs, the CLI or the local runtime;
 * - examples reach the library only through its package entry points (`idempotent-consumer`,
 *   `idempotent-consumer/cdk`, `…/settings`, `…/local`), never through a relative path into it.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'library-imports-example',
      comment: 'The library must not know its examples: move what you need into the library, or into the example.',
      severity: 'error',
      from: { path: '^(lambda|lib|cli|local|config)/' },
      to: { path: '^examples/' },
    },
    {
      name: 'runtime-imports-tooling',
      comment: 'The Lambda runtime is bundled into every function: it must not pull in CDK, the CLI or the local runtime.',
      severity: 'error',
      from: { path: '^lambda/' },
      to: { path: '^(lib|cli|local)/' },
    },
    {
      name: 'example-reaches-into-library',
      comment: 'Examples use the public API: import from idempotent-consumer (or /cdk, /settings, /local), not a relative path into the library.',
      severity: 'error',
      from: { path: '^examples/', pathNot: '^examples/[^/]+/test/' },
      to: { path: '^(lambda|lib|cli|local|config)/', dependencyTypes: ['local'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|cdk\\.out)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { conditionNames: ['@idempotent-consumer/source', 'import', 'require', 'node', 'default'], exportsFields: ['exports'] },
  },
};
