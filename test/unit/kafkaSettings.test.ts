import { describe, expect, it } from 'vitest';
import { defaultSettings, environmentVariables, kafkaMaxAttempts, lambdaEnvironment, withOverrides } from '../../config/settings.js';
import { settingsProblems } from '../../config/validateSettings.js';
import { readRuntimeConfig } from '../../lambda/config/runtimeConfig.js';

const resources = { inboxTable: 'i', ordersTable: 'o', idempotencyTable: 'p', deadLetterQueueUrl: 'http://127.0.0.1:9/q' };

describe('Kafka settings', () => {
  it('ships finite retries: 4 retries, so the consumer dead-letters on attempt 5', () => {
    expect(defaultSettings.kafka.retryAttempts).toBe(4);
    expect(kafkaMaxAttempts(defaultSettings)).toBe(5);
    expect(settingsProblems(defaultSettings)).toEqual([]);
  });

  it('passes the maximum attempt to the function as KAFKA_MAX_ATTEMPTS, read back by the runtime config', () => {
    const settings = withOverrides({ kafka: { retryAttempts: 9 } });
    const environment = lambdaEnvironment(settings, resources);
    expect(environment[environmentVariables.kafkaMaxAttempts]).toBe('10');
    expect(readRuntimeConfig(environment).kafkaMaxAttempts).toBe(10);
  });

  it('defaults KAFKA_MAX_ATTEMPTS for an environment built without it (an SQS-only function)', () => {
    const { [environmentVariables.kafkaMaxAttempts]: _omitted, ...environment } = lambdaEnvironment(defaultSettings, resources);
    expect(readRuntimeConfig(environment).kafkaMaxAttempts).toBe(5);
  });

  it.each([
    ['infinite retries (-1)', { retryAttempts: -1 }, /retries must be finite/],
    ['retries above 10000', { retryAttempts: 10_001 }, /retry attempts 10001/],
    ['a record age below 60 s', { maxRecordAgeSeconds: 30 }, /record age 30 s/],
    ['a batch of 0', { batchSize: 0 }, /Kafka batch size 0/],
    ['more minimum than maximum pollers', { minimumPollers: 3, maximumPollers: 2 }, /pollers/],
    ['a topic name Kafka refuses', { topic: 'orders/eu' }, /Kafka topic "orders\/eu"/],
  ])('refuses %s', (_, kafka, message) => {
    const problems = settingsProblems(withOverrides({ kafka }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it('accepts no record age limit (-1)', () => {
    expect(settingsProblems(withOverrides({ kafka: { maxRecordAgeSeconds: -1 } }))).toEqual([]);
  });
});
