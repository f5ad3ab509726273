import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // DynamoDB Local and the SQS server are started once for the whole run and stopped at its end.
    globalSetup: ['test/setup/emulators.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: two workers keep the emulators responsive.
    maxWorkers: 2,
  },
});
