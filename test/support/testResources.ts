/**
 * One call gives a test file its own tables and queues (the library's inbox and idempotency
 * tables, the business tables it names, the source queue and its DLQ, with the settings'
 * redrive policy) in the run's DynamoDB and SQS, plus clients for them.
 *
 * **Against a deployed stack** (`IC_OUTPUTS_FILE=cdk-outputs.json`, with `IC_STACK` /
 * `IC_CONSUMER` when the file holds several consumers, and the endpoints of `awsEndpoints.ts`:
 * `AWS_ENDPOINT_URL` for LocalStack, none for AWS): it hands out the deployed consumer's tables,
 * queues and bucket instead, and deletes nothing. Those are shared by every test and every run,
 * so only tests that use ids of their own (e.g. from `prefix`) and look only at what they wrote
 * can run that way; the others declare `describeUnlessDeployedStack(reason)` and are skipped, the
 * reason in the run's output.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableDefinition } from 'idempotent-consumer';
import { describe, it } from 'vitest';
import type { ConsumerResources } from '../../packages/cli/src/stackOutputs.js';
import { businessTableOutputName } from '../../packages/idempotent-consumer/src/settings/outputKeys.js';
import {
  type ConsumerSettings,
  lambdaEnvironment,
  type SettingsOverrides,
  withOverrides,
} from '../../packages/idempotent-consumer/src/settings/settings.js';
import { installStrictDynamoDb } from '../../packages/local/src/aws/strictDynamoDb.js';
import { localCredentials } from '../../packages/local/src/localClientConfig.js';
import { provisionResources } from '../../packages/local/src/provision.js';
import { type AwsEndpoints, awsEndpoints, deployedStackFromEnvironment } from './awsEndpoints.js';

/** Clients for the run's DynamoDB and SQS. */
export interface AwsClients {
  readonly dynamoDb: DynamoDBClient;
  /** Document client over `dynamoDb` (plain JavaScript values, `removeUndefinedValues` on). */
  readonly documentClient: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /** S3 on the SQS emulator's endpoint (fauxqs serves both), path-style. */
  readonly s3: S3Client;
  readonly endpoints: AwsEndpoints;
  /** Destroys the clients. */
  destroy(): void;
}

/** The names of a test's resources. */
export interface TestResourceNames {
  readonly inboxTable: string;
  readonly idempotencyTable: string;
  /** The business tables: logical → physical name. */
  readonly tables: Readonly<Record<string, string>>;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterQueueUrl: string;
  readonly deadLetterQueueArn: string;
  /** The bucket for dead-letter bodies too large for the DLQ. */
  readonly payloadBucket: string;
  /** The inbox table's stream, when asked for. */
  readonly inboxStreamArn?: string;
}

/** What {@link testResources} gives a test. */
export interface TestResources extends AwsClients {
  /** The settings the resources were made from (defaults + overrides). */
  readonly settings: ConsumerSettings;
  readonly resources: TestResourceNames;
  /** The consumer's Lambda environment for these resources (`lambdaEnvironment()`). */
  readonly environment: Record<string, string>;
  /** The unique prefix of every name, e.g. `c1-1a2b3c4d-`. */
  readonly prefix: string;
  /** Deletes the tables and queues, then destroys the clients. */
  dispose(): Promise<void>;
}

/**
 * Clients for the run's endpoints: with fake static credentials for an emulator (embedded, or
 * named by the environment), with the SDK's default credentials and endpoints on AWS.
 */
export function awsClients(): AwsClients {
  const endpoints = awsEndpoints();
  const onAws = endpoints.source === 'aws';
  const common = { region: endpoints.region, ...(onAws ? {} : { credentials: { ...localCredentials } }) };
  const dynamoDb = new DynamoDBClient({ ...common, ...(onAws ? {} : { endpoint: endpoints.dynamoDbEndpoint }) });
  // DynamoDB Local lacks some of AWS's rules (two actions on one item in a transaction, conflicts
  // between transactions in flight, …): the strict layer restores them (docs/aws-rules.md).
  if (endpoints.source === 'embedded') installStrictDynamoDb(dynamoDb);
  const sqs = new SQSClient({ ...common, ...(onAws ? {} : { endpoint: endpoints.sqsEndpoint }) });
  const s3 = new S3Client({ ...common, ...(onAws ? {} : { endpoint: endpoints.sqsEndpoint, forcePathStyle: true }) });
  const documentClient = DynamoDBDocumentClient.from(dynamoDb, { marshallOptions: { removeUndefinedValues: true } });
  return {
    dynamoDb,
    documentClient,
    sqs,
    s3,
    endpoints,
    destroy: () => {
      documentClient.destroy();
      dynamoDb.destroy();
      sqs.destroy();
      s3.destroy();
    },
  };
}

