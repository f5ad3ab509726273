import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tableKeys } from '../../config/settings.js';
import type { KafkaCoordinates } from '../batch/kafkaBatchResponse.js';
import { topicPartition } from '../batch/kafkaBatchResponse.js';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { MAX_ERROR_MESSAGE_LENGTH } from '../dlq/deadLetterMessage.js';
import type { KafkaAttemptLog, KafkaFailedAttempts, KafkaRecordFailure } from './KafkaAttemptLog.js';

/** The marker between the consumer name and the coordinates in an attempt item's key. */
export const KAFKA_ATTEMPT_KEY_MARKER = 'kafka-attempt';

/**
 * The inbox table key of a Kafka record's attempt item:
 * `<consumerName>#kafka-attempt#<topic>-<partition>@<offset>`, e.g.
 * `cafe-orders#kafka-attempt#orders-0@12`.
 *
 * Inbox rows are keyed `<consumerName>#<eventId>`; an `eventId` beginning with
 * `kafka-attempt#` would share this key space, so producers must not use that prefix.
 */
export function kafkaAttemptKey(consumerName: string, coordinates: KafkaCoordinates): string {
  const { topic, partition, offset } = coordinates;
  return `${consumerName}#${KAFKA_ATTEMPT_KEY_MARKER}#${topicPartition(topic, partition)}@${offset}`;
}

/** Options of {@link DynamoDBKafkaAttemptLog}. */
export interface DynamoDBKafkaAttemptLogOptions {
  readonly client: DynamoDBDocumentClient;
  /** The inbox table (partition key `pk`, TTL attribute `expiresAt`): attempt items live beside inbox rows. */
  readonly table: string;
  /** This consumer's name, the key's prefix. */
  readonly consumerName: string;
  /** How long an attempt item lives after its last failure, in seconds (DynamoDB TTL). */
  readonly ttlSeconds: number;
  /** The clock. @default () => new Date() */
  readonly now?: () => Date;
}

/**
 * The DynamoDB adapter of {@link KafkaAttemptLog}: one item per failed record in the inbox
 * table, written with one `UpdateItem` per failure (`ADD attempts 1`, `ReturnValues:
 * UPDATED_NEW`), so the count is atomic and needs no read. Nothing is written for a record
 * that succeeds, so the happy path costs nothing.
 *
 * The count belongs to one record: the item keeps the record's identity (`recordIdentity`:
 * its Kafka timestamp and a hash of key and value), because the same coordinates can later hold
 * another record (a recreated topic; every local run's fresh log starts at offset 0) while the
 * item lives on for the inbox TTL. The `UpdateItem` is conditional
 * (`attribute_not_exists(pk) OR recordIdentity = :identity`): the first failure of a record and
 * every later one take that one round trip. When the condition fails (the item holds another
 * record's count, or one written before identities were kept), a second `UpdateItem`
 * overwrites the item with `attempts = 1` and this record's identity and error, so such a
 * record starts at attempt 1 rather than being dead-lettered as `RetriesExhausted` on its first
 * delivery. Should that reset lose a race to a writer of this same record, the conditional count
 * is tried once more.
 *
 * Item: `pk` ({@link kafkaAttemptKey}), `kind = "kafka-attempt"`, `consumer`, `topic`,
 * `partition`, `offset`, `recordIdentity`, `source`, `attempts`, `lastErrorType`, `lastErrorMessage`,
 * `lastFailureReason` (when non-retryable), `lastFailedAt` (ISO 8601) and `expiresAt` (epoch
 * seconds, TTL). To read it as an operator:
 *
 * ```sh
 * aws dynamodb get-item --table-name <InboxTableName> \
 *   --key '{"pk":{"S":"cafe-orders#kafka-attempt#orders-0@12"}}'
 * ```
 */
export class DynamoDBKafkaAttemptLog implements KafkaAttemptLog {
  readonly #options: DynamoDBKafkaAttemptLogOptions;
  readonly #now: () => Date;

  constructor(options: DynamoDBKafkaAttemptLogOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
  }

  /**
   * The attempt log of the consumer that `config` describes (inbox table, consumer name, inbox
   * TTL), on a document client made from `dynamoDb`.
   */
  static fromConfig(config: RuntimeConfig, dynamoDb: DynamoDBClient, now?: () => Date): DynamoDBKafkaAttemptLog {
    return new DynamoDBKafkaAttemptLog({
      client: DynamoDBDocumentClient.from(dynamoDb, { marshallOptions: { removeUndefinedValues: true } }),
      table: config.inboxTable,
      consumerName: config.consumerName,
      ttlSeconds: config.inboxTtlSeconds,
      ...(now !== undefined ? { now } : {}),
    });
  }

