import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { tableKeys } from '../settings/settings.js';
import { expiresAt } from '../inbox/inboxItems.js';
import type { OutboxDestination, OutboxMessage } from './OutboxDestination.js';

/** Options of {@link OutboxPublisher}. */
export interface OutboxPublisherOptions {
  /**
   * The destination of a logical name (`OutboxMessage.destination`).
   * @throws OutboxMessageError when the relay has no such destination
   */
  readonly destination: (logicalName: string) => OutboxDestination;
  /** Where Powertools keeps its idempotency records (a `DynamoDBPersistenceLayer` on the idempotency table). */
  readonly persistenceStore: BasePersistenceLayer;
  /**
   * The prefix of every idempotency record key: the consumer's name, so that a completed publish
   * is still known after a redeploy under another function name (Powertools' default prefix is
   * the function name).
   */
  readonly keyPrefix: string;
  /** How long a completed publish is remembered, in seconds (`expiresAfterSeconds`). */
  readonly idempotencyTtlSeconds: number;
  /** For the mark. */
  readonly documentClient: DynamoDBDocumentClient;
  /** The inbox table, which holds the outbox items. */
  readonly inboxTable: string;
  /** Lifetime of a published item, in seconds, from its mark. */
  readonly publishedTtlSeconds: number;
  /** The clock. */
  readonly now: () => Date;
}

/** What publishing one message did. */
export interface PublishResult {
  /**
   * `true` when this call sent the message; `false` when Powertools found the publish completed
   * before (a retry of the stream batch, a redrive) and nothing was sent.
   */
  readonly sent: boolean;
  /** When the message was sent (ISO 8601): by this call, or by the one that completed before. */
  readonly publishedAt: string;
  /** Milliseconds from the item's creation to the send, when this call sent it. */
  readonly publishDelayMs?: number;
  /** The destination's id of the message, when this call sent it and the destination gave one. */
  readonly destinationMessageId?: string;
  /** `false` when the item was already marked published, or is gone (its TTL ran out). */
  readonly marked: boolean;
}

/** What Powertools stores as the result of a completed publish (JSON). */
interface StoredPublish {
  readonly publishedAt: string;
  readonly destinationMessageId?: string;
}

/** What the guarded function receives after the message: whether it ran (Powertools passes it through). */
interface CallState {
  sent: boolean;
  publishDelayMs?: number;
}

/**
 * Publishes outbox messages, each at most once per message id as far as Powertools idempotency
 * can tell, then marks the item published with a short TTL:
 *
 * 1. Powertools idempotency (`makeIdempotent`, key `messageId`, prefix the consumer name) writes
 *    an in-progress record, calls the destination, then records the completion with the publish
 *    time. A message whose publish completed before is not sent again; one in progress in another
 *    invocation raises `IdempotencyAlreadyInProgressError` (the record is retried); the lock
 *    expires at the calling invocation's deadline, so a retry after a crash or timeout takes it over.
 * 2. The item is updated with `publishedAt` and `expiresAt` = now + `publishedTtlSeconds`, on the
 *    condition that it exists and is not marked yet (a mark never resurrects an expired item).
 *
 * What this cannot do: if the invocation dies after the destination accepted the message and
 * before Powertools records the completion, the retry sends it again, with the same message id:
 * a FIFO topic or queue drops the second send (deduplication id), any other receiver can
 * deduplicate on the `outboxMessageId` attribute.
 */
export class OutboxPublisher {
  readonly #options: OutboxPublisherOptions;

  constructor(options: OutboxPublisherOptions) {
    this.#options = options;
  }

  /**
   * The guarded publish of one call: its own Powertools config, whose in-progress record expires
   * at the deadline of the calling invocation (`lambdaContext`). Nothing of one invocation is kept
   * where another could read it, so a process serving several invocations at once (Lambda Managed
   * Instances) locks each publish until its own invocation's deadline.
   */
  #guard(lambdaContext: Context): (message: OutboxMessage, state: CallState) => Promise<StoredPublish> {
    const options = this.#options;
    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'messageId',
      expiresAfterSeconds: options.idempotencyTtlSeconds,
      throwOnNoIdempotencyKey: true,
      lambdaContext,
    });
    return makeIdempotent(
      async (message: OutboxMessage, state: CallState): Promise<StoredPublish> => {
        const destination = options.destination(message.destination);
        const receipt = await destination.publish(message);
        const at = options.now();
        state.sent = true;
        state.publishDelayMs = Math.max(0, at.getTime() - Date.parse(message.createdAt));
        return {
          publishedAt: at.toISOString(),
          ...(receipt.destinationMessageId === undefined ? {} : { destinationMessageId: receipt.destinationMessageId }),
        };
      },
      { persistenceStore: options.persistenceStore, config, keyPrefix: options.keyPrefix },
    );
  }

  /**
   * Publishes `message` (unless its publish completed before) and marks its item published.
   *
   * @param lambdaContext - the calling invocation's Lambda context: the in-progress record of the
   *   publish expires at its deadline
   * @throws OutboxMessageError when the message cannot be published as it is (unknown
   *   destination, reserved or too many attributes)
   * @throws Powertools' `IdempotencyAlreadyInProgressError` when another invocation is publishing it
   * @throws whatever the destination or DynamoDB throws
   */
  async publish(message: OutboxMessage, lambdaContext: Context): Promise<PublishResult> {
    const state: CallState = { sent: false };
    const stored = await this.#guard(lambdaContext)(message, state);
    const marked = await this.#mark(message, stored.publishedAt);
    return {
      sent: state.sent,
      publishedAt: stored.publishedAt,
      ...(state.sent && state.publishDelayMs !== undefined ? { publishDelayMs: state.publishDelayMs } : {}),
      ...(state.sent && stored.destinationMessageId !== undefined ? { destinationMessageId: stored.destinationMessageId } : {}),
      marked,
    };
  }

  async #mark(message: OutboxMessage, publishedAt: string): Promise<boolean> {
    const { partitionKey, ttlAttribute } = tableKeys.inbox;
    try {
      await this.#options.documentClient.send(
        new UpdateCommand({
          TableName: this.#options.inboxTable,
          Key: { [partitionKey]: `${message.consumer}#outbox#${message.messageId}` },
          UpdateExpression: 'SET #publishedAt = :publishedAt, #ttl = :expiresAt',
          ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#publishedAt)',
          ExpressionAttributeNames: { '#pk': partitionKey, '#publishedAt': 'publishedAt', '#ttl': ttlAttribute },
          ExpressionAttributeValues: {
            ':publishedAt': publishedAt,
            ':expiresAt': expiresAt(this.#options.now(), this.#options.publishedTtlSeconds),
          },
        }),
      );
      return true;
    } catch (error) {
      if (
        error instanceof ConditionalCheckFailedException ||
        (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException'
      )
        return false;
      throw error;
    }
  }
}
