import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AssetStaging, Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Role } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import {
  defaultSettings,
  lambdaEnvironment,
  maxReceiveCount,
  withOverrides,
} from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { selectConsumer } from '../../packages/cli/src/stackOutputs.js';
import { IdempotentConsumer, type IdempotentConsumerProps } from '../../packages/cdk/src/IdempotentConsumer.js';
import {
  acknowledgedRuleIds,
  CONSUMER_ACKNOWLEDGED_RULES,
  actionsOn,
  allAllowedActions,
  allowStatements,
  BUSINESS_ACTIONS,
  arnOf,
  awsSolutionsViolations,
  fixtureEntry,
  IDEMPOTENCY_ACTIONS,
  INBOX_ACTIONS,
  newApp,
  refOf,
  refusal,
  resourcesAllowing,
  skipBundling,
  sourceBundling,
  synthConsumer,
  TABLE_KEY_ACTIONS,
} from './stackHelpers.js';

/** Two business tables in `stack`, one with a sort key and a customer managed key of its own. */
function businessTables(stack: Stack): { orders: Table; stockItems: Table; stockKey: Key } {
  const stockKey = new Key(stack, 'StockKey', { enableKeyRotation: true });
  return {
    orders: new Table(stack, 'Orders', {
      partitionKey: { name: 'id', type: AttributeType.STRING },
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    }),
    stockItems: new Table(stack, 'StockItems', {
      partitionKey: { name: 'sku', type: AttributeType.STRING },
      sortKey: { name: 'warehouse', type: AttributeType.STRING },
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: stockKey,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    }),
    stockKey,
  };
}

describe('IdempotentConsumer: bundling the entry', () => {
  it('bundles the handler with esbuild into one ES module with a source map, resolving the package by name', () => {
    const { consumer, template } = synthConsumer({ bundle: true });

    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: defaultSettings.function.timeoutSeconds,
      MemorySize: defaultSettings.function.memorySizeMb,
      TracingConfig: { Mode: 'Active' },
    });
    const staging = consumer.function.node.findAll().find((c): c is AssetStaging => c instanceof AssetStaging);
    const files = readdirSync(staging!.absoluteStagedPath);
    expect(files.sort()).toEqual(['index.mjs', 'index.mjs.map']);
    const code = readFileSync(join(staging!.absoluteStagedPath, 'index.mjs'), 'utf8');
    // `environmentVariables.inboxTable` came from config/settings.ts through `idempotent-consumer/settings`.
    expect(code).toContain('INBOX_TABLE_NAME');
    expect(code).toMatch(/export\s*\{/);
    expect(code).toContain('createRequire');
  });
});

