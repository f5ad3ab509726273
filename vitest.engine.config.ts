import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';
const sourceConditions = ['@idempotent-consumer/source', ...defaultServerConditions.filter((c) => c !== 'module')];
export default defineConfig({
  root: '/work/main',
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@idempotent-consumer/source'] } },
  test: { testTimeout: 60_000, hookTimeout: 120_000, include: ['test/engine/**/*.test.ts', 'test/outbox/**/*.test.ts'], globalSetup: ['test/setup/emulators.ts'] },
});
