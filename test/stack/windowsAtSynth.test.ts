import { describe, expect, it } from 'vitest';
import { Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { IdempotentConsumer } from '../../packages/cdk/src/IdempotentConsumer.js';
import { CafeStack } from '../../examples/cafe/infra/CafeStack.js';
import { cafeSettings } from '../../examples/cafe/settings.js';
import { fixtureEntry, newApp, refusal, skipBundling, sourceBundling, synthConsumer } from './stackHelpers.js';

const DAY = 86_400;
const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';

describe('windows that agree, at synth', () => {
  it('refuses a café stack whose inbox TTL is shorter than source retention + DLQ retention, with the numbers, and only that', () => {
    const settings = withOverrides({ idempotency: { inboxTtlSeconds: 10 * DAY } }, cafeSettings);

    const { error } = refusal(newApp(skipBundling), (app) => new CafeStack(app, 'Refused', { settings }));

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain(
      'inbox TTL 864000 s (10 days) is shorter than source queue retention 345600 s (4 days) + ' +
        'dead-letter queue retention 1209600 s (14 days) = 1555200 s (18 days)',
    );
    expect(error.message).toContain('Fix: idempotency.inboxTtlSeconds ≥ 1555200');
    expect((error as InvalidSettingsError).problems).toHaveLength(1);
  });

  it('refuses a Kafka consumer whose inbox TTL does not cover the topic retention it states + DLQ retention', () => {
    const settings = withOverrides({ kafka: { topicRetentionHours: 720 } }, cafeSettings);

    const { error } = refusal(
      newApp({ ...skipBundling, kafkaClusterArn: clusterArn }),
      (app) => new CafeStack(app, 'Refused', { settings }),
    );

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('inbox TTL 2592000 s (30 days) is shorter than Kafka topic retention 720 hours');
    expect(error.message).toContain('= 3801600 s (44 days)');
  });

  it('warns, with the inbox TTL, when the Kafka topic keeps records forever; not without a Kafka source', () => {
    const settings = withOverrides({ kafka: { topicRetentionHours: -1 } }, cafeSettings);
    const withKafka = synthConsumer({ props: { settings, kafka: { clusterArn, consumerGroupId: 'orders' } } });
    const withoutKafka = synthConsumer({ props: { settings } });

    Annotations.fromStack(withKafka.stack).hasWarning(
      '/Generic/Consumer/KafkaSource',
      Match.stringLikeRegexp(
        'Kafka topic retention is unlimited \\(topicRetentionHours -1\\) and the inbox TTL is 2592000 s \\(30 days\\)',
      ),
    );
    Annotations.fromStack(withoutKafka.stack).hasNoWarning('*', Match.stringLikeRegexp('Kafka topic retention is unlimited'));
  });

  it('gives the payload bucket a lifecycle no shorter than the DLQ retention', () => {
    const { template } = synthConsumer({ props: { settings: withOverrides({ queue: { deadLetterRetentionPeriodSeconds: 10 * DAY } }) } });

    template.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ Id: 'ExpireDeadLetterPayloads', ExpirationInDays: 15 })]) },
    });
  });

  it('refuses an existing dead-letter queue that keeps messages longer than the settings say', () => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'Refused');
    const deadLetterQueue = new Queue(stack, 'D', { retentionPeriod: Duration.days(14) });
    const queue = new Queue(stack, 'Q', {
      visibilityTimeout: Duration.seconds(180),
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: 10 },
    });
    const settings = withOverrides({ queue: { deadLetterRetentionPeriodSeconds: 7 * DAY } });

    const { error } = refusal(
      app,
      () => new IdempotentConsumer(stack, 'Consumer', { entry: fixtureEntry, bundling: sourceBundling, existingQueue: queue, settings }),
    );

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain(
      'existingDeadLetterQueue keeps messages 1209600 s (14 days), longer than queue.deadLetterRetentionPeriodSeconds 604800 s (7 days)',
    );
    expect(Template.fromStack(stack).findResources('AWS::DynamoDB::Table')).toEqual({});
  });
});
