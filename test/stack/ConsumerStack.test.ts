import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AssetStaging, type CfnElement } from 'aws-cdk-lib';
import type { CfnQueue } from 'aws-cdk-lib/aws-sqs';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { defaultSettings, lambdaEnvironment, withOverrides } from '../../config/settings.js';
import type { ConsumerStack } from '../../lib/ConsumerStack.js';
import { acknowledgedRules, awsSolutionsViolations, synthConsumerStack } from './synthConsumerStack.js';

// Bundling runs esbuild on the real handler: synthesize once for the whole file.
let stack: ConsumerStack;
let template: Template;

beforeAll(() => {
  ({ stack, template } = synthConsumerStack());
});

/** `{ Ref: <logical id> }` of a construct's CloudFormation resource. */
const ref = (construct: IConstruct) => ({ Ref: stack.getLogicalId(construct.node.defaultChild as CfnElement) });
/** `{ Fn::GetAtt: [<logical id>, 'Arn'] }` of a construct's CloudFormation resource. */
const arn = (construct: IConstruct) => ({
  'Fn::GetAtt': [stack.getLogicalId(construct.node.defaultChild as CfnElement), 'Arn'],
});

interface PolicyStatement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
}

/** The `Allow` statements of the stack's IAM policies that grant `action` on `resource`. */
function allowedStatements(action: string, resource: unknown): PolicyStatement[] {
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as {
    Properties: { PolicyDocument: { Statement: PolicyStatement[] } };
  }[];
  const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
  return policies
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
    .filter(
      (statement) =>
        statement.Effect === 'Allow' &&
        asArray(statement.Action).includes(action) &&
        asArray(statement.Resource).some((r) => JSON.stringify(r) === JSON.stringify(resource)),
    );
}

describe('ConsumerStack (default settings): source queue', () => {
  it('is a standard queue with the visibility timeout, retention and size from the settings', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: Match.stringLikeRegexp('-OrdersQueue$'),
      VisibilityTimeout: 180,
      MessageRetentionPeriod: defaultSettings.queue.retentionPeriodSeconds,
      MaximumMessageSize: defaultSettings.queue.maxMessageSizeBytes,
      SqsManagedSseEnabled: true,
      FifoQueue: Match.absent(),
    });
  });

  it('redrives to the dead-letter queue after maxReceiveCount (5) receives', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: defaultSettings.queue.visibilityTimeoutSeconds,
      RedrivePolicy: { deadLetterTargetArn: arn(stack.consumer.deadLetterQueue), maxReceiveCount: 5 },
    });
  });

  it('denies every request that does not use TLS, on both queues', () => {
    for (const queue of [stack.consumer.queue, stack.consumer.deadLetterQueue]) {
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [ref(queue)],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Action: 'sqs:*',
              Principal: { AWS: '*' },
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ]),
        },
      });
    }
  });
});

describe('ConsumerStack (default settings): dead-letter queue', () => {
  it('keeps messages 14 days and accepts 1 MiB, room for the largest body beside its reason', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      MaximumMessageSize: 1_048_576,
      MessageRetentionPeriod: defaultSettings.queue.deadLetterRetentionPeriodSeconds,
      SqsManagedSseEnabled: true,
      RedrivePolicy: Match.absent(),
    });
  });

  it('is retained when the stack is deleted: it holds the messages nobody could process', () => {
    template.hasResource('AWS::SQS::Queue', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: { MaximumMessageSize: 1_048_576 },
    });
  });

  it('allows only the source queue to use it as a dead-letter queue', () => {
    const sourceQueueName = (stack.consumer.queue.node.defaultChild as CfnQueue).queueName;
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedriveAllowPolicy: {
        redrivePermission: 'byQueue',
        sourceQueueArns: [
          {
            'Fn::Join': [
              '',
              [
                'arn:',
                { Ref: 'AWS::Partition' },
                ':sqs:',
                { Ref: 'AWS::Region' },
                ':',
                { Ref: 'AWS::AccountId' },
                `:${sourceQueueName}`,
              ],
            ],
          },
        ],
      },
    });
    expect(sourceQueueName).toMatch(/^IdempotentConsumer-[0-9A-F]{8}-OrdersQueue$/);
  });
});

describe('ConsumerStack (default settings): tables', () => {
  const tables = [
    {
      name: 'inbox',
      keySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      attributes: [{ AttributeName: 'pk', AttributeType: 'S' }],
      ttl: { AttributeName: 'expiresAt', Enabled: true },
    },
    {
      name: 'orders',
      keySchema: [
        { AttributeName: 'orderId', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      attributes: [
        { AttributeName: 'orderId', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      ttl: Match.absent(),
    },
    {
      name: 'idempotency',
      keySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      attributes: [{ AttributeName: 'id', AttributeType: 'S' }],
      ttl: { AttributeName: 'expiration', Enabled: true },
    },
  ] as const;

  it('creates exactly the three tables', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 3);
  });

  it.each(tables)('$name: on demand, point-in-time recovery, retained, keys and TTL from the settings', (table) => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: table.keySchema,
        AttributeDefinitions: table.attributes,
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: table.ttl,
        TableName: Match.absent(),
      },
    });
  });
});