describe('IdempotentConsumer (default settings, business tables)', () => {
  let stack: Stack;
  let consumer: IdempotentConsumer;
  let template: Template;
  let tables: ReturnType<typeof businessTables>;

  beforeAll(() => {
    ({ stack, consumer, template } = synthConsumer({
      props: { environment: { NOTIFIER_URL: 'https://example.com/notify' } },
      extra: (s) => {
        tables = businessTables(s);
        return { tables: { orders: tables.orders, stockItems: tables.stockItems } };
      },
    }));
  });

  it("creates a standard source queue, retained, with the settings' visibility, retention and size, and a generated name", () => {
    template.hasResource('AWS::SQS::Queue', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        QueueName: Match.stringLikeRegexp('^Generic-Consumer-[0-9A-F]{8}-Queue$'),
        VisibilityTimeout: defaultSettings.queue.visibilityTimeoutSeconds,
        MessageRetentionPeriod: defaultSettings.queue.retentionPeriodSeconds,
        MaximumMessageSize: defaultSettings.queue.maxMessageSizeBytes,
        SqsManagedSseEnabled: true,
        FifoQueue: Match.absent(),
      },
    });
  });

  it('redrives to the dead-letter queue after maxReceiveCount(settings) receives: maxAttempts + 5 = 10', () => {
    expect(maxReceiveCount(defaultSettings)).toBe(10);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: arnOf(consumer.deadLetterQueue), maxReceiveCount: 10 },
    });
  });

  it('creates a retained dead-letter queue of 1 MiB that only the source queue may use', () => {
    template.hasResource('AWS::SQS::Queue', {
      DeletionPolicy: 'Retain',
      Properties: {
        MaximumMessageSize: 1_048_576,
        MessageRetentionPeriod: defaultSettings.queue.deadLetterRetentionPeriodSeconds,
        RedrivePolicy: Match.absent(),
        RedriveAllowPolicy: { redrivePermission: 'byQueue', sourceQueueArns: [Match.objectLike({ 'Fn::Join': Match.anyValue() })] },
      },
    });
    const allow = JSON.stringify(template.findResources('AWS::SQS::Queue', { Properties: { RedriveAllowPolicy: Match.anyValue() } }));
    expect(allow).toMatch(/:Generic-Consumer-[0-9A-F]{8}-Queue"/);
  });

  it('denies requests without TLS on both queues', () => {
    for (const queue of [consumer.queue, consumer.deadLetterQueue]) {
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [refOf(queue)],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
    }
  });

  it.each([
    { name: 'inbox', key: 'pk', ttl: 'expiresAt' },
    { name: 'idempotency', key: 'id', ttl: 'expiration' },
  ])('creates the $name table: on demand, PITR, deletion protection, retained, AWS owned key', ({ key, ttl }) => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
        TimeToLiveSpecification: { AttributeName: ttl, Enabled: true },
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
        SSESpecification: Match.absent(),
        StreamSpecification: Match.absent(),
        TableName: Match.absent(),
      },
    });
  });

  it('creates no table of its own beside the inbox and idempotency tables, and no key', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 4); // 2 + the two business tables of this stack
    expect(consumer.tableEncryptionKey).toBeUndefined();
    template.resourceCountIs('AWS::KMS::Key', 1); // the business table's own
  });

  it('creates the payload bucket: SSE-S3, TLS only, no public access, retained, objects expiring after source + DLQ retention + 1 day', () => {
    const days = (defaultSettings.queue.retentionPeriodSeconds + defaultSettings.queue.deadLetterRetentionPeriodSeconds) / 86_400 + 1;
    expect(days).toBe(19);
    expect(days).toBeGreaterThanOrEqual(defaultSettings.queue.deadLetterRetentionPeriodSeconds / 86_400);
    template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      Properties: {
        BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        LifecycleConfiguration: {
          Rules: [
            Match.objectLike({ ExpirationInDays: days, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' }),
          ],
        },
        VersioningConfiguration: Match.absent(),
      },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: refOf(consumer.payloadBucket),
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
  });

  it('gives the function exactly lambdaEnvironment() (tables by logical name, payload bucket), Powertools, source maps and its own variables', () => {
    const settingsEnvironment = stack.resolve(
      lambdaEnvironment(defaultSettings, {
        inboxTable: consumer.inboxTable.tableName,
        idempotencyTable: consumer.idempotencyTable.tableName,
        deadLetterQueueUrl: consumer.deadLetterQueue.queueUrl,
        payloadBucket: consumer.payloadBucket.bucketName,
        tables: { orders: tables.orders.tableName, stockItems: tables.stockItems.tableName },
      }),
    ) as Record<string, unknown>;
    const expected = {
      ...settingsEnvironment,
      POWERTOOLS_SERVICE_NAME: 'idempotent-consumer',
      POWERTOOLS_METRICS_NAMESPACE: 'IdempotentConsumer',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
      NOTIFIER_URL: 'https://example.com/notify',
    };

    template.hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: Match.objectEquals(expected) } });
    expect(stack.resolve(consumer.environment)).toEqual(expected);
    expect(settingsEnvironment).toMatchObject({
      TABLE_NAME_ORDERS: refOf(tables.orders),
      TABLE_NAME_STOCK_ITEMS: refOf(tables.stockItems),
      PAYLOAD_BUCKET_NAME: refOf(consumer.payloadBucket),
      INBOX_TABLE_NAME: refOf(consumer.inboxTable),
      DEAD_LETTER_QUEUE_URL: refOf(consumer.deadLetterQueue),
      SOURCE_QUEUE_FIFO: 'false',
      MAX_ATTEMPTS: '5',
    });
  });

  it('logs to its own log group, kept one month, with a role that has no AWS managed policy', () => {
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    template.hasResourceProperties('AWS::Lambda::Function', { LoggingConfig: { LogGroup: refOf(consumer.logGroup!) } });
    template.resourceCountIs('AWS::IAM::Role', 1);
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
    expect(actionsOn(template, arnOf(consumer.logGroup!))).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
  });

  it("grants exactly the engine's actions on each table: business tables, the inbox (no DeleteItem), the idempotency table", () => {
    expect(actionsOn(template, arnOf(tables.orders))).toEqual(BUSINESS_ACTIONS);
    expect(actionsOn(template, arnOf(tables.stockItems))).toEqual(BUSINESS_ACTIONS);
    expect(actionsOn(template, arnOf(consumer.inboxTable))).toEqual(INBOX_ACTIONS);
    expect(actionsOn(template, arnOf(consumer.idempotencyTable))).toEqual(IDEMPOTENCY_ACTIONS);
  });

  it('never allows Scan, Query, BatchWriteItem, a dynamodb wildcard or a table index', () => {
    const dynamodb = allAllowedActions(template).filter((action) => action.startsWith('dynamodb:'));

    expect(dynamodb).toEqual(BUSINESS_ACTIONS);
    for (const forbidden of ['dynamodb:Scan', 'dynamodb:Query', 'dynamodb:BatchWriteItem', 'dynamodb:*']) {
      expect(resourcesAllowing(template, forbidden)).toEqual([]);
    }
    expect(JSON.stringify(template.findResources('AWS::IAM::Policy'))).not.toContain('/index/');
  });

  it("uses a business table's customer managed key only through DynamoDB", () => {
    const statements = allowStatements(template).filter((s) =>
      s.resources.some((r) => JSON.stringify(r) === JSON.stringify(arnOf(tables.stockKey))),
    );

    expect(statements).toHaveLength(1);
    expect([...statements[0]!.actions].sort()).toEqual(TABLE_KEY_ACTIONS);
    expect(statements[0]!.condition).toEqual({
      StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['dynamodb.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } },
    });
  });

  it('may send to the dead-letter queue, consume the source queue and delay its messages, and put payload objects', () => {
    expect(actionsOn(template, arnOf(consumer.deadLetterQueue))).toEqual(['sqs:SendMessage']);
    expect(actionsOn(template, arnOf(consumer.queue))).toEqual([
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ]);
    expect(resourcesAllowing(template, 's3:PutObject')).toEqual([{ 'Fn::Join': ['', [arnOf(consumer.payloadBucket), '/*']] }]);
    expect(allAllowedActions(template).filter((a) => a.startsWith('s3:'))).toEqual(['s3:PutObject']);
  });

  it('drives the function from the queue with partial batch responses, batch size and maximum concurrency from the settings', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: arnOf(consumer.queue),
      FunctionName: refOf(consumer.function),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      ScalingConfig: { MaximumConcurrency: defaultSettings.function.maxConcurrency },
      MaximumBatchingWindowInSeconds: Match.absent(),
    });
  });

  it('reports no cdk-nag finding that is not acknowledged, and acknowledges only the runtime and the payload objects', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
    expect(acknowledgedRuleIds(consumer)).toEqual([...CONSUMER_ACKNOWLEDGED_RULES]);
  });

  it('exposes every resource as a field', () => {
    expect(consumer.queue).toBeInstanceOf(Queue);
    expect(consumer.deadLetterQueue).toBeInstanceOf(Queue);
    expect(consumer.inboxTable).toBeInstanceOf(Table);
    expect(consumer.idempotencyTable).toBeInstanceOf(Table);
    expect(consumer.tables).toEqual({ orders: tables.orders, stockItems: tables.stockItems });
    expect(consumer.function).toBeInstanceOf(LambdaFunction);
    expect(consumer.role).toBeInstanceOf(Role);
    expect(consumer.eventSource.eventSourceMappingId).toBeDefined();
    expect(consumer.kafkaSource).toBeUndefined();
    expect(consumer.tableEncryption).toBe(TableEncryption.DEFAULT);
  });
});

