import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { defaultSettings, withOverrides, type ConsumerSettings } from '../config/settings.js';
import { IdempotentConsumer } from './IdempotentConsumer.js';

/** Properties of a {@link ConsumerStack}. */
export interface ConsumerStackProps extends StackProps {
  /**
   * The consumer's settings. CDK context can still override a few of them (see
   * {@link ConsumerStack}).
   *
   * @default defaultSettings (from `config/settings.ts`)
   */
  readonly settings?: ConsumerSettings;
}

/**
 * The deployable stack: one {@link IdempotentConsumer} and outputs naming what it created
 * (queue and dead-letter queue URLs, table names, function name) for producers, operators and
 * the integration tests.
 *
 * CDK context overrides the settings, so a variant needs no code change:
 * - `-c fifo=true` (or `false`) deploys a FIFO (or standard) source queue and dead-letter queue.
 *
 * The stack needs no account or region at synth time (no lookups), so `cdk synth` works
 * offline.
 *
 * @throws InvalidSettingsError when the settings (after context overrides) break an AWS rule
 * @throws Error when a context value is not one of the accepted values
 */
export class ConsumerStack extends Stack {
  /** The consumer: its queues, tables and function (later additions attach to these). */
  public readonly consumer: IdempotentConsumer;

  constructor(scope: Construct, id: string, props: ConsumerStackProps = {}) {
    super(scope, id, {
      description: 'Idempotent SQS consumer on AWS Lambda with a DynamoDB inbox and a dead-letter queue',
      ...props,
    });
    const settings = settingsWithContext(this, props.settings ?? defaultSettings);

    this.consumer = new IdempotentConsumer(this, 'Consumer', { settings });

    const outputs: Record<string, { value: string; description: string }> = {
      QueueUrl: { value: this.consumer.queue.queueUrl, description: 'URL of the source queue (send messages here)' },
      DeadLetterQueueUrl: {
        value: this.consumer.deadLetterQueue.queueUrl,
        description: 'URL of the dead-letter queue (messages with failureReason attributes)',
      },
      InboxTableName: { value: this.consumer.inboxTable.tableName, description: 'Name of the inbox table' },
      OrdersTableName: { value: this.consumer.ordersTable.tableName, description: 'Name of the orders (business) table' },
      IdempotencyTableName: {
        value: this.consumer.idempotencyTable.tableName,
        description: 'Name of the Powertools idempotency table (side-effect guard)',
      },
      FunctionName: { value: this.consumer.function.functionName, description: 'Name of the consumer function' },
    };
    for (const [outputId, output] of Object.entries(outputs)) {
      new CfnOutput(this, outputId, output);
    }

    // Room for later additions, attached to `this.consumer`:
    // - an optional Kafka (MSK) event source with finite retries and an on-failure destination;
    // - CloudWatch alarms and a dashboard.
  }
}

/** Applies the CDK context overrides (`fifo`) to `base`; values arrive as strings from `-c`. */
function settingsWithContext(scope: Construct, base: ConsumerSettings): ConsumerSettings {
  const fifo = booleanContext(scope, 'fifo');
  return fifo === undefined ? base : withOverrides({ queue: { fifo } }, base);
}

/**
 * Reads a boolean from CDK context: `true`/`false` from `cdk.json` or `"true"`/`"false"`
 * from `-c key=value`; `undefined` when the key is not set.
 *
 * @throws Error when the value is anything else
 */
function booleanContext(scope: Construct, key: string): boolean | undefined {
  const value: unknown = scope.node.tryGetContext(key);
  if (value === undefined) return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`CDK context "${key}" must be true or false (for example -c ${key}=true), got ${JSON.stringify(value)}`);
}
