import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/** Resolves the package's own entry points (`idempotent-consumer`, `…/cdk`, `…/local`) to their TypeScript sources, as the examples import them. */
// Without 'module': externalized packages must load as Node loads them (e.g. @aws-sdk/core's 'module' build has extension-less imports Node cannot resolve).
const sourceConditions = ['@idempotent-consumer/source', ...defaultServerConditions.filter((condition) => condition !== 'module')];

/**
 * Five projects: `unit` (no servers), `stack` (CDK synth, slow), `browser` (headless Chromium), `package` (the packed tarball in a user's project), `integration` (DynamoDB Local
 * and the SQS server, started once by the global setup and stopped at the end; the CLI tests
 * start their own SQS server). `npm test` runs them all; `npx vitest run --project unit` runs one.
 */
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@idempotent-consumer/source'] } },
  test: {
    // The AWS SDK's notice that its 2027 releases need Node 22 (Lambda runs nodejs22.x), and the
    // consumer's INFO logs and metric lines, would drown the test output; a test that reads logs sets
    // their level, and the local runtime turns its metrics on for itself.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: two workers keep the emulators responsive.
    maxWorkers: 2,
    // The engine's coverage, from every project of the run (`npm test` turns it on): its pure
    // modules are unit-tested without a server, the DynamoDB calls against DynamoDB Local.
    coverage: {
      provider: 'v8',
      include: ['packages/idempotent-consumer/src/engine/**/*.ts'],
      reporter: ['text', 'text-summary'],
      reportsDirectory: 'coverage',
      thresholds: { 'packages/idempotent-consumer/src/engine/**/*.ts': { lines: 95, branches: 95 } },
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
          exclude: ['examples/*/test/**/*.integration.test.ts'],
        },
      },
      { extends: true, test: { name: 'stack', include: ['test/stack/**/*.test.ts'] } },
      // Pages checked in Debian's headless Chromium (/usr/bin/chromium, installed by .ci/run), driven by playwright-core.
      { extends: true, test: { name: 'browser', include: ['test/browser/**/*.test.ts'] } },
      // The packed tarball installed into an empty project (npm pack, npm install, tsc, CDK synth): slow, needs the npm registry.
      { extends: true, test: { name: 'package', include: ['test/package/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: [
            'test/integration/**/*.test.ts',
            'test/cli/**/*.test.ts',
            'test/engine/**/*.test.ts',
            'test/outbox/**/*.test.ts',
            'test/prove/**/*.test.ts',
            'examples/*/test/**/*.integration.test.ts',
          ],
          globalSetup: ['test/setup/emulators.ts'],
        },
      },
    ],
  },
});