describe('IdempotentConsumer settings', () => {
  it("sets the batching window, and a FIFO queue's maxReceiveCount maxAttempts × batchSize + 5", () => {
    const windowed = synthConsumer({
      props: {
        settings: withOverrides({ function: { batchSize: 100, maxBatchingWindowSeconds: 2 }, queue: { visibilityTimeoutSeconds: 182 } }),
      },
    }).template;
    windowed.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 100, MaximumBatchingWindowInSeconds: 2 });

    const fifo = synthConsumer({ props: { settings: withOverrides({ queue: { fifo: true } }) } }).template;
    fifo.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      ContentBasedDeduplication: false,
      QueueName: Match.stringLikeRegexp('-Queue\\.fifo$'),
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 55 }),
    });
    fifo.hasResourceProperties('AWS::SQS::Queue', { FifoQueue: true, RedrivePolicy: Match.absent() });
    fifo.hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: Match.objectLike({ SOURCE_QUEUE_FIFO: 'true' }) } });
  });

  it('uses a redrive maxReceiveCount set in the settings', () => {
    const { template } = synthConsumer({ props: { settings: withOverrides({ queue: { maxReceiveCount: 25 } }) } });

    template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.objectLike({ maxReceiveCount: 25 }) });
  });
});

describe('IdempotentConsumer table encryption', () => {
  it('CUSTOMER_MANAGED: one new key with rotation, retained, for both tables, used only through DynamoDB', () => {
    const { stack, consumer, template } = synthConsumer({ props: { tableEncryption: TableEncryption.CUSTOMER_MANAGED } });
    const key = consumer.tableEncryptionKey!;

    template.resourceCountIs('AWS::KMS::Key', 1);
    template.hasResource('AWS::KMS::Key', { DeletionPolicy: 'Retain', Properties: { EnableKeyRotation: true } });
    for (const table of [consumer.inboxTable, consumer.idempotencyTable]) {
      const properties = (template.toJSON().Resources as Record<string, { Properties: Record<string, unknown> }>)[refOf(table).Ref]!
        .Properties;
      expect(properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: arnOf(key) });
    }
    const keyStatements = allowStatements(template).filter((s) =>
      s.resources.some((r) => JSON.stringify(r) === JSON.stringify(arnOf(key))),
    );
    expect(keyStatements.length).toBeGreaterThan(0);
    for (const statement of keyStatements) {
      expect([...statement.actions].sort()).toEqual(TABLE_KEY_ACTIONS);
      expect(JSON.stringify(statement.condition)).toContain('kms:ViaService');
    }
    expect(allAllowedActions(template).filter((a) => a.includes('*'))).toEqual([]);
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('uses a given key (CUSTOMER_MANAGED implied) and creates none', () => {
    const { consumer, template } = synthConsumer({
      extra: (s) => ({ tableEncryptionKey: new Key(s, 'MyKey', { enableKeyRotation: true }) }),
    });

    template.resourceCountIs('AWS::KMS::Key', 1);
    expect(consumer.tableEncryption).toBe(TableEncryption.CUSTOMER_MANAGED);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: arnOf(consumer.tableEncryptionKey!) },
    });
  });

  it('AWS_MANAGED: the aws/dynamodb key, no key created, no kms grant', () => {
    const { template } = synthConsumer({ props: { tableEncryption: TableEncryption.AWS_MANAGED } });

    template.resourceCountIs('AWS::KMS::Key', 0);
    template.hasResourceProperties('AWS::DynamoDB::Table', { SSESpecification: { SSEEnabled: true, KMSMasterKeyId: Match.absent() } });
    expect(allAllowedActions(template).filter((a) => a.startsWith('kms:'))).toEqual([]);
  });
});