/**
 * Provisions a fresh set of tables and queues under a unique prefix (`<name>-<8 hex>-`), so test
 * files running in parallel never share one; against a deployed stack, hands out its resources
 * (see the module comment and {@link deployedTestResources}).
 *
 * @param name - short label for the names (letters, digits, `-`)
 * @param tables - the consumer's business tables (logical name → keys)
 * @param overrides - settings to change; not validated, so tests may use values the stack refuses
 * @param options.inboxStream - give the inbox table a stream (for the outbox relay)
 */
export async function testResources(
  name: string,
  tables: Readonly<Record<string, TableDefinition>> = {},
  overrides: SettingsOverrides = {},
  options: { readonly inboxStream?: boolean } = {},
): Promise<TestResources> {
  const deployed = deployedStack();
  if (deployed !== undefined) return deployedTestResources(deployed, name, tables, overrides);
  const clients = awsClients();
  const settings = withOverrides(overrides);
  const prefix = `${name}-${randomUUID().slice(0, 8)}-`;
  try {
    // The local runtime's own provisioner: tests and `npm start` create the same resources.
    const provisioned = await provisionResources({
      dynamoDb: clients.dynamoDb,
      sqs: clients.sqs,
      s3: clients.s3,
      settings,
      tables,
      prefix,
      ...(options.inboxStream ? { inboxStream: true } : {}),
    });
    const resources: TestResourceNames = { ...provisioned, payloadBucket: provisioned.payloadBucket! };
    const environment = lambdaEnvironment(settings, resources);
    let disposed: Promise<void> | undefined;
    return {
      ...clients,
      settings,
      resources,
      environment,
      prefix,
      dispose: () =>
        (disposed ??= (async () => {
          try {
            await Promise.allSettled([
              ...[resources.queueUrl, resources.deadLetterQueueUrl].map((QueueUrl) =>
                clients.sqs.send(new DeleteQueueCommand({ QueueUrl })),
              ),
              ...[resources.inboxTable, resources.idempotencyTable, ...Object.values(resources.tables)].map((TableName) =>
                clients.dynamoDb.send(new DeleteTableCommand({ TableName })),
              ),
            ]);
          } finally {
            clients.destroy();
          }
        })()),
    };
  } catch (error) {
    clients.destroy();
    throw error;
  }
}

let deployedMemo: { readonly stack: ConsumerResources | undefined } | undefined;

/** The deployed consumer `IC_OUTPUTS_FILE` names (read once per test file), or `undefined`. */
export function deployedStack(): ConsumerResources | undefined {
  deployedMemo ??= { stack: deployedStackFromEnvironment(process.env) };
  return deployedMemo.stack;
}

/** A deployed stack does not offer what a test asks for (another queue kind, a table it lacks). */
export class DeployedStackMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeployedStackMismatchError';
  }
}

/**
 * The deployed consumer's resources, for a test that asked for `tables` with `overrides`:
 * the same names `testResources` would give, read from the stack's outputs (see
 * {@link deployedResourceNames}). The settings' overrides reach the environment of the handler
 * the test runs (as they would reach a locally provisioned one). `prefix` is unique per call, for
 * ids of the test's own; `dispose` only destroys the clients.
 *
 * @throws DeployedStackMismatchError when the stack's queue kind, tables or outputs do not fit
 */
