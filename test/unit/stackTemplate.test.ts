/**
 * Reading a synthesized stack's template for a local run: the resources and functions it holds,
 * the references of a function's environment resolved to local resources, the consumer settings
 * the template amounts to, and the differences from what the run is given.
 */
import { describe, expect, it } from 'vitest';
import { defaultSettings, withOverrides } from 'idempotent-consumer/settings';
import { CloudAssemblyError, TemplateMismatchError } from '../../packages/local/src/errors.js';
import { logLevelOf, logLevelRank, outcomeFromLogLine } from '../../packages/local/src/app/functionOutput.js';
import { nodeBinaryFor, runtimeMajor } from '../../packages/local/src/app/nodeRuntime.js';
import { localName } from '../../packages/local/src/app/provisionStack.js';
import { lambdaProcessEnvironment, resolveEnvironment } from '../../packages/local/src/app/runLocalApp.js';
import { concurrencyPerEnvironment, logicalTableName, planStackRun, templateDifferences } from '../../packages/local/src/app/stackPlan.js';
import {
  type CfnTemplate,
  NO_VALUE,
  type ResolveContext,
  type ResourceValues,
  readStackTemplate,
  referencedId,
  resolveValue,
} from '../../packages/local/src/app/stackTemplate.js';

const path = (p: string) => ({ 'aws:cdk:path': `Shop/${p}/Resource` });
/** The runtime the settings default to (`function.runtime`, when this version of the settings has it). */
const runtime = (defaultSettings.function as { runtime?: string }).runtime ?? 'nodejs22.x';