describe('IdempotentConsumer with an existing function', () => {
  const build = (stack: Stack, timeout = defaultSettings.function.timeoutSeconds) =>
    new LambdaFunction(stack, 'Mine', {
      runtime: Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => ({ batchItemFailures: [] });'),
      timeout: Duration.seconds(timeout),
    });

  it('adds the event source, the environment and the grants to it, and builds no function of its own', () => {
    const { stack, consumer, template } = synthConsumer({ extra: (s) => ({ existingFunction: build(s) }) });

    template.resourceCountIs('AWS::Lambda::Function', 1);
    expect(consumer.logGroup).toBeUndefined();
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Environment: {
        Variables: Match.objectLike({ INBOX_TABLE_NAME: refOf(consumer.inboxTable), POWERTOOLS_SERVICE_NAME: 'idempotent-consumer' }),
      },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: refOf(consumer.function),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(actionsOn(template, arnOf(consumer.inboxTable))).toEqual(INBOX_ACTIONS);
    expect(Object.keys(stack.resolve(consumer.environment) as object)).toContain('PAYLOAD_BUCKET_NAME');
  });

  it('warns that an imported function needs the environment set by its owner', () => {
    const { stack, consumer } = synthConsumer({
      extra: (s) => ({
        existingFunction: LambdaFunction.fromFunctionAttributes(s, 'Imported', {
          functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:mine',
          role: Role.fromRoleArn(s, 'ImportedRole', 'arn:aws:iam::123456789012:role/mine'),
          sameEnvironment: true,
        }),
      }),
    });

    Annotations.fromStack(stack).hasWarning(
      '/Generic/Consumer',
      Match.stringLikeRegexp('existingFunction is imported: set its environment'),
    );
    expect(Object.keys(consumer.environment)).toContain('INBOX_TABLE_NAME');
  });

  it('refuses an imported function without a role: nothing could be granted to it', () => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'NoRole');
    const existingFunction = LambdaFunction.fromFunctionName(stack, 'Imported', 'mine');
    const { error } = refusal(app, () => new IdempotentConsumer(stack, 'Consumer', { existingFunction }));

    expect(error.message).toContain('existingFunction has no execution role, so nothing can be granted to it');
  });

  it("refuses a function whose timeout is not the settings', and entry-only options", () => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'Refused');
    const existingFunction = build(stack, 60);
    const { error } = refusal(app, () => new IdempotentConsumer(stack, 'Consumer', { existingFunction, handler: 'main', logRetention: 7 }));

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain("existingFunction's timeout 60 s differs from settings.function.timeoutSeconds 30 s");
    expect(error.message).toContain('handler, logRetention apply only with entry');
  });
});

