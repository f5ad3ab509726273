/**
 * The `OutboxRelay` construct, synthesized (bundling skipped except in one test): the stream
 * mapping with its filter, partial batch responses, bisect, finite retries and on-failure queue;
 * the destinations; least privilege; alarms and dashboard widgets; cdk-nag; refusals.
 */
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import { AttributeType, BillingMode, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import {
  InvalidOutboxRelaySettingsError,
  defaultOutboxRelaySettings,
  outboxRelaySettings,
} from '../../packages/idempotent-consumer/src/outbox/outboxRelaySettings.js';
import { outboxFilterPattern } from '../../packages/idempotent-consumer/src/outbox/outboxStreamRecords.js';
import { OutboxRelay, type OutboxRelayProps } from '../../packages/cdk/src/OutboxRelay.js';

const skipBundling = { 'aws:cdk:bundling-stacks': [] };

function synth(
  props: Partial<OutboxRelayProps> | ((stack: Stack) => Partial<OutboxRelayProps>) = {},
  options: { bundle?: boolean; stream?: boolean } = {},
) {
  const app = new App({ context: options.bundle === true ? {} : skipBundling });
  const stack = new Stack(app, 'RelayStack', { env: { account: '123456789012', region: 'eu-west-1' } });
  const inboxTable = new Table(stack, 'Inbox', {
    partitionKey: { name: 'pk', type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    timeToLiveAttribute: 'expiresAt',
    ...(options.stream === false ? {} : { stream: StreamViewType.NEW_IMAGE }),
  });
  const idempotencyTable = new Table(stack, 'Idempotency', {
    partitionKey: { name: 'id', type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
  });
  const extra = typeof props === 'function' ? props(stack) : props;
  const relay = new OutboxRelay(stack, 'OutboxRelay', {
    consumerName: 'payments',
    inboxTable,
    idempotencyTable,
    destination: { create: 'topic' },
    ...extra,
  });
  return { stack, relay, inboxTable, idempotencyTable, template: Template.fromStack(stack) };
}

const ref = (stack: Stack, construct: IConstruct) => ({ Ref: stack.getLogicalId(construct.node.defaultChild as CfnElement) });
const arn = (stack: Stack, construct: IConstruct) => ({
  'Fn::GetAtt': [stack.getLogicalId(construct.node.defaultChild as CfnElement), 'Arn'],
});

interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: unknown;
}
function statements(template: Template): Statement[] {
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as {
    Properties: { PolicyDocument: { Statement: Statement[] } };
  }[];
  return policies.flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}
const actionsOf = (statement: Statement) => (Array.isArray(statement.Action) ? statement.Action : [statement.Action]);

describe('OutboxRelay', () => {
  it('maps the inbox stream to the relay with the outbox filter, partial batch responses, bisect, finite retries and an SQS on-failure destination', () => {
    const { stack, relay, inboxTable, template } = synth();
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    const mapping = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'))[0] as { Properties: Record<string, unknown> };
    expect(mapping.Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [stack.getLogicalId(inboxTable.node.defaultChild as CfnElement), 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: defaultOutboxRelaySettings.retryAttempts,
      BatchSize: defaultOutboxRelaySettings.batchSize,
      MaximumBatchingWindowInSeconds: defaultOutboxRelaySettings.maxBatchingWindowSeconds,
      ParallelizationFactor: 1,
      DestinationConfig: { OnFailure: { Destination: arn(stack, relay.onFailureQueue) } },
    });
    const filters = (mapping.Properties['FilterCriteria'] as { Filters: { Pattern: string }[] }).Filters;
    expect(filters.map((filter) => JSON.parse(filter.Pattern))).toEqual([outboxFilterPattern('payments')]);
    template.hasResourceProperties('AWS::SQS::Queue', {
      MessageRetentionPeriod: 14 * 24 * 3600,
      SqsManagedSseEnabled: true,
      FifoQueue: Match.absent(),
    });
  });

  it('gives the function the relay environment, a FIFO topic encrypted with the SNS key, and settings from the one source', () => {
    const settings = outboxRelaySettings({
      batchSize: 50,
      retryAttempts: 3,
      timeoutSeconds: 20,
      memorySizeMb: 512,
      publishedTtlSeconds: 3600,
      maxRecordAgeSeconds: 3600,
    });
    const { stack, relay, inboxTable, idempotencyTable, template } = synth({ settings });
    const topic = relay.destinations['default']!;
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Timeout: 20,
      MemorySize: 512,
      Environment: {
        Variables: Match.objectLike({
          CONSUMER_NAME: 'payments',
          INBOX_TABLE_NAME: ref(stack, inboxTable),
          IDEMPOTENCY_TABLE_NAME: ref(stack, idempotencyTable),
          OUTBOX_DESTINATION_DEFAULT: ref(stack, topic),
          OUTBOX_PUBLISHED_TTL_SECONDS: '3600',
          OUTBOX_IDEMPOTENCY_TTL_SECONDS: String(defaultOutboxRelaySettings.idempotencyTtlSeconds),
          POWERTOOLS_METRICS_NAMESPACE: 'IdempotentConsumer',
        }),
      },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 50,
      MaximumRetryAttempts: 3,
      MaximumRecordAgeInSeconds: 3600,
    });
    template.hasResourceProperties('AWS::SNS::Topic', {
      FifoTopic: true,
      ContentBasedDeduplication: false,
      TopicName: Match.stringLikeRegexp('\\.fifo$'),
    });
    const [createdTopic] = Object.values(template.findResources('AWS::SNS::Topic')) as { Properties: { KmsMasterKeyId: unknown } }[];
    expect(JSON.stringify(createdTopic?.Properties.KmsMasterKeyId)).toContain('alias/aws/sns');
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
  });

  it('grants least privilege: the mark on outbox keys only, Powertools on the consumer’s keys only, publish to its destinations, no managed policy', () => {
    const { stack, relay, inboxTable, idempotencyTable, template } = synth({ destinations: { audit: { create: 'queue', fifo: false } } });
    const all = statements(template).filter((statement) => statement.Effect === 'Allow');
    const onInbox = all.filter((statement) => JSON.stringify(statement.Resource) === JSON.stringify(arn(stack, inboxTable)));
    expect(onInbox.flatMap(actionsOf)).toEqual(['dynamodb:UpdateItem']);
    expect(onInbox[0]?.Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['payments#outbox#*'] } });
    const onIdempotency = all.filter((statement) => JSON.stringify(statement.Resource) === JSON.stringify(arn(stack, idempotencyTable)));
    expect(onIdempotency.flatMap(actionsOf).sort()).toEqual([
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
    ]);
    expect(onIdempotency[0]?.Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['payments#*'] } });
    expect(all.filter((statement) => actionsOf(statement).includes('sns:Publish')).map((s) => s.Resource)).toEqual([
      ref(stack, relay.destinations['default']!),
    ]);
    expect(
      all
        .filter((statement) => actionsOf(statement).includes('sqs:SendMessage'))
        .map((s) => JSON.stringify(s.Resource))
        .sort(),
    ).toEqual([arn(stack, relay.destinations['audit']!), arn(stack, relay.onFailureQueue)].map((r) => JSON.stringify(r)).sort());
    const wildcards = all.filter((statement) => JSON.stringify(statement.Resource) === '"*"');
    // dynamodb:ListStreams (the stream's event source), and the two X-Ray actions of active tracing.
    expect(wildcards.flatMap(actionsOf).sort()).toEqual(['dynamodb:ListStreams', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    expect(all.some((statement) => actionsOf(statement).some((action) => action.endsWith(':*')))).toBe(false);
    const roles = Object.values(template.findResources('AWS::IAM::Role')) as { Properties: { ManagedPolicyArns?: unknown } }[];
    expect(roles.every((role) => role.Properties.ManagedPolicyArns === undefined)).toBe(true);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ OUTBOX_DESTINATION_AUDIT: ref(stack, relay.destinations['audit']!) }) },
    });
  });

  it('publishes to an existing queue passed in, by its URL', () => {
    const existingArn = 'arn:aws:sqs:eu-west-1:123456789012:payments-events.fifo';
    const { template } = synth((stack) => ({ destination: { queue: Queue.fromQueueArn(stack, 'Existing', existingArn) } }));
    template.resourceCountIs('AWS::SNS::Topic', 0);
    const [fn] = Object.values(template.findResources('AWS::Lambda::Function')) as {
      Properties: { Environment: { Variables: Record<string, unknown> } };
    }[];
    const url = JSON.stringify(fn?.Properties.Environment.Variables['OUTBOX_DESTINATION_DEFAULT']); // https://sqs.eu-west-1.${AWS::URLSuffix}/123456789012/payments-events.fifo
    expect(url).toContain('https://sqs.eu-west-1.');
    expect(url).toContain('/123456789012/payments-events.fifo');
    expect(
      statements(template).some(
        (s) => actionsOf(s).includes('sqs:SendMessage') && JSON.stringify(s.Resource) === JSON.stringify(existingArn),
      ),
    ).toBe(true);
  });

  it('has alarms for errors, publish failures, iterator age, publish delay and the on-failure queue, and adds its widgets to a dashboard', () => {
    const { stack, relay, template } = synth({ oldestUnpublishedAgeThresholdSeconds: 120 });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 5);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'IteratorAge',
      Namespace: 'AWS/Lambda',
      Statistic: 'Maximum',
      Threshold: 120_000,
      EvaluationPeriods: 3,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'OutboxPublishDelay',
      Namespace: 'IdempotentConsumer',
      Dimensions: [{ Name: 'service', Value: 'payments' }],
      Statistic: 'Maximum',
      Threshold: 120_000,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'OutboxPublishFailures', Statistic: 'Sum', Threshold: 0 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Errors', Namespace: 'AWS/Lambda', Threshold: 0 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      TreatMissingData: 'ignore',
    });

    const dashboard = new Dashboard(stack, 'Dashboard');
    relay.addToDashboard(dashboard);
    const body = JSON.stringify(stack.resolve((dashboard.node.defaultChild as unknown as { dashboardBody: unknown }).dashboardBody));
    for (const name of [
      'OutboxMessagesPublished',
      'OutboxPublishFailures',
      'OutboxPublishDelay',
      'IteratorAge',
      'ApproximateNumberOfMessagesVisible',
    ])
      expect(body).toContain(name);
  });

  it('passes the AWS Solutions checks (cdk-nag), with its acknowledgements', () => {
    const { relay } = synth();
    const violations = new AwsSolutionsChecks().validateScope(relay).violations;
    expect(
      violations.map((violation) => `${violation.ruleName}: ${violation.violatingResources.map((r) => r.resourceLogicalId).join(', ')}`),
    ).toEqual([]);
  });

  it('refuses an inbox table without a stream, bad settings and a bad destination name, before it builds anything', () => {
    expect(() => synth({}, { stream: false })).toThrow(/inbox table has no stream.*StreamViewType.NEW_IMAGE/);
    expect(() => synth({ settings: outboxRelaySettings({ retryAttempts: -1 }) })).toThrow(InvalidOutboxRelaySettingsError);
    expect(() => synth({ destinations: { 'audit-log': { create: 'queue' } } })).toThrow(/destination name "audit-log"/);
    expect(() => synth({ oldestUnpublishedAgeThresholdSeconds: 0 })).toThrow(/positive whole number of seconds/);
  });

  it('bundles the relay entry with the local esbuild', () => {
    const { template } = synth({}, { bundle: true });
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as { Properties: { Code: { S3Key?: unknown } } }[];
    expect(
      functions.some((fn) => typeof fn.Properties.Code.S3Key === 'string' && (fn.Properties.Code.S3Key as string).endsWith('.zip')),
    ).toBe(true);
  }, 180_000);
});