/** A stack shaped as the constructs synthesize it: a consumer on an SQS queue with its DLQ, a business table, an outbox relay to an SNS FIFO topic. */
function shopTemplate(
  overrides: { mapping?: Record<string, unknown>; queue?: Record<string, unknown>; env?: Record<string, unknown> } = {},
): CfnTemplate {
  return {
    Resources: {
      Stock: {
        Type: 'AWS::DynamoDB::Table',
        Properties: {
          AttributeDefinitions: [
            { AttributeName: 'sku', AttributeType: 'S' },
            { AttributeName: 'version', AttributeType: 'N' },
          ],
          KeySchema: [
            { AttributeName: 'sku', KeyType: 'HASH' },
            { AttributeName: 'version', KeyType: 'RANGE' },
          ],
          BillingMode: 'PAY_PER_REQUEST',
        },
        Metadata: path('Stock'),
      },
      Inbox: {
        Type: 'AWS::DynamoDB::Table',
        Properties: {
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
          TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
        },
        Metadata: path('Consumer/Inbox'),
      },
      Idempotency: {
        Type: 'AWS::DynamoDB::Table',
        Properties: {
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
        },
        Metadata: path('Consumer/Idempotency'),
      },
      DeadLetterQueue: {
        Type: 'AWS::SQS::Queue',
        Properties: { MaximumMessageSize: 1048576, MessageRetentionPeriod: 1209600 },
        Metadata: path('Consumer/DeadLetterQueue'),
      },
      Queue: {
        Type: 'AWS::SQS::Queue',
        Properties: {
          QueueName: 'Shop-Consumer-Queue',
          VisibilityTimeout: 180,
          MessageRetentionPeriod: 345600,
          MaximumMessageSize: 262144,
          RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': ['DeadLetterQueue', 'Arn'] }, maxReceiveCount: 10 },
          ...overrides.queue,
        },
        Metadata: path('Consumer/Queue'),
      },
      Bucket: { Type: 'AWS::S3::Bucket', Properties: {}, Metadata: path('Consumer/PayloadBucket') },
      Topic: {
        Type: 'AWS::SNS::Topic',
        Properties: { FifoTopic: true, ContentBasedDeduplication: false, TopicName: 'Shop-Outbox.fifo' },
        Metadata: path('Consumer/OutboxRelay/Topic'),
      },
      Role: { Type: 'AWS::IAM::Role', Properties: {} },
      Function: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Handler: 'index.handler',
          Runtime: runtime,
          Timeout: 30,
          MemorySize: 1024,
          Code: { S3Bucket: { 'Fn::Sub': 'cdk-assets-${AWS::AccountId}' }, S3Key: 'abc.zip' },
          Environment: {
            Variables: {
              CONSUMER_NAME: 'shop',
              INBOX_TABLE_NAME: { Ref: 'Inbox' },
              IDEMPOTENCY_TABLE_NAME: { Ref: 'Idempotency' },
              DEAD_LETTER_QUEUE_URL: { Ref: 'DeadLetterQueue' },
              SOURCE_QUEUE_FIFO: 'false',
              MAX_ATTEMPTS: '5',
              INBOX_TTL_SECONDS: '2592000',
              SIDE_EFFECT_TTL_SECONDS: '2592000',
              SIDE_EFFECT_MIN_REMAINING_MS: '5000',
              RETRY_BACKOFF_BASE_SECONDS: '2',
              RETRY_BACKOFF_MAX_SECONDS: '60',
              DEAD_LETTER_MAX_MESSAGE_SIZE_BYTES: '1048576',
              PAYLOAD_BUCKET_NAME: { Ref: 'Bucket' },
              TABLE_NAME_STOCK_ITEMS: { Ref: 'Stock' },
              POWERTOOLS_LOG_LEVEL: 'INFO',
              ...overrides.env,
            },
          },
        },
        Metadata: { ...path('Consumer/Function'), 'aws:asset:path': 'asset.abc' },
      },
      Mapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          BatchSize: 10,
          EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] },
          FunctionName: { Ref: 'Function' },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          ScalingConfig: { MaximumConcurrency: 5 },
          ...overrides.mapping,
        },
        Metadata: path('Consumer/Function/SqsEventSource'),
      },
      Relay: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Handler: 'index.handler',
          Runtime: 'nodejs22.x',
          Timeout: 30,
          MemorySize: 256,
          Code: { S3Key: 'def.zip' },
          Environment: {
            Variables: {
              CONSUMER_NAME: 'shop',
              INBOX_TABLE_NAME: { Ref: 'Inbox' },
              OUTBOX_DESTINATION_DEFAULT: { Ref: 'Topic' },
            },
          },
        },
        Metadata: path('Consumer/OutboxRelay/Function'),
      },
      OnFailure: { Type: 'AWS::SQS::Queue', Properties: {}, Metadata: path('Consumer/OutboxRelay/OnFailureQueue') },
      RelayMapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          BatchSize: 100,
          BisectBatchOnFunctionError: true,
          MaximumRetryAttempts: 10,
          DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': ['OnFailure', 'Arn'] } } },
          EventSourceArn: { 'Fn::GetAtt': ['Inbox', 'StreamArn'] },
          FilterCriteria: { Filters: [{ Pattern: '{"eventName":["INSERT"],"dynamodb":{"NewImage":{"kind":{"S":["outbox"]}}}}' }] },
          FunctionName: { Ref: 'Relay' },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          StartingPosition: 'TRIM_HORIZON',
        },
        Metadata: path('Consumer/OutboxRelay/Function/DynamoDBEventSource'),
      },
    },
  };
}

const local = (ref: string, attributes: Record<string, string> = {}): ResourceValues => ({ ref, attributes });
const localResources = new Map<string, ResourceValues>([
  ['Inbox', local('Shop-Inbox', { Arn: 'arn:aws:dynamodb:us-east-1:000000000000:table/Shop-Inbox', StreamArn: 'arn:stream' })],
  ['Idempotency', local('Shop-Idempotency')],
  ['Stock', local('Shop-Stock')],
  [
    'DeadLetterQueue',
    local('http://sqs.us-east-1.localhost:9/000000000000/Shop-DeadLetterQueue', {
      Arn: 'arn:aws:sqs:us-east-1:000000000000:Shop-DeadLetterQueue',
    }),
  ],
  ['Bucket', local('shop-bucket', { Arn: 'arn:aws:s3:::shop-bucket' })],
  ['Topic', local('arn:aws:sns:us-east-1:000000000000:Shop-Outbox.fifo', { TopicName: 'Shop-Outbox.fifo' })],
]);
const context: ResolveContext = { stackName: 'Shop', region: 'us-east-1', accountId: '000000000000', resources: localResources };