describe('IdempotentConsumer with existing queues', () => {
  it('uses a queue of this app and takes the dead-letter queue from its redrive policy', () => {
    let mine: Queue | undefined;
    let dlq: Queue | undefined;
    const { consumer, template } = synthConsumer({
      extra: (s) => {
        dlq = new Queue(s, 'MyDlq');
        mine = new Queue(s, 'MyQueue', { visibilityTimeout: Duration.seconds(180), deadLetterQueue: { queue: dlq, maxReceiveCount: 10 } });
        return { existingQueue: mine };
      },
    });

    expect(consumer.queue).toBe(mine);
    expect(consumer.deadLetterQueue).toBe(dlq);
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: arnOf(mine!) });
    expect(resourcesAllowing(template, 'sqs:SendMessage')).toEqual([arnOf(dlq!)]);
  });

  it('creates a source queue that redrives to a given dead-letter queue, and no dead-letter queue', () => {
    let dlq: Queue | undefined;
    const { consumer, template } = synthConsumer({ extra: (s) => ({ existingDeadLetterQueue: (dlq = new Queue(s, 'MyDlq')) }) });

    expect(consumer.deadLetterQueue).toBe(dlq);
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: { deadLetterTargetArn: arnOf(dlq!), maxReceiveCount: 10 } });
  });

  it('warns that it cannot check an imported queue, whose dead-letter queue must be given', () => {
    const { stack } = synthConsumer({
      extra: (s) => ({
        existingQueue: Queue.fromQueueArn(s, 'Imported', 'arn:aws:sqs:us-east-1:123456789012:orders'),
        existingDeadLetterQueue: Queue.fromQueueArn(s, 'ImportedDlq', 'arn:aws:sqs:us-east-1:123456789012:orders-dlq'),
      }),
    });

    Annotations.fromStack(stack).hasWarning(
      '/Generic/Consumer',
      Match.stringLikeRegexp(
        'visibility timeout is at least 180 s and its redrive policy sends to the dead-letter queue after at least 10 receives',
      ),
    );
  });

  it('refuses queues that do not match the settings, naming each rule, before creating anything', () => {
    const cases: [(stack: Stack) => Partial<IdempotentConsumerProps>, string][] = [
      [
        (s) => ({ existingQueue: new Queue(s, 'Q', { fifo: true }) }),
        'existingQueue is a FIFO queue but settings.queue.fifo says standard',
      ],
      [
        (s) => ({ existingQueue: new Queue(s, 'Q', { visibilityTimeout: Duration.seconds(180) }) }),
        'existingQueue has no redrive policy: give it deadLetterQueue: { queue, maxReceiveCount: 10 }',
      ],
      [
        (s) => ({ existingQueue: new Queue(s, 'Q', { deadLetterQueue: { queue: new Queue(s, 'D'), maxReceiveCount: 5 } }) }),
        "existingQueue's redrive policy maxReceiveCount 5 is below 10",
      ],
      [
        (s) => ({ existingQueue: new Queue(s, 'Q', { deadLetterQueue: { queue: new Queue(s, 'D'), maxReceiveCount: 10 } }) }),
        "existingQueue's visibility timeout 30 s is below 6 × function timeout 30 s + batching window 0 s = 180 s",
      ],
      [
        (s) => ({ existingQueue: Queue.fromQueueArn(s, 'Q', 'arn:aws:sqs:us-east-1:123456789012:q') }),
        'existingQueue is imported: give existingDeadLetterQueue',
      ],
      [
        (s) => ({ existingDeadLetterQueue: new Queue(s, 'D', { fifo: true }) }),
        'existingDeadLetterQueue is a FIFO queue but settings.queue.fifo says standard',
      ],
    ];
    for (const [make, message] of cases) {
      const app = newApp(skipBundling);
      const stack = new Stack(app, 'Refused');
      const props = make(stack);
      const before = stack.node.findAll().length;
      const { error } = refusal(app, () => new IdempotentConsumer(stack, 'Consumer', { entry: fixtureEntry, ...props }));
      expect(error.message).toContain(message);
      expect(stack.node.findAll().length).toBe(before);
    }
  });
});

