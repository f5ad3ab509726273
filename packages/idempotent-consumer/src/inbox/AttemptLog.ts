import { randomUUID } from 'node:crypto';
import { BatchGetCommand, type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { tableKeys } from '../settings/settings.js';
import { expiresAt } from './inboxItems.js';

/** The `kind` attribute of attempt records. */
export const ATTEMPTS_KIND = 'attempts';

/** One failed attempt of a Kafka record, to count. */
export interface RecordedFailure {
  /** Where the record came from: the MSK cluster ARN, or `SelfManagedKafka:<bootstrap servers>`. */
  readonly source: string;
  /** The error's name, e.g. `PredecessorNotApplied`. */
  readonly errorType: string;
  /** The error's message, at most 1,024 characters. */
  readonly errorMessage: string;
}

/** Options of {@link AttemptLog}. */
export interface AttemptLogOptions {
  readonly client: DynamoDBDocumentClient;
  /** The inbox table: attempt records live beside inbox rows. */
  readonly tableName: string;
  readonly consumerName: string;
  /** How long a record lives after its last write, in seconds (DynamoDB TTL). */
  readonly ttlSeconds: number;
  readonly now?: () => Date;
  /** Waits `ms` milliseconds between the tries of a skip's write. @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Tries of a write of this log (a skip, a failure): a write lost miscounts its message. */
const WRITE_TRIES = 4;
/** What a write may meet that a later try may not: contention, throttling, a server's fault. */
const TRANSIENT = new Set([
  'TransactionConflictException',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
]);

/**
 * Counts what a source's own counter gets wrong, so that attempt budgets count real attempts
 * (`retry.maxAttempts`), in one record per message in the inbox table,
 * `<consumer>#attempt#<source id>`, written only on the failure path:
 *
 * - **SQS** counts every receive (`ApproximateReceiveCount`), also those in which the consumer
 *   did not attempt the message: a FIFO message reported behind a failed one of its group, a
 *   retry refused because another invocation holds the side-effect lock, a receive too close to
 *   the deadline. {@link recordSkip} counts those; a message's attempts are its receive count
 *   minus its skips. A message that fails before its receive count reaches the budget costs no
 *   read and no write here.
 * - **Kafka** records carry no count at all: {@link recordFailure} counts each failed attempt by
 *   the record's coordinates, with the record's identity, because the same coordinates can later
 *   hold another record (a recreated topic; every local run's fresh log starts at offset 0).
 *
 * Each write counts once even when the SDK sends it again after the server applied it (a 5xx or a
 * timeout after the write): it carries a token of its own (`lastWriteToken`), which its condition
 * refuses to see twice; the retry then reads back (`ReturnValuesOnConditionCheckFailure: ALL_OLD`)
 * what its first try wrote.
 *
 * To read a record as an operator:
 * `aws dynamodb get-item --table-name <inbox table> --key '{"pk":{"S":"<consumer>#attempt#kafka:events-0@12"}}'`
 */
export class AttemptLog {
  readonly #options: AttemptLogOptions;
  readonly #now: () => Date;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: AttemptLogOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** The record's partition key for a source id (`sqs:<messageId>`, `kafka:<topic>-<partition>@<offset>`). */
  key(sourceId: string): string {
    return `${this.#options.consumerName}#attempt#${sourceId}`;
  }

  /**
   * Counts one receive of an SQS message in which it was not attempted. A write that meets
   * contention, throttling or a server's fault is tried again (four tries in all, 50 to 400 ms
   * apart, beyond the SDK's own retries), with one token, so it counts once: a skip that is not
   * written cuts its message's budget short by one attempt.
   *
   * @throws the store's error, when the last try fails or the error is not a transient one
   */
  async recordSkip(sourceId: string, why: string): Promise<void> {
    const now = this.#now();
    // One token for every try: a try that failed after the server applied it (a 5xx, a timeout)
    // makes the next one fail its condition, so the skip is counted once.
    const token = randomUUID();
    try {
      await this.#retryingTransient(() =>
        this.#options.client.send(
          new UpdateCommand({
            TableName: this.#options.tableName,
            Key: { [tableKeys.inbox.partitionKey]: this.key(sourceId) },
            UpdateExpression:
              'ADD #skips :one SET #kind = :kind, #consumer = :consumer, #lastSkip = :why, #lastSkippedAt = :at, #expiresAt = :expiresAt, #token = :token',
            ConditionExpression: 'attribute_not_exists(#token) OR #token <> :token',
            ExpressionAttributeNames: {
              '#token': 'lastWriteToken',
              '#skips': 'skips',
              '#kind': 'kind',
              '#consumer': 'consumer',
              '#lastSkip': 'lastSkip',
              '#lastSkippedAt': 'lastSkippedAt',
              '#expiresAt': tableKeys.inbox.ttlAttribute,
            },
            ExpressionAttributeValues: {
              ':one': 1,
              ':kind': ATTEMPTS_KIND,
              ':consumer': this.#options.consumerName,
              ':why': why.slice(0, 256),
              ':at': now.toISOString(),
              ':expiresAt': expiresAt(now, this.#options.ttlSeconds),
              ':token': token,
            },
          }),
        ),
      );
    } catch (error) {
      // Only this skip's own earlier try can have written its token: the skip is counted.
      if (isConditionalCheckFailed(error)) return;
      throw error;
    }
  }

  /**
   * Sends a write of this log, tried again (up to {@link WRITE_TRIES} tries in all, 50 to 400 ms
   * apart) when it meets contention, throttling or a server's fault, beyond the SDK's own retries
   * (the SDK does not retry a `TransactionConflictException`). A write lost here would miscount its
   * message: a lost skip cuts its budget short, a lost failure lets the Kafka mapping's retry
   * limit run out before the consumer dead-letters the record. Each write carries one token for
   * all its tries, so a try the server applied counts once.
   *
   * @throws the last try's error, or the first error that is not transient
   */
  async #retryingTransient<T>(send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await send();
      } catch (error) {
        const transient = error instanceof Error && (TRANSIENT.has(error.name) || (error as { $fault?: string }).$fault === 'server');
        if (!transient || attempt >= WRITE_TRIES) throw error;
        await this.#sleep(25 * 2 ** attempt + Math.random() * 25);
      }
    }
  }

  /**
   * The skipped receives of these SQS messages (strongly consistent, one `BatchGetItem` per 100).
   *
   * @returns source id → skips (0 when none was recorded)
   * @throws the store's error
   */
  async skipsOf(sourceIds: readonly string[]): Promise<Map<string, number>> {
    const skips = new Map<string, number>(sourceIds.map((id) => [id, 0]));
    const pk = tableKeys.inbox.partitionKey;
    const byKey = new Map(sourceIds.map((id) => [this.key(id), id]));
    let pending = [...byKey.keys()];
    for (let round = 0; pending.length > 0 && round < 5; round += 1) {
      const next: string[] = [];
      for (let i = 0; i < pending.length; i += 100) {
        const output = await this.#options.client.send(
          new BatchGetCommand({
            RequestItems: {
              [this.#options.tableName]: {
                Keys: pending.slice(i, i + 100).map((key) => ({ [pk]: key })),
                ConsistentRead: true,
                ProjectionExpression: '#pk, #skips',
                ExpressionAttributeNames: { '#pk': pk, '#skips': 'skips' },
              },
            },
          }),
        );
        for (const item of output.Responses?.[this.#options.tableName] ?? []) {
          const id = byKey.get(String(item[pk]));
          if (id !== undefined) skips.set(id, Number(item.skips ?? 0));
        }
        for (const key of output.UnprocessedKeys?.[this.#options.tableName]?.Keys ?? []) next.push(String(key[pk]));
      }
      pending = next;
    }
    if (pending.length > 0) throw new Error(`could not read ${pending.length} attempt records (unprocessed keys)`);
    return skips;
  }

  /**
   * Counts one failed attempt of a Kafka record and keeps its last error.
   *
   * The count belongs to one record: the update is conditional on the stored `recordIdentity`;
   * when another record's count is there, it restarts at 1 for this one.
   *
   * A write that meets contention, throttling or a server's fault is tried again, as a skip's is
   * (see {@link recordSkip}): a failure not counted would let the Kafka mapping's retry limit run
   * out before the consumer dead-letters the record.
   *
   * @returns the failed attempts of this record, this one included
   * @throws the store's error, when the last try fails or the error is not a transient one
   */
  async recordFailure(sourceId: string, recordIdentity: string, failure: RecordedFailure): Promise<number> {
    const now = this.#now();
    const base = this.#failureUpdate(sourceId, recordIdentity, failure, now, randomUUID());
    // The SDK retries a call that failed after the server applied it (a 5xx, a timeout): the
    // call's token, written with the count, makes such a retry fail its condition, and the count
    // it finds (ALL_OLD) is this call's.
    const notThisCall = '(attribute_not_exists(#token) OR #token <> :token)';
    for (let round = 0; ; round += 1) {
      try {
        const output = await this.#retryingTransient(() =>
          this.#options.client.send(
            new UpdateCommand({
              ...base,
              UpdateExpression: `ADD #attempts :one SET ${base.UpdateExpression}`,
              ConditionExpression: `(attribute_not_exists(#pk) OR #recordIdentity = :recordIdentity) AND ${notThisCall}`,
              ReturnValues: 'UPDATED_NEW',
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          ),
        );
        return Number(output.Attributes?.attempts ?? 1);
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        const counted = countWrittenBy(error, base.ExpressionAttributeValues[':token']);
        if (counted !== undefined) return counted;
      }
      try {
        await this.#retryingTransient(() =>
          this.#options.client.send(
            new UpdateCommand({
              ...base,
              UpdateExpression: `SET #attempts = :one, ${base.UpdateExpression}`,
              ConditionExpression: `attribute_exists(#pk) AND (attribute_not_exists(#recordIdentity) OR #recordIdentity <> :recordIdentity) AND ${notThisCall}`,
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          ),
        );
        return 1;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        const counted = countWrittenBy(error, base.ExpressionAttributeValues[':token']);
        if (counted !== undefined) return counted;
        if (round >= 1) throw error;
      }
    }
  }

  #failureUpdate(sourceId: string, recordIdentity: string, failure: RecordedFailure, now: Date, token: string) {
    return {
      TableName: this.#options.tableName,
      Key: { [tableKeys.inbox.partitionKey]: this.key(sourceId) },
      UpdateExpression:
        '#kind = :kind, #consumer = :consumer, #recordIdentity = :recordIdentity, #source = :source, ' +
        '#lastErrorType = :errorType, #lastErrorMessage = :errorMessage, #lastFailedAt = :failedAt, #expiresAt = :expiresAt, #token = :token',
      ExpressionAttributeNames: {
        '#pk': tableKeys.inbox.partitionKey,
        '#attempts': 'attempts',
        '#kind': 'kind',
        '#consumer': 'consumer',
        '#recordIdentity': 'recordIdentity',
        '#source': 'source',
        '#lastErrorType': 'lastErrorType',
        '#lastErrorMessage': 'lastErrorMessage',
        '#lastFailedAt': 'lastFailedAt',
        '#expiresAt': tableKeys.inbox.ttlAttribute,
        '#token': 'lastWriteToken',
      },
      ExpressionAttributeValues: {
        ':token': token,
        ':one': 1,
        ':kind': ATTEMPTS_KIND,
        ':consumer': this.#options.consumerName,
        ':recordIdentity': recordIdentity,
        ':source': failure.source || '(unknown)',
        ':errorType': failure.errorType || 'Error',
        ':errorMessage': (failure.errorMessage || '(empty)').slice(0, 1024),
        ':failedAt': now.toISOString(),
        ':expiresAt': expiresAt(now, this.#options.ttlSeconds),
      },
    };
  }
}

/**
 * The count stored by the call whose token is `token`, from a conditional check failure's old
 * item (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, marshalled: the document client does not
 * convert an error's item); `undefined` when another write is there.
 */
function countWrittenBy(error: unknown, token: string): number | undefined {
  const item = (error as { Item?: Record<string, unknown> }).Item;
  const value = (attribute: unknown): unknown =>
    attribute !== null && typeof attribute === 'object'
      ? ((attribute as { S?: unknown; N?: unknown }).S ?? (attribute as { N?: unknown }).N)
      : attribute;
  if (item === undefined || value(item.lastWriteToken) !== token) return undefined;
  const attempts = Number(value(item.attempts));
  return Number.isFinite(attempts) && attempts > 0 ? attempts : 1;
}

function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}
