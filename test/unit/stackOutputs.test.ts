import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { businessTableOutputKey, businessTableOutputName } from '../../packages/idempotent-consumer/src/settings/outputKeys.js';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { deployedStackFromEnvironment, endpointsFromEnvironment } from '../support/awsEndpoints.js';
import { deployedResourceNames, DeployedStackMismatchError } from '../support/testResources.js';
import {
  consumersOfStack,
  formatShellExports,
  parseStackOutputs,
  readConsumerResources,
  selectConsumer,
  shellVariablesOf,
  StackOutputsError,
  type StackOutputsFile,
} from '../../packages/cli/src/stackOutputs.js';

/** What `cdk deploy CafeOrders --outputs-file cdk-outputs.json` writes for the café (values as AWS returns them). */
const cafeOutputs = {
  ConsumerName: 'cafe-orders',
  QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/CafeOrders-Consumer-a1b2c3d4-Queue',
  DeadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/CafeOrders-ConsumerDeadLetterQueue1F2E3D4C-AbCdEf123456',
  InboxTableName: 'CafeOrders-ConsumerInbox5A6B7C8D-1QWERTY',
  IdempotencyTableName: 'CafeOrders-ConsumerIdempotency9E8D7C6B-2ASDFGH',
  OrdersTableName: 'CafeOrders-Orders12345678-3ZXCVBN',
  PayloadBucketName: 'cafeorders-consumerpayloadbucket1a2b3c4d-abcdef',
  FunctionName: 'CafeOrders-ConsumerFunction1A2B3C4D-AbCdEfGhIjKl',
  LogGroupName: 'CafeOrders-ConsumerFunctionLogGroup1A2B3C4D-MnOpQr',
  OutboxTopicArn: 'arn:aws:sns:eu-west-1:123456789012:CafeOrders-ConsumerOutboxRelayTopic.fifo',
  OutboxRelayFunctionName: 'CafeOrders-ConsumerOutboxRelayFunction-StUvWx',
  AlarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:CafeOrders-MonitoringAlarmTopic-YzAbCd',
  DashboardName: 'MonitoringDashboard1A2B3C4D-EfGhIjKl',
  DashboardUrl:
    'https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#dashboards/dashboard/MonitoringDashboard1A2B3C4D-EfGhIjKl',
};