describe('IdempotentConsumer.addOutputs', () => {
  it("outputs every resource under stable keys, whatever the construct's path, business tables as <Name>TableName", () => {
    let tables: ReturnType<typeof businessTables> | undefined;
    const { consumer, template } = synthConsumer({
      extra: (s) => {
        tables = businessTables(s);
        return { tables: { orders: tables.orders, stockItems: tables.stockItems } };
      },
      after: (_stack, c) => {
        c.addOutputs();
      },
    });

    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown; Export?: unknown }>;
    expect(Object.keys(outputs).sort()).toEqual(
      [
        'ConsumerName',
        'DeadLetterQueueUrl',
        'FunctionName',
        'IdempotencyTableName',
        'InboxTableName',
        'LogGroupName',
        'OrdersTableName',
        'PayloadBucketName',
        'QueueUrl',
        'StockItemsTableName',
      ].sort(),
    );
    template.hasOutput('QueueUrl', { Value: refOf(consumer.queue) });
    template.hasOutput('DeadLetterQueueUrl', { Value: refOf(consumer.deadLetterQueue) });
    template.hasOutput('StockItemsTableName', { Value: refOf(tables!.stockItems) });
    template.hasOutput('ConsumerName', { Value: defaultSettings.consumerName });
    expect(Object.values(outputs).filter((output) => output.Export !== undefined)).toEqual([]);
  });

  it('keeps two consumers of one stack apart with a prefix, and the command line reads each back', () => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'Shop');
    const orders = new IdempotentConsumer(stack, 'Orders', {
      entry: fixtureEntry,
      bundling: sourceBundling,
      settings: withOverrides({ consumerName: 'shop-orders' }),
    });
    const payments = new IdempotentConsumer(stack, 'Payments', {
      entry: fixtureEntry,
      bundling: sourceBundling,
      settings: withOverrides({ consumerName: 'shop-payments', queue: { fifo: true } }),
    });
    orders.addOutputs();
    payments.addOutputs({ prefix: 'Payments' });
    const template = Template.fromStack(stack);

    template.hasOutput('PaymentsQueueUrl', { Value: refOf(payments.queue) });
    template.hasOutput('QueueUrl', { Value: refOf(orders.queue) });
    const deployed = Object.fromEntries(Object.keys(template.toJSON().Outputs as object).map((key) => [key, `value-of-${key}`]));
    expect(selectConsumer({ Shop: deployed }, { consumer: 'Payments' }, 'f.json')).toMatchObject({
      queueUrl: 'value-of-PaymentsQueueUrl',
      consumerName: 'value-of-PaymentsConsumerName',
    });
    expect(selectConsumer({ Shop: deployed }, { consumer: '' }, 'f.json')).toMatchObject({
      queueUrl: 'value-of-QueueUrl',
      inboxTable: 'value-of-InboxTableName',
    });
  });

  it('refuses a prefix that is not letters and digits, a table named like the inbox, and a second call', () => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'Outputs');
    const inbox = new Table(stack, 'T', { partitionKey: { name: 'id', type: AttributeType.STRING } });
    const consumer = new IdempotentConsumer(stack, 'Consumer', { entry: fixtureEntry, bundling: sourceBundling, tables: { inbox } });

    expect(() => consumer.addOutputs({ prefix: 'shop-payments' })).toThrow(
      /output prefix "shop-payments" must be a letter followed by letters and digits/,
    );
    expect(() => consumer.addOutputs()).toThrow(
      /a business table named "inbox" would have the output key of the library's own inbox table/,
    );

    const plain = synthConsumer().consumer;
    plain.addOutputs();
    expect(() => plain.addOutputs()).toThrow(/addOutputs was called already on Generic\/Consumer: call it once per consumer/);
  });
});

