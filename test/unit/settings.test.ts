import { describe, expect, it } from 'vitest';
import {
  defaultSettings,
  environmentVariables,
  kafkaRetryAttempts,
  lambdaEnvironment,
  maxReceiveCount,
  requiredMaxReceiveCount,
  tableEnvironmentVariable,
  tableEnvironmentVariables,
  withOverrides,
} from '../../packages/idempotent-consumer/src/settings/settings.js';
import {
  assertValidSettings,
  InvalidSettingsError,
  settingsProblems,
} from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { readRuntimeConfig } from '../../packages/idempotent-consumer/src/config/runtimeConfig.js';

describe('settingsProblems', () => {
  it('accepts the shipped defaults, standard and FIFO', () => {
    expect(settingsProblems(defaultSettings)).toEqual([]);
    expect(settingsProblems(withOverrides({ queue: { fifo: true } }))).toEqual([]);
    expect(settingsProblems(withOverrides({ function: { runtime: 'nodejs22.x' } }))).toEqual([]);
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
    [
      'maxReceiveCount that leaves no room for receives without an attempt',
      { queue: { maxReceiveCount: 5 } },
      /maxReceiveCount 5 is below 10/,
    ],
    [
      'a FIFO maxReceiveCount that skipped receives could exhaust (case C13)',
      { queue: { fifo: true, maxReceiveCount: 20 } },
      /below 55 = maxAttempts 5 × batch size 10/,
    ],
    [
      'Kafka retries that give up before the records behind a failure had their attempts',
      { kafka: { retryAttempts: 4 } },
      /Kafka retry attempts 4 are below 504/,
    ],
    ['infinite Kafka retries', { kafka: { retryAttempts: -1 } }, /retries must be finite/],
    [
      'a side-effect margin as long as the function timeout',
      { idempotency: { sideEffectMinRemainingMs: 30_000 } },
      /sideEffectMinRemainingMs 30000/,
    ],
    ['a batch above 10 without a window', { function: { batchSize: 50 } }, /batching window of at least 1 s/],
    ['a FIFO batch above 10', { queue: { fifo: true }, function: { batchSize: 20, maxBatchingWindowSeconds: 1 } }, /FIFO/],
    ['maximum concurrency 1', { function: { maxConcurrency: 1 } }, /maximum concurrency 1/],
    ['an inbox TTL shorter than the time a message can come back', { idempotency: { inboxTtlSeconds: 3600 } }, /inbox TTL 3600 s/],
    [
      'a side-effect window shorter than the time a message can come back',
      { idempotency: { sideEffectTtlSeconds: 3600 } },
      /side-effect idempotency window 3600 s/,
    ],
    ['a DLQ retention shorter than the source', { queue: { deadLetterRetentionPeriodSeconds: 60 } }, /dead-letter queue retention 60 s/],
    ['a DLQ too small for the largest body', { queue: { deadLetterMaxMessageSizeBytes: 262_144 } }, /maximum message size/],
    ["function memory below Lambda's 128 MB", { function: { memorySizeMb: 64 } }, /function memory 64 MB/],
    ["function memory above Lambda's 10,240 MB", { function: { memorySizeMb: 20_000 } }, /function memory 20000 MB/],
    ["a backoff longer than SQS's longest visibility timeout", { retry: { backoffMaxSeconds: 50_000 } }, /backoffMaxSeconds 50000/],
    [
      'a runtime the library is not tested on',
      { function: { runtime: 'nodejs20.x' as never } },
      /function runtime "nodejs20.x" must be one of nodejs22.x, nodejs24.x/,
    ],
  ])('rejects %s', (_what, overrides, message) => {
    expect(settingsProblems(withOverrides(overrides)).join('\n')).toMatch(message);
  });
});

