import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { selectConsumer } from '../../packages/cli/src/stackOutputs.js';
import { cafeSettings } from '../../examples/cafe/settings.js';
import type { CafeStack } from '../../examples/cafe/infra/CafeStack.js';
import {
  acknowledgedRuleIds,
  CONSUMER_ACKNOWLEDGED_RULES,
  RELAY_ACKNOWLEDGED_RULES,
  actionsOn,
  allowStatements,
  arnOf,
  awsSolutionsViolations,
  BUSINESS_ACTIONS,
  refOf,
  synthCafeStack,
} from './stackHelpers.js';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

describe('CafeStack (default settings)', () => {
  let stack: CafeStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthCafeStack());
  });

  it('creates the orders table from cafeTables: orderId + sk, on demand, PITR, deletion protection, retained', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: [
          { AttributeName: 'orderId', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
        SSESpecification: Match.absent(),
      },
    });
    template.resourceCountIs('AWS::DynamoDB::Table', 3);
  });

  it('deploys the café handler with the café settings and the orders table by its logical name', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Runtime: 'nodejs24.x',
      Description: 'Idempotent consumer cafe-orders (SQS standard)',
      Environment: {
        Variables: Match.objectLike({
          CONSUMER_NAME: 'cafe-orders',
          POWERTOOLS_SERVICE_NAME: 'cafe-orders',
          TABLE_NAME_ORDERS: refOf(stack.ordersTable),
          INBOX_TABLE_NAME: refOf(stack.consumer.inboxTable),
          PAYLOAD_BUCKET_NAME: refOf(stack.consumer.payloadBucket),
          // The café parks out-of-order events (docs/parking.md).
          PARK_OUT_OF_ORDER: 'true',
        }),
      },
    });
    expect(stack.consumer.settings).toEqual(cafeSettings);
    expect(stack.consumer.tables).toEqual({ orders: stack.ordersTable });
  });

  it("grants the orders table exactly the engine's business actions, and nothing on its indexes", () => {
    expect(actionsOn(template, arnOf(stack.ordersTable))).toEqual(BUSINESS_ACTIONS);
    const dynamodb = allowStatements(template)
      .flatMap((s) => s.actions)
      .filter((a) => /^dynamodb:(Scan|Query|BatchWriteItem|\*)$/.test(a));
    expect(dynamodb).toEqual([]);
  });

  it.each([
    ['QueueUrl', (s: CafeStack) => refOf(s.consumer.queue)],
    ['DeadLetterQueueUrl', (s: CafeStack) => refOf(s.consumer.deadLetterQueue)],
    ['InboxTableName', (s: CafeStack) => refOf(s.consumer.inboxTable)],
    ['OrdersTableName', (s: CafeStack) => refOf(s.ordersTable)],
    ['IdempotencyTableName', (s: CafeStack) => refOf(s.consumer.idempotencyTable)],
    ['PayloadBucketName', (s: CafeStack) => refOf(s.consumer.payloadBucket)],
    ['FunctionName', (s: CafeStack) => refOf(s.consumer.function)],
    ['AlarmTopicArn', (s: CafeStack) => refOf(s.monitoring.topic)],
    ['DashboardName', (s: CafeStack) => refOf(s.monitoring.dashboard)],
    ['ConsumerName', () => 'cafe-orders'],
    ['LogGroupName', (s: CafeStack) => refOf(s.consumer.logGroup!)],
    ['OutboxTopicArn', (s: CafeStack) => refOf(s.consumer.outboxRelay!.destinations.default!)],
    ['OutboxRelayFunctionName', (s: CafeStack) => refOf(s.consumer.outboxRelay!.function)],
  ])('outputs %s', (outputId, value) => {
    template.hasOutput(outputId, { Value: value(stack) });
  });

  it("outputs the dashboard's console URL in the stack's region, and exports nothing", () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown; Export?: unknown }>;
    const url = JSON.stringify(stack.resolve(outputs.DashboardUrl?.Value));
    expect(url).toContain('{"Ref":"AWS::Region"}');
    expect(url).toContain('.console.aws.amazon.com/cloudwatch/home?region=');
    expect(url).toContain(`#dashboards/dashboard/`);
    expect(url).toContain(JSON.stringify(refOf(stack.monitoring.dashboard)));
    expect(Object.values(outputs).filter((output) => output.Export !== undefined)).toEqual([]);
  });

  it('writes outputs that the command line finds as the café consumer (the keys of config/outputKeys.ts)', () => {
    const outputs = template.toJSON().Outputs as Record<string, unknown>;
    const deployed = Object.fromEntries(Object.keys(outputs).map((key) => [key, `value-of-${key}`]));

    const consumer = selectConsumer({ CafeOrders: deployed }, {}, 'cdk-outputs.json');

    expect(consumer).toMatchObject({
      consumerName: 'value-of-ConsumerName',
      queueUrl: 'value-of-QueueUrl',
      deadLetterQueueUrl: 'value-of-DeadLetterQueueUrl',
      inboxTable: 'value-of-InboxTableName',
      tables: { Orders: 'value-of-OrdersTableName' },
      functionName: 'value-of-FunctionName',
      logGroupName: 'value-of-LogGroupName',
      dashboardUrl: 'value-of-DashboardUrl',
    });
  });

  it('outputs nothing about Kafka without a Kafka source', () => {
    expect(Object.keys(template.toJSON().Outputs as object).filter((id) => id.startsWith('Kafka'))).toEqual([]);
  });

  it('reports no cdk-nag AWS Solutions finding that is not acknowledged, and acknowledges only the expected rules', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
    // The café has an outbox: the relay's acknowledgements join the consumer's.
    expect(acknowledgedRuleIds(stack)).toEqual([...new Set([...CONSUMER_ACKNOWLEDGED_RULES, ...RELAY_ACKNOWLEDGED_RULES])].sort());
  });
});