describe('IdempotentConsumer props validation', () => {
  /** Builds a consumer with `props` in a fresh stack; returns what it threw and the resources created. */
  const refused = (props: Partial<IdempotentConsumerProps>) => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'Refused');
    return refusal(app, () => new IdempotentConsumer(stack, 'Consumer', { ...props }));
  };

  it('refuses neither entry nor existingFunction, and an entry that does not exist, before creating anything', () => {
    const neither = refused({});
    expect(neither.error).toBeInstanceOf(InvalidSettingsError);
    expect(neither.error.message).toContain('give exactly one of entry (the handler file to bundle) or existingFunction, got neither');
    expect(neither.resources).toBe(0);

    const missing = refused({ entry: 'src/no-such-handler.ts' });
    expect(missing.error.message).toMatch(/entry "src\/no-such-handler\.ts" does not exist \(resolved to \/.+src\/no-such-handler\.ts/);
    expect(refused({ entry: '/nowhere/handler.ts' }).error.message).toMatch(/^- entry "\/nowhere\/handler\.ts" does not exist$/m);
  });

  it('refuses table names that are not identifiers', () => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'Tables');
    const table = new Table(stack, 'T', { partitionKey: { name: 'id', type: AttributeType.STRING } });
    const { error } = refusal(
      app,
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          entry: fixtureEntry,
          tables: { 'stock-items': table, stockItems: table, STOCK_ITEMS: table },
        }),
    );

    expect(error.message).toContain(`tables: table name "stock-items" must be 1 to 64 letters, digits or '_', starting with a letter`);
    expect(error.message).not.toContain('stockItems');
  });

  it('gives table names that upper snake case would merge a variable each, as the function reads them', () => {
    const app = newApp(skipBundling);
    const stack = new Stack(app, 'MergedNames');
    const a = new Table(stack, 'A', { partitionKey: { name: 'id', type: AttributeType.STRING } });
    const b = new Table(stack, 'B', { partitionKey: { name: 'id', type: AttributeType.STRING } });
    new IdempotentConsumer(stack, 'Consumer', { entry: fixtureEntry, tables: { stockItems: a, STOCK_ITEMS: b, orders: a } });

    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({ TABLE_NAME_stockItems: refOf(a), TABLE_NAME_STOCK_ITEMS: refOf(b), TABLE_NAME_ORDERS: refOf(a) }),
      },
    });
  });

  it("refuses environment variables the library sets, its table prefix and Lambda's reserved prefix", () => {
    const { error } = refused({
      entry: fixtureEntry,
      environment: { INBOX_TABLE_NAME: 'x', TABLE_NAME_ORDERS: 'y', AWS_REGION: 'z', POWERTOOLS_LOG_LEVEL: 'DEBUG', 'bad-name': 'w' },
    });

    for (const name of ['INBOX_TABLE_NAME', 'TABLE_NAME_ORDERS', 'AWS_REGION', 'POWERTOOLS_LOG_LEVEL']) {
      expect(error.message).toContain(`environment variable ${name} is reserved`);
    }
    expect(error.message).toContain('environment variable name "bad-name" must start with a letter');
  });

  it('reports settings, Kafka and props problems together', () => {
    const { error } = refused({
      settings: withOverrides({ queue: { visibilityTimeoutSeconds: 100 } }),
      kafka: { clusterArn: 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc', bootstrapServers: ['b:9092'] },
    });

    expect((error as InvalidSettingsError).problems).toEqual([
      expect.stringContaining('visibility timeout 100 s is below'),
      expect.stringContaining('got both'),
      expect.stringContaining('self-managed Kafka reached over the internet needs a secret ARN'),
      expect.stringContaining('give exactly one of entry (the handler file to bundle) or existingFunction, got neither'),
    ]);
  });
});
