import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';
const sourceConditions = ['@idempotent-consumer/source', ...defaultServerConditions.filter((c) => c !== 'module')];
export default defineConfig({
  root: '/work/main',
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@idempotent-consumer/source'] } },
  test: { env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' }, testTimeout: 60_000, hookTimeout: 120_000, include: ['test/engine/**/*.test.ts', 'examples/*/test/**/*.integration.test.ts'], globalSetup: ['test/setup/emulators.ts'] },
});