describe('CafeStack with -c tableEncryption=customer-managed', () => {
  it('encrypts the orders, inbox and idempotency tables with one retained, rotated key, used only through DynamoDB', () => {
    const { stack, template } = synthCafeStack({ context: { tableEncryption: 'customer-managed' } });
    const key = stack.tableEncryptionKey!;

    template.resourceCountIs('AWS::KMS::Key', 2); // the tables' key and the alarm topic's
    template.hasResource('AWS::KMS::Key', { DeletionPolicy: 'Retain', Properties: { EnableKeyRotation: true } });
    const encrypted = template.findResources('AWS::DynamoDB::Table', {
      Properties: { SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: arnOf(key) } },
    });
    expect(Object.keys(encrypted).sort()).toEqual(
      [stack.ordersTable, stack.consumer.inboxTable, stack.consumer.idempotencyTable].map((t) => refOf(t).Ref).sort(),
    );
    expect(stack.consumer.tableEncryptionKey).toBe(key);
    const onKey = allowStatements(template).filter((s) => s.resources.some((r) => JSON.stringify(r) === JSON.stringify(arnOf(key))));
    expect(onKey.length).toBeGreaterThan(0);
    // The relay's stream read is AWS CDK's grant for DynamoEventSource (kms:Decrypt and
    // kms:DescribeKey, to read the encrypted stream), without a condition; every other use of
    // the key is only through DynamoDB.
    const streamRead = (statement: (typeof onKey)[number]) =>
      statement.policy.includes('OutboxRelay') && [...statement.actions].sort().join() === 'kms:Decrypt,kms:DescribeKey';
    for (const statement of onKey.filter((s) => !streamRead(s)))
      expect(JSON.stringify(statement.condition ?? null), JSON.stringify(statement)).toContain('kms:ViaService');
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });
});

describe('the library boundary', () => {
  /** Every file under `dir` (relative to the repository), recursively. */
  const filesUnder = (dir: string): string[] =>
    readdirSync(join(repositoryRoot, dir)).flatMap((name) => {
      const path = join(dir, name);
      return statSync(join(repositoryRoot, path)).isDirectory() ? filesUnder(path) : [path];
    });

  it('the constructs name no café term', () => {
    const offenders = filesUnder('packages/cdk/src').filter((file) =>
      /orderId|OrderPaid|LEDGER|cafe/i.test(readFileSync(join(repositoryRoot, file), 'utf8')),
    );

    expect(offenders).toEqual([]);
  });

  it('the café stack imports the library through its public entry points only', () => {
    const source = readFileSync(join(repositoryRoot, 'examples/cafe/infra/CafeStack.ts'), 'utf8');
    const imports = [...source.matchAll(/from '([^']+)'/g)].map((match) => match[1]!);

    expect(imports.filter((specifier) => specifier.includes('idempotent-consumer'))).toEqual([
      '@idempotent-consumer/cdk',
      'idempotent-consumer/settings',
    ]);
    expect(imports.filter((specifier) => specifier.startsWith('.'))).toEqual(['../settings.js']);
  });
});