describe('ConsumerStack (default settings): function', () => {
  it('runs nodejs22.x on arm64 with the timeout and memory from the settings', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: defaultSettings.function.timeoutSeconds,
      MemorySize: defaultSettings.function.memorySizeMb,
      TracingConfig: Match.absent(),
    });
  });

  it('gets exactly the environment built by lambdaEnvironment(), plus Powertools and source maps', () => {
    const { consumer } = stack;
    const settingsEnvironment = stack.resolve(
      lambdaEnvironment(defaultSettings, {
        inboxTable: consumer.inboxTable.tableName,
        ordersTable: consumer.ordersTable.tableName,
        idempotencyTable: consumer.idempotencyTable.tableName,
        deadLetterQueueUrl: consumer.deadLetterQueue.queueUrl,
      }),
    ) as Record<string, unknown>;

    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectEquals({
          ...settingsEnvironment,
          POWERTOOLS_SERVICE_NAME: 'cafe-orders',
          POWERTOOLS_METRICS_NAMESPACE: 'IdempotentConsumer',
          POWERTOOLS_LOG_LEVEL: 'INFO',
          NODE_OPTIONS: '--enable-source-maps',
        }),
      },
    });
    expect(settingsEnvironment).toMatchObject({
      INBOX_TABLE_NAME: ref(consumer.inboxTable),
      DEAD_LETTER_QUEUE_URL: ref(consumer.deadLetterQueue),
      SOURCE_QUEUE_FIFO: 'false',
      MAX_RECEIVE_COUNT: '5',
    });
  });

  it('bundles lambda/handlers/index.ts, the entry that dispatches both SQS and Kafka events', () => {
    const staging = stack.consumer.function.node.findAll().find((c): c is AssetStaging => c instanceof AssetStaging);
    const bundle = readdirSync(staging!.absoluteStagedPath).find((file) => /^index\.m?js$/.test(file));
    const code = readFileSync(join(staging!.absoluteStagedPath, bundle!), 'utf8');

    expect(code).toContain('SelfManagedKafka');
    expect(code).toContain('aws:kafka');
  });

  it('logs to its own log group, kept one month', () => {
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    template.hasResourceProperties('AWS::Lambda::Function', {
      LoggingConfig: { LogGroup: ref(stack.consumer.logGroup) },
    });
  });

  it('has a role without AWS managed policies', () => {
    template.resourceCountIs('AWS::IAM::Role', 1);
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
  });

  it.each([
    ['dynamodb:GetItem', 'inboxTable'],
    ['dynamodb:PutItem', 'inboxTable'],
    ['dynamodb:ConditionCheckItem', 'inboxTable'],
    ['dynamodb:GetItem', 'ordersTable'],
    ['dynamodb:UpdateItem', 'ordersTable'],
    ['dynamodb:PutItem', 'idempotencyTable'],
    ['dynamodb:DeleteItem', 'idempotencyTable'],
    ['sqs:SendMessage', 'deadLetterQueue'],
    ['sqs:ChangeMessageVisibility', 'queue'],
    ['sqs:DeleteMessage', 'queue'],
    ['logs:PutLogEvents', 'logGroup'],
  ] as const)('may call %s on its %s', (action, resource) => {
    expect(allowedStatements(action, arn(stack.consumer[resource]))).not.toHaveLength(0);
  });

  it('may not send to the source queue nor change the visibility of dead-lettered messages', () => {
    expect(allowedStatements('sqs:SendMessage', arn(stack.consumer.queue))).toHaveLength(0);
    expect(allowedStatements('sqs:ChangeMessageVisibility', arn(stack.consumer.deadLetterQueue))).toHaveLength(0);
  });
});

describe('ConsumerStack (default settings): event source mapping', () => {
  it('reports batch item failures, with the batch size and maximum concurrency from the settings', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: arn(stack.consumer.queue),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      ScalingConfig: { MaximumConcurrency: defaultSettings.function.maxConcurrency },
      MaximumBatchingWindowInSeconds: Match.absent(),
    });
  });

  it('sets the batching window when the settings have one', () => {
    const settings = withOverrides({
      function: { batchSize: 100, maxBatchingWindowSeconds: 2 },
      queue: { visibilityTimeoutSeconds: 182 },
    });
    const { template: withWindow } = synthConsumerStack({ settings });

    withWindow.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 2,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });
});

describe('ConsumerStack (default settings): outputs', () => {
  it.each([
    ['QueueUrl', () => ref(stack.consumer.queue)],
    ['DeadLetterQueueUrl', () => ref(stack.consumer.deadLetterQueue)],
    ['InboxTableName', () => ref(stack.consumer.inboxTable)],
    ['OrdersTableName', () => ref(stack.consumer.ordersTable)],
    ['IdempotencyTableName', () => ref(stack.consumer.idempotencyTable)],
    ['FunctionName', () => ref(stack.consumer.function)],
  ])('%s', (outputId, value) => {
    template.hasOutput(outputId, { Value: value() });
  });
});

describe('ConsumerStack (default settings): cdk-nag AWS Solutions', () => {
  it('reports no finding that is not acknowledged', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('acknowledges only the expected rules, each with a reason', () => {
    const rules = acknowledgedRules(stack);

    expect([...rules.keys()].sort()).toEqual(['AwsSolutions-L1']);
    for (const reason of rules.values()) expect(reason.length).toBeGreaterThan(40);
  });
});
