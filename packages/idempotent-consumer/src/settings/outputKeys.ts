/**
 * The stack outputs of a consumer: the CloudFormation output keys that
 * `IdempotentConsumer.addOutputs()` writes and that the command line (`outputs`, `send`,
 * `dlq … --outputs-file`) and the integration tests read back from the file
 * `cdk deploy --outputs-file F` writes (`{ "<StackName>": { "<OutputKey>": "<value>" } }`).
 *
 * One convention, no CDK import (the command line loads it): every key of a consumer is
 * `<prefix><suffix>`, the prefix empty for the only consumer of a stack and a name of letters and
 * digits for a second one (`Payments` → `PaymentsQueueUrl`). CloudFormation allows only letters
 * and digits in an output key
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/outputs-section-structure.html).
 *
 * @module
 */

/** The key suffix of each output a consumer has, by what it holds. */
export const consumerOutputKeys = {
  /** The consumer's name (`settings.consumerName`): marks a consumer's outputs. */
  consumerName: 'ConsumerName',
  /** The source queue's URL: producers send here. */
  queueUrl: 'QueueUrl',
  /** The dead-letter queue's URL (the DLQ tool's `--queue-url`). */
  deadLetterQueueUrl: 'DeadLetterQueueUrl',
  inboxTable: 'InboxTableName',
  idempotencyTable: 'IdempotencyTableName',
  /** The S3 bucket of dead-letter bodies too large for the dead-letter queue. */
  payloadBucket: 'PayloadBucketName',
  functionName: 'FunctionName',
  /** The function's log group (`aws logs tail <name> --follow`); not `/aws/lambda/<function>`: the construct makes its own. */
  logGroupName: 'LogGroupName',
  /** The outbox relay's SNS topic, when its destination is a topic. */
  outboxTopicArn: 'OutboxTopicArn',
  /** The outbox relay's SQS queue, when its destination is a queue. */
  outboxQueueUrl: 'OutboxQueueUrl',
  /** The outbox relay's EventBridge event bus, when its destination is a bus. */
  outboxEventBusArn: 'OutboxEventBusArn',
  outboxRelayFunctionName: 'OutboxRelayFunctionName',
  /** The SNS topic the alarms notify (with monitoring). */
  alarmTopicArn: 'AlarmTopicArn',
  /** The CloudWatch dashboard's name and its console URL (with monitoring). */
  dashboardName: 'DashboardName',
  dashboardUrl: 'DashboardUrl',
  /** The Kafka event source mapping's consumer group and id (with a Kafka source). */
  kafkaConsumerGroupId: 'KafkaConsumerGroupId',
  kafkaEventSourceMappingId: 'KafkaEventSourceMappingId',
} as const;

/** What a consumer output holds: a key of {@link consumerOutputKeys}. */
export type ConsumerOutput = keyof typeof consumerOutputKeys;

/** The suffix of a business table's output: `<prefix><Table name in PascalCase>TableName`. */
export const BUSINESS_TABLE_OUTPUT_SUFFIX = 'TableName';

/** Business table names whose output key would be one of the library's own (`InboxTableName`, `IdempotencyTableName`). */
const RESERVED_TABLE_OUTPUT_NAMES: ReadonlySet<string> = new Set(['Inbox', 'Idempotency']);

/** A prefix of a consumer's output keys: empty, or a letter then letters and digits. */
export const OUTPUT_PREFIX_PATTERN = /^([A-Za-z][A-Za-z0-9]*)?$/;

/**
 * A business table's logical name (a key of the consumer's `tables` option) in the form its
 * output key carries: PascalCase without `_` (`orders` → `Orders`, `stock_items` and
 * `stockItems` → `StockItems`).
 *
 * @throws Error when `logicalName` is not 1 to 64 letters, digits or `_` starting with a letter,
 *   or its output would be the inbox's or the idempotency table's (`inbox`, `idempotency`)
 */
export function businessTableOutputName(logicalName: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(logicalName)) {
    throw new Error(`table name "${logicalName}" must be 1 to 64 letters, digits or '_', starting with a letter`);
  }
  const name = logicalName
    .split('_')
    .filter((part) => part !== '')
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
  if (RESERVED_TABLE_OUTPUT_NAMES.has(name)) {
    throw new Error(
      `a business table named "${logicalName}" would have the output key of the library's own ${name.toLowerCase()} table: rename it`,
    );
  }
  return name;
}

/**
 * The output key of a business table: `<prefix><PascalCase name>TableName` (`orders` →
 * `OrdersTableName`).
 *
 * @throws Error as {@link businessTableOutputName}
 */
export function businessTableOutputKey(logicalName: string, prefix = ''): string {
  return `${prefix}${businessTableOutputName(logicalName)}${BUSINESS_TABLE_OUTPUT_SUFFIX}`;
}