describe('derived budgets', () => {
  it('leaves the redrive policy room for receives that are not attempts: maxAttempts + 5, FIFO maxAttempts × batch size + 5; Kafka maxAttempts × batch size − 1 + 5', () => {
    expect(requiredMaxReceiveCount(defaultSettings)).toBe(10);
    expect(maxReceiveCount(defaultSettings)).toBe(10);
    expect(maxReceiveCount(withOverrides({ queue: { fifo: true } }))).toBe(55);
    expect(maxReceiveCount(withOverrides({ queue: { maxReceiveCount: 30 } }))).toBe(30);
    expect(kafkaRetryAttempts(defaultSettings)).toBe(5 * 100 - 1 + 5);
  });
});

describe('lambdaEnvironment and readRuntimeConfig', () => {
  const resources = {
    inboxTable: 'Inbox',
    idempotencyTable: 'Idem',
    deadLetterQueueUrl: 'http://127.0.0.1:1/0/dlq',
    tables: { stockItems: 'Stock-1' },
  };

  it('round-trip the settings and the business tables through the environment', () => {
    const environment = lambdaEnvironment(defaultSettings, resources);
    expect(environment.TABLE_NAME_STOCK_ITEMS).toBe('Stock-1');
    const config = readRuntimeConfig(environment, ['stockItems']);
    expect(config).toMatchObject({
      consumerName: defaultSettings.consumerName,
      inboxTable: 'Inbox',
      fifo: false,
      maxAttempts: defaultSettings.retry.maxAttempts,
      inboxTtlSeconds: defaultSettings.idempotency.inboxTtlSeconds,
      retryBackoffBaseSeconds: defaultSettings.retry.backoffBaseSeconds,
      tables: { stockItems: 'Stock-1' },
    });
  });

  it('names every missing variable, a business table too', () => {
    const env = lambdaEnvironment(defaultSettings, resources);
    delete env[environmentVariables.inboxTable];
    delete env[environmentVariables.deadLetterQueueUrl];
    const error = (() => {
      try {
        readRuntimeConfig(env, ['stockItems', 'ledger']);
      } catch (thrown) {
        return thrown as Error;
      }
      return undefined;
    })();
    for (const variable of ['INBOX_TABLE_NAME', 'DEAD_LETTER_QUEUE_URL', 'TABLE_NAME_LEDGER'])
      expect(error?.message).toContain(`${variable} is not set`);
    expect(error?.message).not.toContain('TABLE_NAME_STOCK_ITEMS');
  });

  it('names a business table variable in upper snake case, and refuses a name that cannot be one', () => {
    expect(tableEnvironmentVariable('orders')).toBe('TABLE_NAME_ORDERS');
    expect(tableEnvironmentVariable('stockItems')).toBe('TABLE_NAME_STOCK_ITEMS');
    expect(() => tableEnvironmentVariable('stock-items')).toThrow(/letters, digits or '_'/);
  });

  it('keeps names that upper snake case would merge apart, each as it is written, one to one', () => {
    const names = ['stock_items', 'stockItems', 'STOCK_ITEMS', 'orders', 'A_B', 'aB'];
    const variables = tableEnvironmentVariables(names);
    expect(Object.fromEntries(variables)).toEqual({
      stock_items: 'TABLE_NAME_stock_items',
      stockItems: 'TABLE_NAME_stockItems',
      STOCK_ITEMS: 'TABLE_NAME_STOCK_ITEMS',
      orders: 'TABLE_NAME_ORDERS',
      A_B: 'TABLE_NAME_A_B',
      aB: 'TABLE_NAME_aB',
    });
    expect(new Set(variables.values()).size).toBe(names.length);
    expect(tableEnvironmentVariable('stockItems', names)).toBe('TABLE_NAME_stockItems');
    expect(tableEnvironmentVariable('stockItems', ['stockItems', 'orders'])).toBe('TABLE_NAME_STOCK_ITEMS');
    const environment = lambdaEnvironment(defaultSettings, {
      inboxTable: 'i',
      idempotencyTable: 'p',
      deadLetterQueueUrl: 'https://q/1/d',
      tables: { stock_items: 'T1', stockItems: 'T2' },
    });
    expect(readRuntimeConfig(environment, ['stock_items', 'stockItems']).tables).toEqual({ stock_items: 'T1', stockItems: 'T2' });
  });
});