export function deployedTestResources(
  deployed: ConsumerResources,
  name: string,
  tables: Readonly<Record<string, TableDefinition>> = {},
  overrides: SettingsOverrides = {},
): TestResources {
  const settings = withOverrides(overrides);
  const resources = deployedResourceNames(deployed, `testResources('${name}')`, Object.keys(tables), settings, awsEndpoints().region);
  const clients = awsClients();
  return {
    ...clients,
    settings,
    resources,
    environment: lambdaEnvironment(settings, resources),
    prefix: `${name}-${randomUUID().slice(0, 8)}-`,
    dispose: async () => clients.destroy(),
  };
}

/**
 * The names of a deployed consumer's resources, as a test asks for them. What is fixed at deploy
 * time must match the test: the queue kind (FIFO or standard, from `settings`), and every business
 * table it names must be one of the stack's (`orders` ↔ `OrdersTableName`). Queue ARNs are made
 * from the queue URLs (`arn:aws:sqs:<region>:<account>:<name>`).
 *
 * @param who - who asks, for the error message
 * @throws DeployedStackMismatchError naming every mismatch
 */
export function deployedResourceNames(
  deployed: ConsumerResources,
  who: string,
  tables: readonly string[],
  settings: ConsumerSettings,
  region: string,
): TestResourceNames {
  const where = `the deployed consumer of IC_OUTPUTS_FILE (stack ${deployed.stackName}${deployed.consumerName === undefined ? '' : `, ${deployed.consumerName}`})`;
  const problems: string[] = [];
  const { queueUrl, inboxTable, idempotencyTable, payloadBucket } = deployed;
  const missing = (['queueUrl', 'inboxTable', 'idempotencyTable', 'payloadBucket'] as const).filter((what) => deployed[what] === undefined);
  if (missing.length > 0) problems.push(`its outputs lack ${missing.join(', ')} (IdempotentConsumer.addOutputs() writes them)`);
  if (queueUrl !== undefined && queueUrl.endsWith('.fifo') !== settings.queue.fifo) {
    problems.push(
      `the test needs a ${settings.queue.fifo ? 'FIFO' : 'standard'} queue, the stack has a ${queueUrl.endsWith('.fifo') ? 'FIFO' : 'standard'} one`,
    );
  }
  const physical: Record<string, string> = {};
  for (const logicalName of tables) {
    const table = deployed.tables[businessTableOutputName(logicalName)];
    if (table === undefined)
      problems.push(
        `the test needs the table "${logicalName}", the stack has ${Object.keys(deployed.tables).join(', ') || 'no business table'}`,
      );
    else physical[logicalName] = table;
  }
  if (problems.length > 0) throw new DeployedStackMismatchError(`${who} cannot use ${where}: ${problems.join('; ')}`);
  const arnOf = (url: string): string => {
    const [account, queueName] = new URL(url).pathname.split('/').filter((segment) => segment !== '');
    return `arn:aws:sqs:${region}:${account}:${queueName}`;
  };
  return {
    inboxTable: inboxTable!,
    idempotencyTable: idempotencyTable!,
    tables: physical,
    queueUrl: queueUrl!,
    queueArn: arnOf(queueUrl!),
    deadLetterQueueUrl: deployed.deadLetterQueueUrl,
    deadLetterQueueArn: arnOf(deployed.deadLetterQueueUrl),
    payloadBucket: payloadBucket!,
  };
}

/**
 * `describe` for a test file that cannot run against a shared deployed stack (it creates
 * resources of its own, uses fixed ids, or reads a whole queue or table): against one
 * (`IC_OUTPUTS_FILE` set), its suites are skipped, hooks included, and one skipped test gives
 * `reason` in the run's output. Otherwise vitest's `describe`, unchanged.
 *
 * @example
 * const describe = describeUnlessDeployedStack('fixed order ids: a second run would find them applied');
 */
export function describeUnlessDeployedStack(reason: string): typeof describe {
  if (deployedStack() === undefined) return describe;
  // Skipped on purpose against a shared deployed stack: the caller's `reason` says why, and this
  // one skipped test puts it in the run's output.
  /* skipped: against a deployed stack, for the caller's reason, printed */ it.skip(`skipped against the deployed stack of IC_OUTPUTS_FILE: ${reason}`, () =>
    undefined);
  /* skipped: against a deployed stack, for the caller's reason, printed by the it.skip above */ return describe.skip as typeof describe;
}
