/**
 * The Kafka retry policy's settings (`kafka.retry`): the rules `settingsProblems` checks, the
 * mapping's retries it asks for, and its way through the Lambda environment to the handler.
 */
import { describe, expect, it } from 'vitest';
import { readRuntimeConfig } from '../../packages/idempotent-consumer/src/config/runtimeConfig.js';
import {
  defaultSettings,
  environmentVariables,
  kafkaRetryAttempts,
  lambdaEnvironment,
  type SettingsOverrides,
  withOverrides,
} from '../../packages/idempotent-consumer/src/settings/settings.js';
import { settingsProblems } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { windowWarnings } from '../../packages/idempotent-consumer/src/settings/windows.js';
import { kafkaPollerOptionsFromSettings } from '../../packages/local/src/kafka/KafkaEventSourcePoller.js';

/** A function timeout of 60 s (and the queue's visibility timeout it needs), with `overrides`. */
function settingsWith(overrides: SettingsOverrides) {
  return withOverrides({
    ...overrides,
    function: { timeoutSeconds: 60, ...overrides.function },
    queue: { visibilityTimeoutSeconds: 360, ...overrides.queue },
  });
}

const resources = { inboxTable: 'Inbox', idempotencyTable: 'Idem', deadLetterQueueUrl: 'http://127.0.0.1:1/0/dlq' };