  async recordFailure(failure: KafkaRecordFailure): Promise<number> {
    const now = this.#now();
    // Two rounds at most: a reset can lose a race with another writer of this record's identity.
    for (let round = 0; ; round += 1) {
      try {
        return await this.#count(failure, now);
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      try {
        return await this.#restart(failure, now);
      } catch (error) {
        if (!isConditionalCheckFailed(error) || round >= 1) throw error;
      }
    }
  }

  /** `ADD attempts 1` when the item is absent or holds this record's count; else ConditionalCheckFailed. */
  async #count(failure: KafkaRecordFailure, now: Date): Promise<number> {
    const update = this.#update(failure, now, 'ADD #attempts :one SET ');
    const output = await this.#options.client.send(
      new UpdateCommand({
        ...update,
        ConditionExpression: 'attribute_not_exists(#pk) OR #recordIdentity = :recordIdentity',
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(output.Attributes?.attempts ?? 1);
  }

  /** `SET attempts = 1` when the item holds another record's count; else ConditionalCheckFailed. */
  async #restart(failure: KafkaRecordFailure, now: Date): Promise<number> {
    const update = this.#update(failure, now, 'SET #attempts = :one, ');
    await this.#options.client.send(
      new UpdateCommand({
        ...update,
        ConditionExpression: 'attribute_exists(#pk) AND (attribute_not_exists(#recordIdentity) OR #recordIdentity <> :recordIdentity)',
      }),
    );
    return 1;
  }

  /** The key, the `SET` of every attribute but `attempts` (after `prefix`), names and values. */
  #update(failure: KafkaRecordFailure, now: Date, prefix: string) {
    const { table, consumerName, ttlSeconds } = this.#options;
    return {
      TableName: table,
      Key: { [tableKeys.inbox.partitionKey]: kafkaAttemptKey(consumerName, failure) },
      UpdateExpression:
        prefix +
        '#kind = :kind, #consumer = :consumer, #topic = :topic, #partition = :partition, ' +
        '#offset = :offset, #recordIdentity = :recordIdentity, #source = :source, #lastErrorType = :errorType, ' +
        '#lastErrorMessage = :errorMessage, #lastFailedAt = :failedAt, #expiresAt = :expiresAt' +
        (failure.reason !== undefined ? ', #lastFailureReason = :reason' : '') +
        (failure.reason === undefined ? ' REMOVE #lastFailureReason' : ''),
      ExpressionAttributeNames: {
        '#pk': tableKeys.inbox.partitionKey,
        '#attempts': 'attempts',
        '#kind': 'kind',
        '#consumer': 'consumer',
        '#topic': 'topic',
        '#partition': 'partition',
        '#offset': 'offset',
        '#recordIdentity': 'recordIdentity',
        '#source': 'source',
        '#lastErrorType': 'lastErrorType',
        '#lastErrorMessage': 'lastErrorMessage',
        '#lastFailureReason': 'lastFailureReason',
        '#lastFailedAt': 'lastFailedAt',
        '#expiresAt': tableKeys.inbox.ttlAttribute,
      },
      ExpressionAttributeValues: {
        ':one': 1,
        ':kind': KAFKA_ATTEMPT_KEY_MARKER,
        ':consumer': consumerName,
        ':topic': failure.topic,
        ':partition': failure.partition,
        ':offset': failure.offset,
        ':recordIdentity': failure.recordIdentity,
        ':source': failure.source,
        ':errorType': failure.errorType || 'Error',
        ':errorMessage': truncate(failure.errorMessage, MAX_ERROR_MESSAGE_LENGTH),
        ':failedAt': now.toISOString(),
        ':expiresAt': Math.floor(now.getTime() / 1000) + ttlSeconds,
        ...(failure.reason !== undefined ? { ':reason': failure.reason } : {}),
      },
    };
  }

  async read(coordinates: KafkaCoordinates): Promise<KafkaFailedAttempts | undefined> {
    const { client, table, consumerName } = this.#options;
    const output = await client.send(
      new GetCommand({
        TableName: table,
        Key: { [tableKeys.inbox.partitionKey]: kafkaAttemptKey(consumerName, coordinates) },
        ConsistentRead: true,
      }),
    );
    const item = output.Item;
    if (item === undefined) return undefined;
    return {
      topic: String(item.topic),
      partition: Number(item.partition),
      offset: Number(item.offset),
      source: String(item.source),
      recordIdentity: typeof item.recordIdentity === 'string' ? item.recordIdentity : undefined,
      attempts: Number(item.attempts),
      lastErrorType: String(item.lastErrorType),
      lastErrorMessage: String(item.lastErrorMessage),
      lastFailureReason: typeof item.lastFailureReason === 'string' ? item.lastFailureReason : undefined,
      lastFailedAt: String(item.lastFailedAt),
    };
  }
}

function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

function truncate(text: string, max: number): string {
  const nonEmpty = text === '' ? '(empty)' : text;
  return nonEmpty.length <= max ? nonEmpty : `${nonEmpty.slice(0, max - 1)}…`;
}
