import { describe, expect, it } from 'vitest';
import { defaultSettings, environmentVariables, lambdaEnvironment, withOverrides } from '../../config/settings.js';
import { assertValidSettings, InvalidSettingsError, settingsProblems } from '../../config/validateSettings.js';
import { readRuntimeConfig } from '../../lambda/config/runtimeConfig.js';

describe('settingsProblems', () => {
  it('accepts the shipped defaults, standard and FIFO', () => {
    expect(settingsProblems(defaultSettings)).toEqual([]);
    expect(settingsProblems(withOverrides({ queue: { fifo: true } }))).toEqual([]);
  });

  it('case C9: names both values and the rule when the visibility timeout is too short', () => {
    const settings = withOverrides({
      function: { timeoutSeconds: 900, maxBatchingWindowSeconds: 5 },
      queue: { visibilityTimeoutSeconds: 900 },
    });
    const problems = settingsProblems(settings);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/visibility timeout 900 s/);
    expect(problems[0]).toMatch(/function timeout 900 s/);
    expect(problems[0]).toMatch(/batching window 5 s/);
    expect(problems[0]).toMatch(/6 × function timeout \+ maximum batching window/);
    expect(() => assertValidSettings(settings)).toThrow(InvalidSettingsError);
  });

  it.each([
    ['maxReceiveCount below 5', { queue: { maxReceiveCount: 3 } }, /maxReceiveCount 3/],
    ['a batch above 10 without a window', { function: { batchSize: 50 } }, /batching window of at least 1 s/],
    ['a FIFO batch above 10', { queue: { fifo: true }, function: { batchSize: 20, maxBatchingWindowSeconds: 1 } }, /FIFO/],
    ['maximum concurrency 1', { function: { maxConcurrency: 1 } }, /maximum concurrency 1/],
    ['an inbox TTL shorter than the time a message can come back', { idempotency: { inboxTtlSeconds: 3600 } }, /inbox TTL 3600 s/],
    ['a side-effect window shorter than the time a message can come back', { idempotency: { sideEffectTtlSeconds: 3600 } }, /side-effect idempotency window 3600 s/],
    ['a DLQ retention shorter than the source', { queue: { deadLetterRetentionPeriodSeconds: 60 } }, /dead-letter queue retention 60 s/],
    ['a DLQ too small for the largest body', { queue: { deadLetterMaxMessageSizeBytes: 262_144 } }, /maximum message size/],
  ])('rejects %s', (_what, overrides, message) => {
    expect(settingsProblems(withOverrides(overrides)).join('\n')).toMatch(message);
  });
});

describe('lambdaEnvironment and readRuntimeConfig', () => {
  const resources = { inboxTable: 'Inbox', ordersTable: 'Orders', idempotencyTable: 'Idem', deadLetterQueueUrl: 'http://127.0.0.1:1/0/dlq' };

  it('round-trip the settings through the environment', () => {
    const config = readRuntimeConfig(lambdaEnvironment(defaultSettings, resources));
    expect(config).toMatchObject({
      consumerName: 'cafe-orders',
      inboxTable: 'Inbox',
      fifo: false,
      maxReceiveCount: defaultSettings.queue.maxReceiveCount,
      inboxTtlSeconds: defaultSettings.idempotency.inboxTtlSeconds,
      retryBackoffBaseSeconds: defaultSettings.retryBackoff.baseSeconds,
    });
  });

  it('names every missing variable', () => {
    const env = lambdaEnvironment(defaultSettings, resources);
    delete env[environmentVariables.inboxTable];
    delete env[environmentVariables.deadLetterQueueUrl];
    expect(() => readRuntimeConfig(env)).toThrow(/INBOX_TABLE_NAME[\s\S]*DEAD_LETTER_QUEUE_URL|DEAD_LETTER_QUEUE_URL[\s\S]*INBOX_TABLE_NAME/);
  });
});