describe('readStackTemplate', () => {
  const model = readStackTemplate(shopTemplate(), 'Shop');

  it('reads the tables with their key types, streams and TTL', () => {
    expect(model.tables.get('Stock')).toMatchObject({
      path: 'Shop/Stock',
      partitionKey: { name: 'sku', type: 'S' },
      sortKey: { name: 'version', type: 'N' },
      streamViewType: undefined,
    });
    expect(model.tables.get('Inbox')).toMatchObject({ streamViewType: 'NEW_IMAGE', ttlAttribute: 'expiresAt', sortKey: undefined });
  });

  it('reads the queues with their redrive policy, and the topics', () => {
    expect(model.queues.get('Queue')).toMatchObject({
      name: 'Shop-Consumer-Queue',
      fifo: false,
      visibilityTimeoutSeconds: 180,
      redrive: { deadLetterQueueId: 'DeadLetterQueue', maxReceiveCount: 10 },
    });
    expect(model.topics.get('Topic')).toMatchObject({ fifo: true, contentBasedDeduplication: false, name: 'Shop-Outbox.fifo' });
  });

  it('reads the functions and their event source mappings, with the filter patterns parsed', () => {
    expect(model.functions.get('Function')).toMatchObject({
      handler: 'index.handler',
      runtime,
      timeoutSeconds: 30,
      assetPath: 'asset.abc',
      s3Key: 'abc.zip',
    });
    const [sqs, stream] = model.mappings;
    expect(sqs).toMatchObject({
      functionId: 'Function',
      source: { kind: 'sqs', queueId: 'Queue' },
      batchSize: 10,
      maxConcurrency: 5,
      reportBatchItemFailures: true,
    });
    expect(stream).toMatchObject({
      functionId: 'Relay',
      source: { kind: 'dynamodb-stream', tableId: 'Inbox' },
      retryAttempts: 10,
      bisectBatchOnError: true,
      onFailureId: 'OnFailure',
      filters: [{ eventName: ['INSERT'], dynamodb: { NewImage: { kind: { S: ['outbox'] } } } }],
    });
  });

  it('refuses a redrive policy or an event source outside the stack, naming the resource', () => {
    const imported = shopTemplate({
      queue: { RedrivePolicy: { deadLetterTargetArn: 'arn:aws:sqs:us-east-1:1:elsewhere', maxReceiveCount: 3 } },
    });
    expect(() => readStackTemplate(imported, 'Shop')).toThrow(
      /Shop\/Consumer\/Queue: the redrive policy's dead-letter queue "arn:aws:sqs:us-east-1:1:elsewhere" is not a queue of the stack/,
    );
    const foreign = shopTemplate({ mapping: { EventSourceArn: 'arn:aws:sqs:us-east-1:1:other' } });
    expect(() => readStackTemplate(foreign, 'Shop')).toThrow(CloudAssemblyError);
  });

  it('names a reference by its logical id and attribute', () => {
    expect(referencedId({ Ref: 'Queue' })).toBe('Queue');
    expect(referencedId({ 'Fn::GetAtt': ['Inbox', 'StreamArn'] }, 'StreamArn')).toBe('Inbox');
    expect(referencedId({ 'Fn::GetAtt': 'Inbox.StreamArn' }, 'Arn')).toBeUndefined();
    expect(referencedId({ Ref: 'AWS::Region' })).toBeUndefined();
  });
});

