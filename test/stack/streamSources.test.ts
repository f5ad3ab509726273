import { beforeAll, describe, expect, it } from 'vitest';
import { type App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Annotations, Match, type Template } from 'aws-cdk-lib/assertions';
import { AttributeType, StreamViewType, Table, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Stream } from 'aws-cdk-lib/aws-kinesis';
import { Key } from 'aws-cdk-lib/aws-kms';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { ConsumerMonitoring } from '../../packages/cdk/src/ConsumerMonitoring.js';
import { IdempotentConsumer, type IdempotentConsumerProps } from '../../packages/cdk/src/IdempotentConsumer.js';
import { requiredStreamRetryAttempts } from '../../packages/cdk/src/streamMapping.js';
import {
  acknowledgedRules,
  allAllowedActions,
  arnOf,
  awsSolutionsViolations,
  fixtureEntry,
  newApp,
  refOf,
  refusal,
  resourcesAllowing,
  skipBundling,
  sourceBundling,
  synthConsumer,
} from './stackHelpers.js';

/** The template's stream event source mappings (Kinesis or DynamoDB Streams: those with a `ParallelizationFactor`). */
function streamMappings(template: Template): Record<string, { Properties: Record<string, unknown> }> {
  return template.findResources('AWS::Lambda::EventSourceMapping', {
    Properties: { ParallelizationFactor: Match.anyValue() },
  }) as Record<string, { Properties: Record<string, unknown> }>;
}

/** The only stream mapping's properties. */
function streamMapping(template: Template): Record<string, unknown> {
  const mappings = Object.values(streamMappings(template));
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties;
}

/** The Kinesis read actions `KinesisEventSource` grants (`stream.grantRead`), sorted. */
const KINESIS_READ_ACTIONS = [
  'kinesis:DescribeStream',
  'kinesis:DescribeStreamConsumer',
  'kinesis:DescribeStreamSummary',
  'kinesis:GetRecords',
  'kinesis:GetShardIterator',
  'kinesis:ListShards',
  'kinesis:ListStreams',
  'kinesis:SubscribeToShard',
];

/** A consumer with a Kinesis source and its monitoring. */
function synthKinesis(options: { props?: Partial<IdempotentConsumerProps>; extra?: (stack: Stack) => Partial<IdempotentConsumerProps> }) {
  let monitoring: ConsumerMonitoring | undefined;
  const synth = synthConsumer({
    props: { kinesis: {}, ...options.props },
    extra: options.extra,
    after: (stack, consumer) => {
      monitoring = new ConsumerMonitoring(stack, 'Monitoring', { consumer });
    },
  });
  return { ...synth, monitoring: monitoring! };
}

