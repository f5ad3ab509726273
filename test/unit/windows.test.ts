import { describe, expect, it } from 'vitest';
import { defaultSettings, withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { settingsProblems } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import {
  describeSeconds,
  existingQueueRetentionProblem,
  inboxWindowProblem,
  kafkaRecordReachSeconds,
  kafkaTopicRetentionProblem,
  kafkaUnlimitedRetentionWarning,
  payloadExpirationDays,
  payloadLifecycleProblem,
  redeliveryWindowSeconds,
  retryBudgetProblem,
  retryBudgetSeconds,
  sideEffectLockProblem,
  sideEffectWindowProblem,
  windowProblems,
  windowWarnings,
} from '../../packages/idempotent-consumer/src/settings/windows.js';
import { cafeSettings } from '../../examples/cafe/settings.js';
import { inventorySettings } from '../../examples/inventory/settings.js';

const DAY = 86_400;

describe('the windows of the defaults and the examples', () => {
  it.each([
    ['defaults', defaultSettings],
    ['café', cafeSettings],
    ['inventory', inventorySettings],
  ])('%s break no window rule and raise no warning, standard and FIFO', (_name, settings) => {
    expect(windowProblems(settings)).toEqual([]);
    expect(windowProblems(withOverrides({ queue: { fifo: true } }, settings))).toEqual([]);
    expect(windowWarnings(settings, { kafka: true })).toEqual([]);
  });
});

describe('inboxWindowProblem', () => {
  it('refuses an inbox TTL one second short of source + DLQ retention, with the numbers and the fix', () => {
    const settings = withOverrides({ idempotency: { inboxTtlSeconds: 18 * DAY - 1 } });

    const problem = inboxWindowProblem(settings);

    expect(redeliveryWindowSeconds(settings)).toBe(18 * DAY);
    expect(problem).toContain('inbox TTL 1555199 s');
    expect(problem).toContain('source queue retention 345600 s (4 days)');
    expect(problem).toContain('dead-letter queue retention 1209600 s (14 days)');
    expect(problem).toContain('= 1555200 s (18 days)');
    expect(problem).toContain('Fix: idempotency.inboxTtlSeconds ≥ 1555200');
    expect(problem).toContain('sqs-dead-letter-queues.html');
  });

  it('accepts an inbox TTL exactly source + DLQ retention', () => {
    expect(inboxWindowProblem(withOverrides({ idempotency: { inboxTtlSeconds: 18 * DAY } }))).toBeUndefined();
  });

  it('is refused by settingsProblems', () => {
    expect(settingsProblems(withOverrides({ idempotency: { inboxTtlSeconds: 3600 } })).join('\n')).toContain(
      'inbox TTL 3600 s (1 hour) is shorter than',
    );
  });
});

describe('sideEffectWindowProblem', () => {
  it('refuses a side-effect record that expires before a redriven message can come back', () => {
    const problem = sideEffectWindowProblem(
      withOverrides({ queue: { deadLetterRetentionPeriodSeconds: 7 * DAY }, idempotency: { sideEffectTtlSeconds: 10 * DAY } }),
    );

    expect(problem).toContain('side-effect idempotency window 864000 s (10 days)');
    expect(problem).toContain('= 950400 s (11 days)');
    expect(problem).toContain('sideEffectTtlSeconds ≥ 950400');
  });
});

describe('sideEffectLockProblem', () => {
  it('refuses a side-effect record that would expire while its lock is held (TTL not above the function timeout)', () => {
    const settings = withOverrides({
      function: { timeoutSeconds: 900 },
      queue: { visibilityTimeoutSeconds: 5400 },
      idempotency: { sideEffectTtlSeconds: 900 },
    });

    expect(sideEffectLockProblem(settings)).toBe(
      'side-effect idempotency window 900 s is not longer than the function timeout 900 s: the side-effect record would expire while ' +
        'the invocation holding its lock still runs, and a concurrent copy of the message would run the effect again. ' +
        'Fix: idempotency.sideEffectTtlSeconds > 900',
    );
    expect(
      sideEffectLockProblem(withOverrides({ function: { timeoutSeconds: 900 }, idempotency: { sideEffectTtlSeconds: 901 } })),
    ).toBeUndefined();
  });
});

describe('retryBudgetProblem', () => {
  it('counts every receive for the longer of the visibility timeout and timeout + backoff', () => {
    expect(retryBudgetSeconds(defaultSettings)).toBe(10 * 180);
    // FIFO: 55 receives; a backoff of 600 s makes a receive 30 + 600 s.
    expect(retryBudgetSeconds(withOverrides({ queue: { fifo: true }, retry: { backoffMaxSeconds: 600 } }))).toBe(55 * 630);
  });

  it('refuses a source retention that SQS would end before the redrive policy moves a failing message', () => {
    const settings = withOverrides({ queue: { retentionPeriodSeconds: 1799 }, idempotency: { inboxTtlSeconds: 30 * DAY } });

    const problem = retryBudgetProblem(settings);

    expect(problem).toContain('source queue retention 1799 s is shorter than');
    expect(problem).toContain(
      '1800 s = maxReceiveCount 10 × max(visibility timeout 180 s, function timeout 30 s + max(backoffMaxSeconds 60 s, function timeout))',
    );
    expect(problem).toContain('queue.retentionPeriodSeconds ≥ 1800');
    expect(retryBudgetProblem(withOverrides({ queue: { retentionPeriodSeconds: 1800 } }))).toBeUndefined();
  });
});

describe('Kafka topic retention', () => {
  it('is skipped without kafka.topicRetentionHours (the cluster cannot be read at synth)', () => {
    expect(kafkaRecordReachSeconds(defaultSettings)).toBeUndefined();
    expect(kafkaTopicRetentionProblem(withOverrides({ idempotency: { inboxTtlSeconds: 18 * DAY } }))).toBeUndefined();
  });

  it('refuses an inbox TTL shorter than topic retention + DLQ retention, with the numbers', () => {
    const settings = withOverrides({ kafka: { topicRetentionHours: 720 } });

    const problem = kafkaTopicRetentionProblem(settings);

    expect(problem).toContain('inbox TTL 2592000 s (30 days) is shorter than Kafka topic retention 720 hours');
    expect(problem).toContain('+ dead-letter queue retention 1209600 s (14 days) = 3801600 s (44 days)');
    expect(problem).toContain('Fix: idempotency.inboxTtlSeconds ≥ 3801600');
    expect(settingsProblems(settings).join('\n')).toContain('Kafka topic retention 720 hours');
  });

  it("accepts MSK's default 7-day retention with the default inbox TTL", () => {
    expect(kafkaTopicRetentionProblem(withOverrides({ kafka: { topicRetentionHours: 168 } }))).toBeUndefined();
  });

  it('counts the maximum record age instead when it is shorter than the retention, or the retention is unlimited', () => {
    const settings = withOverrides({
      kafka: { topicRetentionHours: -1, maxRecordAgeSeconds: 604_800 },
      idempotency: { inboxTtlSeconds: 20 * DAY },
    });

    expect(kafkaRecordReachSeconds(settings)).toBe(604_800);
    expect(kafkaTopicRetentionProblem(settings)).toContain(
      "shorter than the Kafka mapping's maximum record age 604800 s (7 days) + dead-letter queue retention 1209600 s (14 days) = 1814400 s (21 days)",
    );
  });

  it('refuses a retention that is neither positive nor -1', () => {
    expect(kafkaTopicRetentionProblem(withOverrides({ kafka: { topicRetentionHours: 0 } }))).toContain(
      'Kafka topic retention 0 hours must be a positive number of hours, or -1',
    );
  });

  it('warns, with the inbox TTL, when the topic keeps records forever and no record age bounds a re-read; only with a Kafka source', () => {
    const settings = withOverrides({ kafka: { topicRetentionHours: -1 } });

    expect(kafkaUnlimitedRetentionWarning(settings)).toContain(
      'Kafka topic retention is unlimited (topicRetentionHours -1) and the inbox TTL is 2592000 s (30 days)',
    );
    expect(windowWarnings(settings, { kafka: true })).toHaveLength(1);
    expect(windowWarnings(settings, { kafka: false })).toEqual([]);
    expect(windowProblems(settings)).toEqual([]);
  });
});

describe('payload bucket lifecycle', () => {
  it('expires dead-letter bodies after source + DLQ retention rounded up to days, plus one', () => {
    expect(payloadExpirationDays(defaultSettings)).toBe(19);
    expect(payloadExpirationDays(withOverrides({ queue: { retentionPeriodSeconds: 3600, deadLetterRetentionPeriodSeconds: 3600 } }))).toBe(
      2,
    );
  });

  it('refuses a lifecycle shorter than the DLQ retention: a dead letter must not outlive its body', () => {
    expect(payloadLifecycleProblem(13, 14 * DAY)).toBe(
      'payload bucket lifecycle expiration 13 days (1123200 s) is shorter than dead-letter queue retention 1209600 s (14 days): ' +
        'a dead letter whose body was offloaded would outlive its body, and could no longer be shown or redriven. ' +
        'Fix: expire dead-letter bodies after at least 14 days',
    );
    expect(payloadLifecycleProblem(14, 14 * DAY)).toBeUndefined();
    expect(
      payloadLifecycleProblem(payloadExpirationDays(defaultSettings), defaultSettings.queue.deadLetterRetentionPeriodSeconds),
    ).toBeUndefined();
  });
});

describe('existingQueueRetentionProblem', () => {
  it('refuses a queue that keeps messages longer than its setting, naming both', () => {
    expect(existingQueueRetentionProblem('existingDeadLetterQueue', 14 * DAY, 7 * DAY, 'queue.deadLetterRetentionPeriodSeconds')).toContain(
      'existingDeadLetterQueue keeps messages 1209600 s (14 days), longer than queue.deadLetterRetentionPeriodSeconds 604800 s (7 days)',
    );
    expect(existingQueueRetentionProblem('existingQueue', 4 * DAY, 4 * DAY, 'queue.retentionPeriodSeconds')).toBeUndefined();
  });
});

describe('describeSeconds', () => {
  it('adds days or hours to the seconds', () => {
    expect([describeSeconds(90), describeSeconds(5400), describeSeconds(1_555_200)]).toEqual([
      '90 s',
      '5400 s (1.5 hours)',
      '1555200 s (18 days)',
    ]);
  });
});
