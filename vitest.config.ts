import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/** Resolves the package's own entry points (`idempotent-consumer`, `…/cdk`, `…/local`) to their TypeScript sources, as the examples import them. */
// Without 'module': externalized packages must load as Node loads them (e.g. @aws-sdk/core's 'module' build has extension-less imports Node cannot resolve).
const sourceConditions = ['@idempotent-consumer/source', ...defaultServerConditions.filter((condition) => condition !== 'module')];

/**
 * Three projects: `unit` (no servers), `stack` (CDK synth, slow), `integration` (DynamoDB Local
 * and the SQS server, started once by the global setup and stopped at the end; the CLI tests
 * start their own SQS server). `npm test` runs them all; `npx vitest run --project unit` runs one.
 */
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@idempotent-consumer/source'] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: two workers keep the emulators responsive.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'stack', include: ['test/stack/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/cli/**/*.test.ts'],
          globalSetup: ['test/setup/emulators.ts'],
        },
      },
    ],
  },
});