describe('resolveValue', () => {
  it('resolves Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and the pseudo parameters to the local values', () => {
    expect(resolveValue({ Ref: 'Inbox' }, context, 'X')).toBe('Shop-Inbox');
    expect(resolveValue({ 'Fn::GetAtt': ['Inbox', 'StreamArn'] }, context, 'X')).toBe('arn:stream');
    expect(
      resolveValue(
        { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':sqs:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }]] },
        context,
        'X',
      ),
    ).toBe('arn:aws:sqs:us-east-1:000000000000');
    expect(resolveValue({ 'Fn::Sub': '${AWS::StackName}/${Bucket}/${Topic.TopicName}' }, context, 'X')).toBe(
      'Shop/shop-bucket/Shop-Outbox.fifo',
    );
    expect(resolveValue({ 'Fn::Sub': ['${Name}-x', { Name: { Ref: 'Stock' } }] }, context, 'X')).toBe('Shop-Stock-x');
    expect(resolveValue({ 'Fn::Select': [1, { 'Fn::Split': ['/', { Ref: 'DeadLetterQueue' }] }] }, context, 'X')).toBe('');
    expect(resolveValue({ 'Fn::Select': [3, ['a', 'b', 'c', { Ref: 'Stock' }]] }, context, 'X')).toBe('Shop-Stock');
    expect(resolveValue(42, context, 'X')).toBe('42');
    expect(resolveValue({ Ref: 'AWS::NoValue' }, context, 'X')).toBe(NO_VALUE);
  });

  it('names the variable, the expression and why when a value cannot be resolved locally', () => {
    const withTypes = { ...context, types: new Map([['Role', 'AWS::IAM::Role']]) };
    expect(() =>
      resolveValue({ 'Fn::GetAtt': ['Role', 'Arn'] }, withTypes, 'ROLE_ARN in the environment of Shop/Consumer/Function'),
    ).toThrow('ROLE_ARN in the environment of Shop/Consumer/Function: Role (AWS::IAM::Role) is not created by the local run');
    expect(() => resolveValue({ Ref: 'Inbox2' }, context, 'T')).toThrow(
      /T: Inbox2 is neither a resource of the stack nor a pseudo parameter/,
    );
    expect(() => resolveValue({ 'Fn::GetAtt': ['Inbox', 'Nope'] }, context, 'T')).toThrow(
      'T: the local Inbox has no attribute Nope (it has Arn, StreamArn)',
    );
    expect(() => resolveValue({ 'Fn::ImportValue': 'x' }, context, 'T')).toThrow(/T: Fn::ImportValue is not resolved by the local run/);
  });

  it('resolves a function environment, leaving out AWS::NoValue', () => {
    const model = readStackTemplate(shopTemplate({ env: { OPTIONAL: { Ref: 'AWS::NoValue' } } }), 'Shop');
    const environment = resolveEnvironment(model.functions.get('Function')!, context);
    expect(environment).toMatchObject({
      CONSUMER_NAME: 'shop',
      INBOX_TABLE_NAME: 'Shop-Inbox',
      DEAD_LETTER_QUEUE_URL: 'http://sqs.us-east-1.localhost:9/000000000000/Shop-DeadLetterQueue',
      PAYLOAD_BUCKET_NAME: 'shop-bucket',
      TABLE_NAME_STOCK_ITEMS: 'Shop-Stock',
    });
    expect(environment).not.toHaveProperty('OPTIONAL');
  });
});

describe('planStackRun', () => {
  it('finds the consumer, its queue and dead-letter queue, its tables by logical name, and its outbox relay', () => {
    const plan = planStackRun(readStackTemplate(shopTemplate(), 'Shop'), { tableNames: ['stockItems'] });
    expect(plan.consumer.id).toBe('Function');
    expect(plan.sqs?.queue.id).toBe('Queue');
    expect(plan.sqs?.deadLetterQueue?.id).toBe('DeadLetterQueue');
    expect(plan.kafka).toBeUndefined();
    expect(plan.inboxTable.id).toBe('Inbox');
    expect([...plan.tables].map(([name, table]) => [name, table.id])).toEqual([['stockItems', 'Stock']]);
    expect(plan.relay?.fn.id).toBe('Relay');
  });

  it('reads the settings the template holds, the rest from the defaults', () => {
    const { settings } = planStackRun(readStackTemplate(shopTemplate(), 'Shop'));
    expect(settings).toMatchObject({
      consumerName: 'shop',
      queue: {
        fifo: false,
        visibilityTimeoutSeconds: 180,
        maxReceiveCount: 10,
        retentionPeriodSeconds: 345600,
        deadLetterRetentionPeriodSeconds: 1209600,
      },
      function: { timeoutSeconds: 30, memorySizeMb: 1024, batchSize: 10, maxBatchingWindowSeconds: 0, maxConcurrency: 5 },
      retry: { maxAttempts: 5, backoffBaseSeconds: 2, backoffMaxSeconds: 60 },
      idempotency: { inboxTtlSeconds: 2592000, sideEffectMinRemainingMs: 5000 },
    });
    expect(settings.kafka).toEqual(defaultSettings.kafka);
  });

  it('names table variables back without the handler (upper snake case to camel case)', () => {
    expect(logicalTableName('TABLE_NAME_STOCK_ITEMS')).toBe('stockItems');
    expect(logicalTableName('TABLE_NAME_ORDERS')).toBe('orders');
    expect(logicalTableName('TABLE_NAME_stock_items')).toBe('stock_items');
  });

  it('says which consumer functions the stack has when it has none or several', () => {
    const template = shopTemplate();
    const resources = template.Resources!;
    const twice: CfnTemplate = {
      Resources: {
        ...resources,
        Function2: { ...resources.Function!, Metadata: path('Other/Function') },
        Mapping2: { ...resources.Mapping!, Properties: { ...resources.Mapping!.Properties, FunctionName: { Ref: 'Function2' } } },
      },
    };
    expect(() => planStackRun(readStackTemplate(twice, 'Shop'))).toThrow(
      'The stack Shop has 2 consumer functions: Shop/Consumer/Function (Function), Shop/Other/Function (Function2); name the one to run (--function <construct path or logical id>)',
    );
    expect(planStackRun(readStackTemplate(twice, 'Shop'), { functionId: 'Shop/Other' }).consumer.id).toBe('Function2');
    const { Mapping: _, ...withoutMapping } = resources;
    expect(() => planStackRun(readStackTemplate({ Resources: withoutMapping }, 'Shop'))).toThrow(/The stack Shop has no consumer function/);
  });
});

describe('templateDifferences and TemplateMismatchError', () => {
  const plan = planStackRun(readStackTemplate(shopTemplate(), 'Shop'));
  const name = 'src/settings.ts#settings';

  it('finds none when the settings are the ones the stack was synthesized with', () => {
    const settings = withOverrides({ consumerName: 'shop' });
    expect(templateDifferences(plan, { settings: { value: settings, name } })).toEqual([]);
  });

  it("names both values of each difference: the template's batch size against the settings module's", () => {
    const settings = withOverrides({
      consumerName: 'shop',
      queue: { maxReceiveCount: 12 },
      function: { batchSize: 5, timeoutSeconds: 20 },
    });
    const differences = templateDifferences(plan, { settings: { value: settings, name } });
    expect(differences).toEqual([
      {
        setting: 'queue.maxReceiveCount',
        template: '10 (maxReceiveCount of the RedrivePolicy of Shop/Consumer/Queue)',
        local: `12 (maxReceiveCount(settings)) by the settings ${name}`,
      },
      { setting: 'function.timeoutSeconds', template: '30 (Timeout of Shop/Consumer/Function)', local: `20 by the settings ${name}` },
      {
        setting: 'function.batchSize',
        template: '10 (BatchSize of Shop/Consumer/Function/SqsEventSource)',
        local: `5 by the settings ${name}`,
      },
    ]);
    expect(new TemplateMismatchError(differences).message).toContain(
      '- function.batchSize: the template says 10 (BatchSize of Shop/Consumer/Function/SqsEventSource); the local run was given 5 by the settings src/settings.ts#settings',
    );
  });

  it('holds --fifo and --source to the template, and the mapping to ReportBatchItemFailures', () => {
    expect(templateDifferences(plan, { fifo: true })).toEqual([
      { setting: 'queue.fifo', template: 'a standard queue (Shop/Consumer/Queue)', local: '--fifo' },
    ]);
    expect(templateDifferences(plan, { source: 'kafka' })).toEqual([
      { setting: 'the event source', template: 'no Kafka event source mapping for Shop/Consumer/Function', local: '--source kafka' },
    ]);
    const withoutReports = planStackRun(readStackTemplate(shopTemplate({ mapping: { FunctionResponseTypes: [] } }), 'Shop'));
    expect(templateDifferences(withoutReports, {}).map((d) => d.template)).toEqual([
      'no ReportBatchItemFailures on Shop/Consumer/Function/SqsEventSource',
    ]);
  });
});

describe('Lambda Managed Instances in the template: invocations per execution environment', () => {
  /** The shop's template with the consumer function on a capacity provider (`config` is its `LambdaManagedInstancesCapacityProviderConfig`). */
  const onCapacityProvider = (config: Record<string, unknown>) => {
    const template = shopTemplate();
    const fn = template.Resources!.Function!;
    const managed = {
      ...fn,
      Properties: {
        ...fn.Properties,
        CapacityProviderConfig: {
          LambdaManagedInstancesCapacityProviderConfig: { CapacityProviderArn: 'arn:aws:lambda:::capacity-provider:cp', ...config },
        },
      },
    };
    const withManaged = { ...template, Resources: { ...template.Resources, Function: managed } };
    return planStackRun(readStackTemplate(withManaged, 'Shop'));
  };

  it("takes the template's PerExecutionEnvironmentMaxConcurrency, AWS's Node.js default without it, and 1 without a capacity provider", () => {
    expect(concurrencyPerEnvironment(onCapacityProvider({ PerExecutionEnvironmentMaxConcurrency: 32 }).consumer, undefined)).toBe(32);
    expect(concurrencyPerEnvironment(onCapacityProvider({}).consumer, undefined)).toBe(64);
    const plain = planStackRun(readStackTemplate(shopTemplate(), 'Shop'));
    expect(plain.consumer.capacityProvider).toBeUndefined();
    expect(concurrencyPerEnvironment(plain.consumer, undefined)).toBe(1);
    expect(concurrencyPerEnvironment(plain.consumer, 4)).toBe(4);
  });

  it('holds --concurrency-per-process to the template, naming both', () => {
    const managed = onCapacityProvider({ PerExecutionEnvironmentMaxConcurrency: 32 });
    expect(templateDifferences(managed, { concurrencyPerProcess: 32 })).toEqual([]);
    expect(templateDifferences(managed, { concurrencyPerProcess: 8 })).toEqual([
      {
        setting: 'concurrency per execution environment',
        template:
          '32 (CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency of Shop/Consumer/Function)',
        local: '--concurrency-per-process 8',
      },
    ]);
    const plain = planStackRun(readStackTemplate(shopTemplate(), 'Shop'));
    expect(templateDifferences(plain, { concurrencyPerProcess: 1 })).toEqual([]);
    expect(templateDifferences(plain, { concurrencyPerProcess: 4 }).map((d) => d.template)).toEqual([
      '1 (Shop/Consumer/Function has no CapacityProviderConfig: one invocation at a time per execution environment)',
    ]);
  });

  it('gives the function AWS_LAMBDA_MAX_CONCURRENCY on a capacity provider or above 1, as Lambda Managed Instances do, and not otherwise', () => {
    const endpoints = { dynamoDb: 'http://127.0.0.1:1', sqs: 'http://127.0.0.1:2', s3: 'http://127.0.0.1:2' };
    const common = { functionName: 'f', code: '/code', environment: {}, endpoints, logLevel: undefined };
    const managed = onCapacityProvider({ PerExecutionEnvironmentMaxConcurrency: 32 }).consumer;
    expect(lambdaProcessEnvironment({ ...common, fn: managed, concurrencyPerEnvironment: 32 }).AWS_LAMBDA_MAX_CONCURRENCY).toBe('32');
    const plain = planStackRun(readStackTemplate(shopTemplate(), 'Shop')).consumer;
    expect(lambdaProcessEnvironment({ ...common, fn: plain }).AWS_LAMBDA_MAX_CONCURRENCY).toBeUndefined();
    expect(lambdaProcessEnvironment({ ...common, fn: plain, concurrencyPerEnvironment: 4 }).AWS_LAMBDA_MAX_CONCURRENCY).toBe('4');
  });
});

describe('local names, outcomes from log lines, Node.js binaries', () => {
  it('names unnamed resources as CloudFormation would, without its random suffix', () => {
    expect(localName('table', 'Shop', 'Inbox', undefined)).toBe('Shop-Inbox');
    expect(localName('queue', 'Shop', 'Queue', undefined, 'p-', true)).toBe('p-Shop-Queue.fifo');
    expect(localName('queue', 'Shop', 'Queue', 'Named.fifo', '', true)).toBe('Named.fifo');
    expect(localName('queue', 'S', 'Q'.repeat(100), undefined, '', true)).toHaveLength(80);
    expect(localName('bucket', 'Shop', 'PayloadBucket_1', undefined)).toBe('shop-payloadbucket-1');
  });

  it("reads an outcome from the consumer's log line, and nothing from other lines", () => {
    const line = JSON.stringify({
      level: 'ERROR',
      message: 'message dead-lettered',
      outcome: 'dead-lettered',
      messageId: 'm-1',
      idempotencyKey: 'k-1',
      orderingKey: 'o-1',
      event: { type: 'OrderPaid' },
      attempt: 5,
      reason: 'RetriesExhausted',
      errorType: 'PredecessorNotApplied',
      errorMessage: 'waits',
      durationMs: 16.5,
    });
    expect(outcomeFromLogLine(line)).toEqual({
      outcome: 'dead-lettered',
      messageId: 'm-1',
      idempotencyKey: 'k-1',
      orderingKey: 'o-1',
      fields: { type: 'OrderPaid' },
      attempt: 5,
      reason: 'RetriesExhausted',
      errorType: 'PredecessorNotApplied',
      errorMessage: 'waits',
      countsAsAttempt: undefined,
      durationMs: 16.5,
    });
    expect(
      outcomeFromLogLine(JSON.stringify({ message: 'message will be retried', outcome: 'retried', messageId: 'm', attemptCounted: false }))
        ?.countsAsAttempt,
    ).toBe(false);
    expect(outcomeFromLogLine(JSON.stringify({ message: 'other', outcome: 'applied', messageId: 'm' }))).toBeUndefined();
    expect(outcomeFromLogLine('{"_aws":{}}')).toBeUndefined();
    expect(outcomeFromLogLine('plain text')).toBeUndefined();
    expect(logLevelOf('{"level":"warn"}')).toBe('WARN');
    expect(logLevelOf('text')).toBeUndefined();
    expect(logLevelRank('DEBUG')).toBeLessThan(logLevelRank('INFO'));
    expect(logLevelRank('ERROR')).toBeLessThan(logLevelRank('SILENT'));
  });

  it('runs a function on the running Node.js when its runtime is that major, and says when it is not', () => {
    expect(runtimeMajor('nodejs22.x')).toBe(22);
    expect(runtimeMajor('python3.12')).toBeUndefined();
    const major = Number(process.versions.node.split('.')[0]);
    expect(nodeBinaryFor(`nodejs${major}.x`)).toEqual({ path: process.execPath, version: process.version, wanted: major, matches: true });
    expect(nodeBinaryFor('nodejs99.x', ['/nonexistent'])).toEqual({
      path: process.execPath,
      version: process.version,
      wanted: 99,
      matches: false,
    });
  });
});