describe('IdempotentConsumer with a Kinesis source and a stream it creates', () => {
  let stack: Stack;
  let consumer: IdempotentConsumer;
  let template: Template;
  let monitoring: ConsumerMonitoring;

  beforeAll(() => {
    ({ stack, consumer, template, monitoring } = synthKinesis({}));
  });

  it('creates an on-demand stream encrypted with the AWS managed key aws/kinesis, 24 hours of retention, retained with the stack', () => {
    template.resourceCountIs('AWS::Kinesis::Stream', 1);
    template.hasResource('AWS::Kinesis::Stream', {
      Properties: {
        StreamModeDetails: { StreamMode: 'ON_DEMAND' },
        StreamEncryption: { EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' },
        RetentionPeriodHours: 24,
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  it('maps the stream to the consumer function with partial batch responses, no bisect, one batch per shard and finite retries', () => {
    const properties = streamMapping(template);

    expect(requiredStreamRetryAttempts(withOverrides(), 100)).toBe(5 * 100 - 1 + 5);
    expect(properties).toMatchObject({
      EventSourceArn: arnOf(consumer.kinesisSource!.stream),
      FunctionName: refOf(consumer.function),
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: false,
      ParallelizationFactor: 1,
      MaximumRetryAttempts: 504,
      MaximumRecordAgeInSeconds: -1,
      DestinationConfig: { OnFailure: { Destination: arnOf(consumer.deadLetterQueue) } },
      MetricsConfig: { Metrics: ['EventCount'] },
    });
    expect(properties.MaximumBatchingWindowInSeconds).toBeUndefined();
    // The SQS mapping stays beside it.
    expect(
      Object.keys(template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { FunctionName: refOf(consumer.function) } })),
    ).toHaveLength(2);
  });

  it("may read the stream (the L2's grant) and send to the dead-letter queue, and may not write to the stream", () => {
    const onStream = resourcesAllowing(template, 'kinesis:GetRecords');
    expect(onStream).toEqual([arnOf(consumer.kinesisSource!.stream)]);
    expect(allAllowedActions(template).filter((action) => action.startsWith('kinesis:'))).toEqual(KINESIS_READ_ACTIONS);
    expect(resourcesAllowing(template, 'sqs:SendMessage')).toContainEqual(arnOf(consumer.deadLetterQueue));
  });

  it('adds the IteratorAge alarm (5 minutes, 3 periods, 300 s in milliseconds) and a dashboard row', () => {
    expect(monitoring.alarms.streamIteratorAge).toBeDefined();
    expect(monitoring.alarms.kafkaOffsetLag).toBeUndefined();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'IteratorAge',
      Namespace: 'AWS/Lambda',
      Statistic: 'Maximum',
      Period: 300,
      EvaluationPeriods: 3,
      Threshold: 300_000,
      ComparisonOperator: 'GreaterThanThreshold',
      Dimensions: [{ Name: 'FunctionName', Value: refOf(consumer.function) }],
    });
  });

  it('reports no cdk-nag finding that is not acknowledged, and acknowledges nothing new for Kinesis', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
    expect([...acknowledgedRules(stack).keys()].filter((id) => id.includes('KDS'))).toEqual([]);
  });
});

describe('IdempotentConsumer with a Kinesis source: options', () => {
  it('reads a given stream, and may decrypt it with its customer managed key', () => {
    const { template, stack } = synthKinesis({
      extra: (s) => {
        const key = new Key(s, 'StreamKey', { enableKeyRotation: true, removalPolicy: RemovalPolicy.DESTROY });
        const stream = Stream.fromStreamAttributes(s, 'Given', {
          streamArn: 'arn:aws:kinesis:us-east-1:123456789012:stream/orders',
          encryptionKey: key,
        });
        return { kinesis: { stream, startingPosition: 'LATEST', batchSize: 500, maxBatchingWindowSeconds: 5 } };
      },
    });

    template.resourceCountIs('AWS::Kinesis::Stream', 0);
    expect(streamMapping(template)).toMatchObject({
      EventSourceArn: 'arn:aws:kinesis:us-east-1:123456789012:stream/orders',
      StartingPosition: 'LATEST',
      BatchSize: 500,
      MaximumBatchingWindowInSeconds: 5,
      MaximumRetryAttempts: 5 * 500 - 1 + 5,
    });
    expect(resourcesAllowing(template, 'kms:Decrypt')).toContainEqual(arnOf(stack.node.findChild('StreamKey')));
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('encrypts a new stream with the given customer managed key, acknowledging AwsSolutions-KDS3 with its reason', () => {
    const { template, stack, consumer } = synthKinesis({
      extra: (s) => ({ kinesis: { encryptionKey: new Key(s, 'StreamKey', { enableKeyRotation: true }), retentionHours: 48 } }),
    });

    template.hasResourceProperties('AWS::Kinesis::Stream', {
      StreamEncryption: { EncryptionType: 'KMS', KeyId: arnOf(stack.node.findChild('StreamKey')) },
      RetentionPeriodHours: 48,
    });
    expect(consumer.kinesisSource!.retentionHours).toBe(48);
    expect(acknowledgedRules(stack).get('AwsSolutions-KDS3')).toMatch(/customer managed key the app gave/);
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('sets the parallelization factor and the maximum record age when given, and a threshold of the iterator age alarm', () => {
    const { template } = synthConsumer({
      props: { kinesis: { parallelizationFactor: 4, maxRecordAgeSeconds: 3600, retryAttempts: 600 } },
      after: (stack, consumer) => new ConsumerMonitoring(stack, 'Monitoring', { consumer, streamIteratorAgeThresholdSeconds: 60 }),
    });

    expect(streamMapping(template)).toMatchObject({ ParallelizationFactor: 4, MaximumRecordAgeInSeconds: 3600, MaximumRetryAttempts: 600 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'IteratorAge', Threshold: 60_000 });
  });
});

describe('IdempotentConsumer with a DynamoDB Streams source', () => {
  let stack: Stack;
  let consumer: IdempotentConsumer;
  let template: Template;
  let table: Table;

  beforeAll(() => {
    ({ stack, consumer, template } = synthConsumer({
      extra: (s) => {
        table = new Table(s, 'Orders', {
          partitionKey: { name: 'id', type: AttributeType.STRING },
          stream: StreamViewType.NEW_AND_OLD_IMAGES,
          pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        });
        return { dynamoDbStream: { table } };
      },
      after: (s, c) => new ConsumerMonitoring(s, 'Monitoring', { consumer: c }),
    }));
  });

  it("maps the table's stream to the consumer function with the same guarantees", () => {
    expect(streamMapping(template)).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [refOf(table).Ref, 'StreamArn'] },
      FunctionName: refOf(consumer.function),
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: false,
      ParallelizationFactor: 1,
      MaximumRetryAttempts: 504,
      MaximumRecordAgeInSeconds: -1,
      DestinationConfig: { OnFailure: { Destination: arnOf(consumer.deadLetterQueue) } },
      MetricsConfig: { Metrics: ['EventCount'] },
    });
  });

  it("may read the table's stream, and list streams (no resource-level permission), acknowledged for cdk-nag with its reason", () => {
    const streamArn = { 'Fn::GetAtt': [refOf(table).Ref, 'StreamArn'] };
    expect(resourcesAllowing(template, 'dynamodb:GetRecords')).toEqual([streamArn]);
    expect(resourcesAllowing(template, 'dynamodb:GetShardIterator')).toEqual([streamArn]);
    expect(resourcesAllowing(template, 'dynamodb:ListStreams')).toEqual(['*']);
    expect(acknowledgedRules(consumer.role).get('AwsSolutions-IAM5[Resource::*]')).toMatch(/dynamodb:ListStreams/);
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('adds the IteratorAge alarm', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'IteratorAge', Threshold: 300_000 });
  });

  it('accepts a TableV2 with a NEW_IMAGE stream', () => {
    const { template: v2 } = synthConsumer({
      extra: (s) => ({
        dynamoDbStream: {
          table: new TableV2(s, 'Items', {
            partitionKey: { name: 'id', type: AttributeType.STRING },
            dynamoStream: StreamViewType.NEW_IMAGE,
          }),
        },
      }),
    });
    expect(Object.keys(streamMappings(v2))).toHaveLength(1);
  });

  it('warns, for an imported table, that its view type cannot be checked', () => {
    const { stack: imported } = synthConsumer({
      extra: (s) => ({
        dynamoDbStream: {
          table: Table.fromTableAttributes(s, 'Imported', {
            tableName: 'orders',
            tableStreamArn: 'arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000',
          }),
        },
      }),
    });
    Annotations.fromStack(imported).hasWarning('*', Match.stringLikeRegexp('make sure its stream.s view type is NEW_IMAGE'));
  });
});

describe('synth-time validation of the stream sources', () => {
  /** The refusal of a consumer built with the props `extra` returns (made there, so tables exist); nothing of the consumer is created. */
  const refused = (extra: (stack: Stack) => Partial<IdempotentConsumerProps>): InvalidSettingsError => {
    const app = newApp(skipBundling);
    const { error, resources } = refusal(app, (a) => {
      const stack = new Stack(a, 'Refused');
      new IdempotentConsumer(stack, 'Consumer', { entry: fixtureEntry, bundling: sourceBundling, ...extra(stack) });
    });
    expect(error).toBeInstanceOf(InvalidSettingsError);
    // Only what `extra` made (a table, a key) exists: the consumer built nothing.
    expect(resources).toBeLessThanOrEqual(1);
    return error as InvalidSettingsError;
  };
  const table = (stack: Stack, stream?: StreamViewType) =>
    new Table(stack, 'Orders', { partitionKey: { name: 'id', type: AttributeType.STRING }, stream });

  it('refuses a table without a stream, or with a stream that does not carry the new image', () => {
    expect(refused((s) => ({ dynamoDbStream: { table: table(s) } })).message).toMatch(
      /has no stream: create it with stream: StreamViewType\.NEW_IMAGE/,
    );
    expect(refused((s) => ({ dynamoDbStream: { table: table(s, StreamViewType.KEYS_ONLY) } })).message).toMatch(
      /view type KEYS_ONLY: .* must be NEW_IMAGE or NEW_AND_OLD_IMAGES/,
    );
    expect(refused((s) => ({ dynamoDbStream: { table: table(s, StreamViewType.OLD_IMAGE) } })).message).toMatch(/view type OLD_IMAGE/);
  });

  it('refuses infinite retries, and fewer than the attempts need, naming the rule', () => {
    expect(refused(() => ({ kinesis: { retryAttempts: -1 } })).message).toMatch(
      /Kinesis retry attempts -1 must be an integer from 0 to 10000 \(rule: stream retries must be finite/,
    );
    expect(refused((s) => ({ dynamoDbStream: { table: table(s, StreamViewType.NEW_IMAGE), retryAttempts: 10 } })).message).toMatch(
      /DynamoDB Streams retry attempts 10 are below 504 = maxAttempts 5 × batch size 100 − 1 \+ 5/,
    );
  });

  it("refuses values outside AWS's ranges", () => {
    const error = refused(() => ({
      kinesis: { batchSize: 20_000, parallelizationFactor: 11, maxBatchingWindowSeconds: 301, maxRecordAgeSeconds: 30, retentionHours: 12 },
    }));
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/Kinesis batch size 20000 must be an integer from 1 to 10000/),
        expect.stringMatching(/Kinesis parallelization factor 11 must be an integer from 1 to 10/),
        expect.stringMatching(/Kinesis maximum batching window 301 s/),
        expect.stringMatching(/Kinesis maximum record age 30 s must be -1/),
        expect.stringMatching(/Kinesis stream retention 12 hours must be an integer from 24 to 8760/),
      ]),
    );
  });

  it("refuses a stream whose retention outlasts the inbox window (the rule of the windows, with the stream's retention)", () => {
    const error = refused(() => ({ kinesis: { retentionHours: 8760 } }));
    expect(error.message).toMatch(
      /inbox TTL 2592000 s \(30 days\) is shorter than Kinesis stream retention 8760 hours \+ dead-letter queue retention/,
    );
    // A maximum record age bounds what a mapping reads again: then the same stream is accepted.
    expect(() => synthConsumer({ props: { kinesis: { retentionHours: 8760, maxRecordAgeSeconds: 604_800 } } })).not.toThrow();
  });

  it('refuses a stream source on a FIFO queue: the on-failure destination (the DLQ) would be FIFO', () => {
    const fifo = withOverrides({ queue: { fifo: true } });
    expect(refused(() => ({ settings: fifo, kinesis: {} })).message).toMatch(/a Kinesis event source needs a standard dead-letter queue/);
  });

  it('refuses an encryption key for a given stream', () => {
    expect(
      refused((s) => ({
        kinesis: {
          stream: Stream.fromStreamArn(s, 'Given', 'arn:aws:kinesis:us-east-1:123456789012:stream/orders'),
          encryptionKey: new Key(s, 'K'),
        },
      })).message,
    ).toMatch(/encryptionKey applies to a new stream only/);
  });

  it('refuses a non-positive iterator age threshold', () => {
    const { stack, consumer } = synthConsumer({ props: { kinesis: {} } });
    expect(() => new ConsumerMonitoring(stack, 'Monitoring', { consumer, streamIteratorAgeThresholdSeconds: 0 })).toThrow(
      /stream iterator age threshold 0 s must be a positive whole number of seconds/,
    );
  });

  it('fails synth when an escape hatch bisects, makes the retries infinite or removes the on-failure destination', () => {
    const { stack, consumer } = synthConsumer({ props: { kinesis: {} } });
    const cfn = consumer.kinesisSource!.cfnMapping;
    cfn.bisectBatchOnFunctionError = true;
    cfn.maximumRetryAttempts = -1;
    cfn.destinationConfig = undefined;
    cfn.parallelizationFactor = 2;
    const app = stack.node.root as App;

    expect(() => app.synth({ force: true })).toThrow(/must not bisect batches \(BisectBatchOnFunctionError: false\)/);
    expect(() => app.synth({ force: true })).toThrow(/MaximumRetryAttempts -1: it must be 0 to 10000/);
    expect(() => app.synth({ force: true })).toThrow(/no on-failure destination/);
    expect(() => app.synth({ force: true })).toThrow(/ParallelizationFactor 2, not 1/);
  });
});
