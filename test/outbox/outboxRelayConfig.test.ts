/** The relay's settings, environment and configuration: one source, clear errors. */
import { describe, expect, it } from 'vitest';
import { EnvironmentError } from '../../packages/idempotent-consumer/src/config/runtimeConfig.js';
import { parseDestinationTarget, readOutboxRelayConfig } from '../../packages/idempotent-consumer/src/outbox/outboxRelayConfig.js';
import {
  defaultOutboxRelaySettings,
  destinationEnvironmentVariable,
  outboxRelayEnvironment,
  outboxRelaySettings,
  outboxRelaySettingsProblems,
} from '../../packages/idempotent-consumer/src/outbox/outboxRelaySettings.js';

const topicArn = 'arn:aws:sns:eu-west-1:123456789012:payments.fifo';
const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/audit';

describe('destination targets', () => {
  it('reads SNS topic ARNs and SQS queue URLs, FIFO by the .fifo suffix', () => {
    expect(parseDestinationTarget(topicArn)).toEqual({ kind: 'sns', topicArn, fifo: true });
    expect(parseDestinationTarget(queueUrl)).toEqual({ kind: 'sqs', queueUrl, fifo: false });
    expect(parseDestinationTarget('http://sqs.us-east-1.localhost:4566/000000000000/out.fifo')).toMatchObject({ kind: 'sqs', fifo: true });
    expect(parseDestinationTarget('arn:aws-cn:sns:cn-north-1:123456789012:t')).toMatchObject({ kind: 'sns', fifo: false });
  });

  it('reads EventBridge event bus ARNs', () => {
    const eventBusArn = 'arn:aws:events:eu-west-1:123456789012:event-bus/orders';
    expect(parseDestinationTarget(eventBusArn)).toEqual({ kind: 'eventBridge', eventBusArn });
  });

  it('says what is wrong with anything else', () => {
    expect(() => parseDestinationTarget('arn:aws:events:eu-west-1:123456789012:rule/orders')).toThrow(
      /EventBridge ARN but not an event bus/,
    );
    expect(() => parseDestinationTarget('arn:aws:sqs:eu-west-1:123456789012:audit')).toThrow(/queue ARN: give the queue URL/);
    expect(() => parseDestinationTarget('payments')).toThrow(/neither an SNS topic ARN, an SQS queue URL nor an EventBridge event bus ARN/);
  });
});

describe('the relay environment', () => {
  it('round-trips through outboxRelayEnvironment and readOutboxRelayConfig', () => {
    const settings = outboxRelaySettings({ publishedTtlSeconds: 600, idempotencyTtlSeconds: 200_000 });
    const environment = outboxRelayEnvironment(settings, {
      consumerName: 'payments',
      inboxTable: 'Inbox-1',
      idempotencyTable: 'Idem-1',
      destinations: { default: topicArn, auditTrail: queueUrl },
    });
    expect(environment).toMatchObject({
      OUTBOX_DESTINATION_DEFAULT: topicArn,
      OUTBOX_DESTINATION_AUDIT_TRAIL: queueUrl,
      CONSUMER_NAME: 'payments',
    });
    const config = readOutboxRelayConfig(environment);
    expect(config).toEqual({
      consumerName: 'payments',
      inboxTable: 'Inbox-1',
      idempotencyTable: 'Idem-1',
      publishedTtlSeconds: 600,
      idempotencyTtlSeconds: 200_000,
      destinations: {
        OUTBOX_DESTINATION_DEFAULT: { kind: 'sns', topicArn, fifo: true },
        OUTBOX_DESTINATION_AUDIT_TRAIL: { kind: 'sqs', queueUrl, fifo: false },
      },
    });
    expect(destinationEnvironmentVariable('auditTrail')).toBe('OUTBOX_DESTINATION_AUDIT_TRAIL');
  });

  it('uses the default TTLs when their variables are unset', () => {
    const config = readOutboxRelayConfig({ CONSUMER_NAME: 'c', INBOX_TABLE_NAME: 'i', IDEMPOTENCY_TABLE_NAME: 'd' });
    expect(config.publishedTtlSeconds).toBe(defaultOutboxRelaySettings.publishedTtlSeconds);
    expect(config.idempotencyTtlSeconds).toBe(defaultOutboxRelaySettings.idempotencyTtlSeconds);
    expect(config.destinations).toEqual({});
  });

  it('names every missing or malformed variable at once', () => {
    let caught: unknown;
    try {
      readOutboxRelayConfig({ CONSUMER_NAME: 'bad name', OUTBOX_PUBLISHED_TTL_SECONDS: '1.5', OUTBOX_DESTINATION_DEFAULT: 'nowhere' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EnvironmentError);
    const problems = (caught as EnvironmentError).problems.join('\n');
    expect(problems).toMatch(/INBOX_TABLE_NAME is not set/);
    expect(problems).toMatch(/IDEMPOTENCY_TABLE_NAME is not set/);
    expect(problems).toMatch(/OUTBOX_PUBLISHED_TTL_SECONDS must be a whole number/);
    expect(problems).toMatch(/OUTBOX_DESTINATION_DEFAULT: "nowhere" is neither/);
    expect(problems).toMatch(/CONSUMER_NAME must be 1 to 64/);
  });

  it('refuses a destination name that cannot be a variable', () => {
    expect(() => destinationEnvironmentVariable('audit-trail')).toThrow(/must be 1 to 64 letters/);
  });
});

describe('relay settings', () => {
  it('the defaults hold every rule', () => {
    expect(outboxRelaySettingsProblems(defaultOutboxRelaySettings)).toEqual([]);
  });

  it('refuses infinite retries, out-of-range batches and a too short idempotency window', () => {
    const problems = outboxRelaySettingsProblems(
      outboxRelaySettings({ retryAttempts: -1, batchSize: 20_000, idempotencyTtlSeconds: 3600, maxRecordAgeSeconds: 30 }),
    );
    expect(problems.join('\n')).toMatch(/retryAttempts -1 .*finite/);
    expect(problems.join('\n')).toMatch(/batchSize 20000/);
    expect(problems.join('\n')).toMatch(/idempotencyTtlSeconds 3600 .*24 hours/);
    expect(problems.join('\n')).toMatch(/maxRecordAgeSeconds 30/);
    expect(problems).toHaveLength(4);
  });
});