/** A second stack with two consumers: the first unprefixed, the second under `Payments`, and an output of the user's own. */
const shopOutputs = {
  ApiUrl: 'https://example.execute-api.eu-west-1.amazonaws.com/',
  ConsumerName: 'shop-orders',
  QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Shop-Orders-Queue',
  DeadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Shop-Orders-DLQ',
  InboxTableName: 'Shop-OrdersInbox',
  StockItemsTableName: 'Shop-StockItems',
  PaymentsConsumerName: 'shop-payments',
  PaymentsQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Shop-Payments-Queue.fifo',
  PaymentsDeadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/Shop-Payments-DLQ.fifo',
  PaymentsInboxTableName: 'Shop-PaymentsInbox',
  PaymentsLedgerTableName: 'Shop-Ledger',
};

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'stack-outputs-'));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function outputsFile(name: string, content: string | object): Promise<string> {
  const file = join(folder, name);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

describe('business table output keys', () => {
  it('are the logical name in PascalCase then TableName, with the prefix first', () => {
    expect(businessTableOutputKey('orders')).toBe('OrdersTableName');
    expect(businessTableOutputKey('stock_items')).toBe('StockItemsTableName');
    expect(businessTableOutputKey('stockItems', 'Shop')).toBe('ShopStockItemsTableName');
  });

  it("refuse a table whose key would be the inbox's or the idempotency table's, and names that are not table names", () => {
    expect(() => businessTableOutputName('inbox')).toThrow(/output key of the library's own inbox table/);
    expect(() => businessTableOutputName('idempotency')).toThrow(/idempotency table/);
    expect(() => businessTableOutputName('9lives')).toThrow(/must be 1 to 64 letters/);
  });
});

describe('reading an outputs file', () => {
  it('finds the café consumer and every resource it outputs', async () => {
    const file = await outputsFile('cafe.json', { CafeOrders: cafeOutputs });

    const consumer = await readConsumerResources(file);

    expect(consumer).toEqual({
      stackName: 'CafeOrders',
      prefix: '',
      consumerName: 'cafe-orders',
      queueUrl: cafeOutputs.QueueUrl,
      deadLetterQueueUrl: cafeOutputs.DeadLetterQueueUrl,
      inboxTable: cafeOutputs.InboxTableName,
      idempotencyTable: cafeOutputs.IdempotencyTableName,
      tables: { Orders: cafeOutputs.OrdersTableName },
      payloadBucket: cafeOutputs.PayloadBucketName,
      functionName: cafeOutputs.FunctionName,
      logGroupName: cafeOutputs.LogGroupName,
      outboxTopicArn: cafeOutputs.OutboxTopicArn,
      outboxRelayFunctionName: cafeOutputs.OutboxRelayFunctionName,
      alarmTopicArn: cafeOutputs.AlarmTopicArn,
      dashboardName: cafeOutputs.DashboardName,
      dashboardUrl: cafeOutputs.DashboardUrl,
    });
  });

  it("keeps two consumers of one stack apart by their key prefix, and ignores the stack's other outputs", () => {
    const [orders, payments] = consumersOfStack('Shop', shopOutputs);

    expect(orders).toMatchObject({
      prefix: '',
      consumerName: 'shop-orders',
      inboxTable: 'Shop-OrdersInbox',
      tables: { StockItems: 'Shop-StockItems' },
    });
    expect(payments).toMatchObject({
      prefix: 'Payments',
      consumerName: 'shop-payments',
      queueUrl: shopOutputs.PaymentsQueueUrl,
      deadLetterQueueUrl: shopOutputs.PaymentsDeadLetterQueueUrl,
      inboxTable: 'Shop-PaymentsInbox',
      tables: { Ledger: 'Shop-Ledger' },
    });
    // The unprefixed consumer does not take the Payments consumer's keys as business tables.
    expect(Object.keys(orders!.tables)).toEqual(['StockItems']);
    expect(JSON.stringify(orders)).not.toContain('ApiUrl');
  });

  it('picks the consumer --stack and --consumer name (by consumer name or key prefix)', () => {
    const file: StackOutputsFile = { CafeOrders: cafeOutputs, Shop: shopOutputs };

    expect(selectConsumer(file, { stack: 'CafeOrders' }, 'f.json').consumerName).toBe('cafe-orders');
    expect(selectConsumer(file, { stack: 'Shop', consumer: 'shop-payments' }, 'f.json').prefix).toBe('Payments');
    expect(selectConsumer(file, { stack: 'Shop', consumer: 'Payments' }, 'f.json').consumerName).toBe('shop-payments');
    expect(selectConsumer(file, { consumer: 'cafe-orders' }, 'f.json').stackName).toBe('CafeOrders');
  });

  it('refuses an ambiguous choice, listing the consumers and the flag that picks one', () => {
    const file: StackOutputsFile = { CafeOrders: cafeOutputs, Shop: shopOutputs };

    const noFlag = catchError(() => selectConsumer(file, {}, 'f.json'));
    expect(noFlag).toBeInstanceOf(StackOutputsError);
    expect(noFlag.exitCode).toBe(2);
    expect(noFlag.message).toContain('holds 3 consumers; pick one with --stack NAME');
    expect(noFlag.message).toContain('CafeOrders (consumer cafe-orders)');
    expect(noFlag.message).toContain('Shop (prefix Payments, consumer shop-payments)');

    const stackOnly = catchError(() => selectConsumer(file, { stack: 'Shop' }, 'f.json'));
    expect(stackOnly.message).toContain('holds 2 consumers; pick one with --consumer NAME');
  });

  it('says what the file holds when the stack or consumer asked for is not there', () => {
    const file: StackOutputsFile = { CafeOrders: cafeOutputs, Network: { VpcId: 'vpc-1' } };

    expect(catchError(() => selectConsumer(file, { stack: 'CafeOrder' }, 'f.json')).message).toBe(
      '--outputs-file f.json has no stack "CafeOrder"; it holds "CafeOrders", "Network"',
    );
    expect(catchError(() => selectConsumer(file, { stack: 'Network' }, 'f.json')).message).toContain(
      'stack "Network" of f.json names no consumer',
    );
    expect(catchError(() => selectConsumer(file, { consumer: 'shop' }, 'f.json')).message).toContain('--consumer shop: no such consumer');
    expect(catchError(() => selectConsumer({ Network: { VpcId: 'vpc-1' } }, {}, 'f.json')).message).toContain(
      'stacks in the file: Network',
    );
    expect(catchError(() => selectConsumer({}, {}, 'f.json')).message).toContain('stacks in the file: none');
  });

  it('refuses a missing file, a file that is not JSON and one that is not shaped as cdk writes it (exit 2)', async () => {
    const missing = (await readConsumerResources(join(folder, 'nope.json')).catch((error: unknown) => error)) as StackOutputsError;
    expect(missing).toBeInstanceOf(StackOutputsError);
    expect(missing.message).toContain('no such file (write it with `cdk deploy --outputs-file');

    const notJson = (await readConsumerResources(await outputsFile('bad.json', '{"CafeOrders": {')).catch(
      (error: unknown) => error,
    )) as StackOutputsError;
    expect(notJson.message).toMatch(/bad\.json: not JSON/);

    expect(() => parseStackOutputs([], 'list.json')).toThrow(/not a stack outputs file/);
    expect(() => parseStackOutputs({ CafeOrders: 'x' }, 'flat.json')).toThrow(/the entry "CafeOrders" is not an object of outputs/);
  });
});

describe('shell variables', () => {
  it('names each resource as the DLQ tool and the function read them, tables as TABLE_NAME_<NAME>', () => {
    const consumer = selectConsumer({ CafeOrders: cafeOutputs }, {}, 'f.json');

    const names = shellVariablesOf(consumer).map(([name]) => name);

    expect(names).toEqual([
      'CONSUMER_NAME',
      'QUEUE_URL',
      'DLQ_URL',
      'INBOX_TABLE_NAME',
      'IDEMPOTENCY_TABLE_NAME',
      'PAYLOAD_BUCKET_NAME',
      'FUNCTION_NAME',
      'LOG_GROUP_NAME',
      'OUTBOX_TOPIC_ARN',
      'OUTBOX_RELAY_FUNCTION_NAME',
      'ALARM_TOPIC_ARN',
      'DASHBOARD_NAME',
      'DASHBOARD_URL',
      'TABLE_NAME_ORDERS',
    ]);
    expect(shellVariablesOf(consumersOfStack('Shop', shopOutputs)[0]!)).toContainEqual(['TABLE_NAME_STOCK_ITEMS', 'Shop-StockItems']);
  });

  it('quotes every value so that a POSIX shell reads it back unchanged', () => {
    const consumer = selectConsumer({ S: { DeadLetterQueueUrl: "http://q/1/it's $HOME `x`" } }, {}, 'f.json');

    const exports = formatShellExports(consumer);

    expect(exports).toBe("export DLQ_URL='http://q/1/it'\\''s $HOME `x`'");
    expect(execFileSync('sh', ['-c', `${exports}\nprintf %s "$DLQ_URL"`], { encoding: 'utf8' })).toBe("http://q/1/it's $HOME `x`");
  });
});

function catchError(fn: () => unknown): StackOutputsError {
  try {
    fn();
  } catch (error) {
    return error as StackOutputsError;
  }
  throw new Error('expected an error');
}

describe('the integration tests against a deployed stack (IC_OUTPUTS_FILE)', () => {
  /** The café deployed with `cdklocal deploy --outputs-file`: LocalStack's queue URLs. */
  const localStackCafe = {
    ...cafeOutputs,
    QueueUrl: 'http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/CafeOrders-Consumer-a1b2c3d4-Queue',
    DeadLetterQueueUrl: 'http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/CafeOrders-ConsumerDeadLetterQueue-x',
  };

  it('reads the consumer IC_OUTPUTS_FILE names, picked with IC_STACK, and nothing without it', async () => {
    const file = await outputsFile('deployed.json', { CafeOrders: localStackCafe, Shop: shopOutputs });

    expect(deployedStackFromEnvironment({})).toBeUndefined();
    expect(deployedStackFromEnvironment({ IC_OUTPUTS_FILE: file, IC_STACK: 'CafeOrders' })?.queueUrl).toBe(localStackCafe.QueueUrl);
    expect(deployedStackFromEnvironment({ IC_OUTPUTS_FILE: file, IC_STACK: 'Shop', IC_CONSUMER: 'shop-payments' })?.prefix).toBe(
      'Payments',
    );
    expect(() => deployedStackFromEnvironment({ IC_OUTPUTS_FILE: file })).toThrow(/holds 3 consumers; pick one with --stack NAME/);
    expect(() => deployedStackFromEnvironment({ IC_OUTPUTS_FILE: join(folder, 'none.json') })).toThrow(
      /IC_OUTPUTS_FILE=.*none\.json: no such file/,
    );
  });

  it('gives the tests the deployed names: tables by logical name, queue ARNs from the URLs', async () => {
    const file = await outputsFile('local-cafe.json', { CafeOrders: localStackCafe });
    const deployed = deployedStackFromEnvironment({ IC_OUTPUTS_FILE: file })!;

    const names = deployedResourceNames(deployed, 'test', ['orders'], withOverrides({ consumerName: 'cafe-orders' }), 'us-east-1');

    expect(names).toEqual({
      inboxTable: cafeOutputs.InboxTableName,
      idempotencyTable: cafeOutputs.IdempotencyTableName,
      tables: { orders: cafeOutputs.OrdersTableName },
      queueUrl: localStackCafe.QueueUrl,
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:CafeOrders-Consumer-a1b2c3d4-Queue',
      deadLetterQueueUrl: localStackCafe.DeadLetterQueueUrl,
      deadLetterQueueArn: 'arn:aws:sqs:us-east-1:000000000000:CafeOrders-ConsumerDeadLetterQueue-x',
      payloadBucket: cafeOutputs.PayloadBucketName,
    });
  });

  it('refuses what the deployed stack cannot give: another queue kind, a table it lacks, missing outputs', () => {
    const deployed = selectConsumer({ CafeOrders: cafeOutputs }, {}, 'f.json');

    const error = (() => {
      try {
        deployedResourceNames(
          deployed,
          "testResources('c3')",
          ['orders', 'reservations'],
          withOverrides({ queue: { fifo: true } }),
          'eu-west-1',
        );
      } catch (caught) {
        return caught as Error;
      }
      throw new Error('expected an error');
    })();
    expect(error).toBeInstanceOf(DeployedStackMismatchError);
    expect(error.message).toContain(
      "testResources('c3') cannot use the deployed consumer of IC_OUTPUTS_FILE (stack CafeOrders, cafe-orders)",
    );
    expect(error.message).toContain('the test needs a FIFO queue, the stack has a standard one');
    expect(error.message).toContain('the test needs the table "reservations", the stack has Orders');

    const bare = selectConsumer({ S: { DeadLetterQueueUrl: cafeOutputs.DeadLetterQueueUrl } }, {}, 'f.json');
    expect(() => deployedResourceNames(bare, 'test', [], withOverrides({}), 'eu-west-1')).toThrow(
      /its outputs lack queueUrl, inboxTable, idempotencyTable, payloadBucket/,
    );
  });

  it("reaches a stack on AWS at its region's endpoints, one on LocalStack at AWS_ENDPOINT_URL", async () => {
    const file = await outputsFile('aws-cafe.json', { CafeOrders: cafeOutputs });

    expect(endpointsFromEnvironment({ IC_OUTPUTS_FILE: file })).toEqual({
      dynamoDbEndpoint: 'https://dynamodb.eu-west-1.amazonaws.com',
      sqsEndpoint: 'https://sqs.eu-west-1.amazonaws.com',
      region: 'eu-west-1',
      source: 'aws',
    });
    expect(endpointsFromEnvironment({ IC_OUTPUTS_FILE: file, AWS_ENDPOINT_URL: 'http://localhost:4566' })).toMatchObject({
      sqsEndpoint: 'http://localhost:4566',
      source: 'environment',
    });
    expect(endpointsFromEnvironment({})).toBeUndefined();
  });
});