describe('kafka.retry settings', () => {
  it('accepts a 30 s delay with a 60 s function timeout, and Kafka Connect’s way (until success)', () => {
    expect(settingsProblems(settingsWith({ kafka: { retry: { delaySeconds: 30 } } }))).toEqual([]);
    expect(settingsProblems(settingsWith({ kafka: { retry: { delaySeconds: 30, untilSuccess: true } } }))).toEqual([]);
  });

  it('refuses a delay that does not fit in the function timeout with the time an attempt needs after it', () => {
    const problems = settingsProblems(withOverrides({ kafka: { retry: { delaySeconds: 30 } } }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /kafka\.retry\.delaySeconds 30 s \+ sideEffectMinRemainingMs 5000 ms must stay below the function timeout 30 s/,
    );
    expect(problems[0]).toMatch(/a function timeout of at least 36 s/);
  });

  it('refuses a delay that is not a whole number of seconds from 0 to 899', () => {
    for (const delaySeconds of [-1, 1.5, 900, Number.NaN]) {
      expect(
        settingsProblems(
          settingsWith({
            function: { timeoutSeconds: 900 },
            queue: { visibilityTimeoutSeconds: 5400 },
            kafka: { retry: { delaySeconds } },
          }),
        ),
      ).toEqual([expect.stringMatching(/kafka\.retry\.delaySeconds .* must be a whole number of seconds from 0 to 899/)]);
    }
  });

  it('until success needs a delay, no maximum record age and the mapping’s 10000 retries', () => {
    expect(settingsProblems(settingsWith({ kafka: { retry: { untilSuccess: true } } }))).toEqual([
      expect.stringMatching(/untilSuccess needs kafka\.retry\.delaySeconds ≥ 1/),
    ]);
    expect(
      settingsProblems(settingsWith({ kafka: { maxRecordAgeSeconds: 3600, retry: { delaySeconds: 30, untilSuccess: true } } })),
    ).toEqual([expect.stringMatching(/untilSuccess needs kafka\.maxRecordAgeSeconds -1, got 3600 s/)]);
    expect(settingsProblems(settingsWith({ kafka: { retryAttempts: 500, retry: { delaySeconds: 30, untilSuccess: true } } }))).toEqual([
      expect.stringMatching(/Kafka retry attempts 500 are below 10000 .*untilSuccess/),
    ]);
    expect(kafkaRetryAttempts(settingsWith({ kafka: { retry: { delaySeconds: 30, untilSuccess: true } } }))).toBe(10_000);
    expect(kafkaRetryAttempts(settingsWith({ kafka: { retry: { delaySeconds: 30 } } }))).toBe(kafkaRetryAttempts(defaultSettings));
    expect(settingsProblems(settingsWith({ kafka: { retry: { delaySeconds: 30, untilSuccess: 'yes' as unknown as boolean } } }))).toEqual([
      expect.stringMatching(/untilSuccess must be true or false/),
    ]);
  });

  it('the local mapping takes the same 10000 retries from the settings', () => {
    expect(kafkaPollerOptionsFromSettings(settingsWith({ kafka: { retry: { delaySeconds: 30, untilSuccess: true } } })).retryAttempts).toBe(
      10_000,
    );
  });

  it('warns when until success can hold a partition longer than the topic keeps the records behind it', () => {
    const untilSuccess = { delaySeconds: 30, untilSuccess: true };
    // 10000 × 60 s = 600000 s (6.9 days): within a 7-day topic retention, beyond a 24-hour one.
    expect(windowWarnings(settingsWith({ kafka: { topicRetentionHours: 168, retry: untilSuccess } }), { kafka: true })).toEqual([]);
    expect(windowWarnings(settingsWith({ kafka: { topicRetentionHours: 24, retry: untilSuccess } }), { kafka: true })).toEqual([
      expect.stringMatching(/untilSuccess holds a partition .* for up to 600000 s .* longer than the topic retention of 24 hours/),
    ]);
    expect(windowWarnings(settingsWith({ kafka: { topicRetentionHours: 24, retry: { delaySeconds: 30 } } }), { kafka: true })).toEqual([]);
    expect(windowWarnings(settingsWith({ kafka: { topicRetentionHours: 24, retry: untilSuccess } }), { kafka: false })).toEqual([]);
  });

  it('refuses a maximum record age the policy could hold a record past before it dead-letters it', () => {
    // maxAttempts 5: the fifth attempt comes 4 × 30 = 120 s after the first.
    expect(settingsProblems(settingsWith({ kafka: { maxRecordAgeSeconds: 120, retry: { delaySeconds: 30 } } }))).toEqual([
      expect.stringMatching(/maximum record age 120 s is not above \(maxAttempts 5 − 1\) × kafka\.retry\.delaySeconds 30 = 120 s/),
    ]);
    expect(settingsProblems(settingsWith({ kafka: { maxRecordAgeSeconds: 121, retry: { delaySeconds: 30 } } }))).toEqual([]);
  });
});

describe('kafka.retry through the Lambda environment', () => {
  it('leaves the environment as it was without a policy', () => {
    const environment = lambdaEnvironment(defaultSettings, resources);
    expect(environment).not.toHaveProperty(environmentVariables.kafkaRetryDelaySeconds);
    expect(environment).not.toHaveProperty(environmentVariables.kafkaRetryUntilSuccess);
    expect(readRuntimeConfig(environment)).toMatchObject({ kafkaRetryDelaySeconds: 0, kafkaRetryUntilSuccess: false });
  });

  it('carries the delay and until-success to the handler’s configuration', () => {
    const environment = lambdaEnvironment(settingsWith({ kafka: { retry: { delaySeconds: 30, untilSuccess: true } } }), resources);
    expect(environment).toMatchObject({ KAFKA_RETRY_DELAY_SECONDS: '30', KAFKA_RETRY_UNTIL_SUCCESS: 'true' });
    expect(readRuntimeConfig(environment)).toMatchObject({ kafkaRetryDelaySeconds: 30, kafkaRetryUntilSuccess: true });
  });

  it('names a malformed variable', () => {
    const environment = lambdaEnvironment(defaultSettings, resources);
    expect(() => readRuntimeConfig({ ...environment, KAFKA_RETRY_UNTIL_SUCCESS: 'yes' })).toThrow(
      /KAFKA_RETRY_UNTIL_SUCCESS must be "true" or "false"/,
    );
    expect(() => readRuntimeConfig({ ...environment, KAFKA_RETRY_DELAY_SECONDS: '2.5' })).toThrow(
      /KAFKA_RETRY_DELAY_SECONDS must be an integer ≥ 0/,
    );
  });
});
