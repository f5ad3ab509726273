/**
 * The baseline the benchmark measures the engine against: the café consumer written the typical
 * Powertools way, around the same business code (`parseOrderEvent`, `decideOrder`,
 * `notifyCustomer`) and the same items.
 *
 * - `BatchProcessor` + `processPartialResponse` report partial batch failures;
 * - each record runs inside `makeIdempotent` (Powertools idempotency, DynamoDB persistence layer),
 *   keyed on the body's `eventId` (`powertools_json(body).eventId`), so a producer's retry of an
 *   event is caught as well as a redelivery: a lock `PutItem`, the record's work, a completion
 *   `UpdateItem`; a duplicate costs the one refused `PutItem` (it returns the stored record);
 * - the record's work: a consistent `GetItem` of the order, `decideOrder`, the notification
 *   guarded by its own `makeIdempotent` (lock, send, completion) *before* the writes (so a retry
 *   of a record whose writes failed does not notify twice), then the business writes: one
 *   conditional `PutItem` for one item, a `TransactWriteItems` for several (the order, its
 *   ledger entry and, for a payment, its outbox item). The order carries a version for optimistic
 *   concurrency, as the engine's does;
 * - every error is thrown: the record is reported as a batch item failure and comes back until
 *   the queue's redrive policy moves it to the dead-letter queue (no reasons attached), the way a
 *   Powertools consumer without a classifier of its own behaves.
 *
 * Like with like: where the engine writes an outbox item (a `PaymentReceived` message for each
 * payment), the baseline writes the same item, as a Powertools user with an outbox would: in the
 * transaction of the payment's own writes, to an outbox table of its own, with the same attributes
 * (so the same size and units) and the same stable message id (SHA-256 of consumer name,
 * idempotency key and position, the formula of `outboxMessageId` in `idempotent-consumer/outbox`,
 * computed here so that the baseline's bundle does not carry the engine's relay).
 *
 * @module
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { createHash } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { LEDGER_SK_PREFIX, NOTIFY_CUSTOMER, notifyCustomer, ORDER_SK } from '@idempotent-consumer/example-cafe/consumer';
import { parseOrderEvent } from '@idempotent-consumer/example-cafe/domain/events';
import { decideOrder, type LedgerEntry, type Order, type PaymentReceived } from '@idempotent-consumer/example-cafe/domain/order';

/** The attribute holding the order item's version (the engine's default name, so the items match). */
const VERSION = '_version';

/** What became of one record in one invocation. */
export type BaselineOutcome = 'applied' | 'duplicate' | 'failed';

/** Options of {@link createPowertoolsBaseline}. */
export interface PowertoolsBaselineOptions {
  /** The DynamoDB client of everything the handler sends (business writes and Powertools' records). */
  readonly dynamoDb: DynamoDBClient;
  /** Physical name of the café's `orders` table (partition key `orderId`, sort key `sk`). */
  readonly ordersTable: string;
  /** Physical name of the Powertools idempotency table (partition key `id`). */
  readonly idempotencyTable: string;
  /** Physical name of the outbox table (partition key `pk`, TTL attribute `expiresAt`). */
  readonly outboxTable: string;
  /** The consumer's name, in the outbox items' ids (the engine's `consumerName`). @default 'cafe-orders' */
  readonly consumerName?: string;
  /** How long an outbox item is kept, in seconds (the engine's `inboxTtlSeconds`). @default 2,592,000 (30 days) */
  readonly outboxTtlSeconds?: number;
  /**
   * Told what became of each record of each invocation (for the benchmark's counts), and for a
   * failed record the `name` of the error it failed with (`undefined` when none reached the record handler).
   */
  readonly onOutcome?: (messageId: string, outcome: BaselineOutcome, errorName?: string) => void;
}

/** An SQS handler. */
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * Builds the baseline's SQS handler (see the module comment). Clients and Powertools objects are
 * created here, once per execution environment, as such code does at module scope.
 *
 * @throws FullBatchFailureError (from Powertools) when every record of the event failed: Lambda
 *   then retries the whole batch
 */
export function createPowertoolsBaseline(options: PowertoolsBaselineOptions): SqsHandler {
  const { dynamoDb, ordersTable, idempotencyTable, outboxTable } = options;
  const consumerName = options.consumerName ?? 'cafe-orders';
  const outboxTtlSeconds = options.outboxTtlSeconds ?? 30 * 24 * 3600;
  const documentClient = DynamoDBDocumentClient.from(dynamoDb, { marshallOptions: { removeUndefinedValues: true } });
  const recordConfig = new IdempotencyConfig({ eventKeyJmesPath: 'powertools_json(body).eventId' });
  const notificationConfig = new IdempotencyConfig({ eventKeyJmesPath: 'eventId' });
  const store = () => new DynamoDBPersistenceLayer({ tableName: idempotencyTable, awsSdkV3Client: dynamoDb });
  let context: Context | undefined;
  const completed = new Set<string>();
  const errorNames = new Map<string, string>();

  const notify = makeIdempotent(
    async (payment: PaymentReceived): Promise<void> => {
      const effectKey = `${payment.eventId}#${NOTIFY_CUSTOMER}#0`;
      await notifyCustomer(payment, {
        idempotencyKey: payment.eventId,
        effectKey,
        remainingTimeMs: () => context?.getRemainingTimeInMillis() ?? 0,
        documentClient,
        tableName: () => ordersTable,
      });
    },
    { persistenceStore: store(), config: notificationConfig, keyPrefix: 'baseline.notifyCustomer' },
  );

  const processRecord = async (record: SQSRecord): Promise<void> => {
    const event = parseOrderEvent(JSON.parse(record.body) as unknown);
    const key = { orderId: event.orderId, sk: ORDER_SK };
    const { Item } = await documentClient.send(new GetCommand({ TableName: ordersTable, Key: key, ConsistentRead: true }));
    const change = decideOrder(toOrder(Item), event);
    if (change.paymentReceived !== undefined) await notify(change.paymentReceived);

    const version = typeof Item?.[VERSION] === 'number' ? (Item[VERSION] as number) : undefined;
    const orderPut = {
      TableName: ordersTable,
      Item: {
        ...key,
        status: change.next.status,
        history: change.next.history,
        pointsAwarded: change.next.pointsAwarded,
        [VERSION]: (version ?? 0) + 1,
      },
      ...(Item === undefined
        ? { ConditionExpression: 'attribute_not_exists(orderId)' }
        : {
            ConditionExpression: '#v = :v',
            ExpressionAttributeNames: { '#v': VERSION },
            ExpressionAttributeValues: { ':v': version ?? 0 },
          }),
    };
    if (change.ledger.length === 0 && change.paymentReceived === undefined) {
      await documentClient.send(new PutCommand(orderPut));
    } else {
      const payment = change.paymentReceived;
      const items: NonNullable<TransactWriteCommandInput['TransactItems']> = [
        { Put: orderPut },
        ...change.ledger.map((entry) => ({ Put: ledgerPut(ordersTable, entry) })),
        ...(payment === undefined ? [] : [{ Put: outboxPut(outboxTable, consumerName, payment, outboxTtlSeconds) }]),
      ];
      await documentClient.send(new TransactWriteCommand({ TransactItems: items }));
    }
    completed.add(record.messageId);
  };
  const processIdempotently = makeIdempotent(processRecord, {
    persistenceStore: store(),
    config: recordConfig,
    keyPrefix: 'baseline.processRecord',
  });
  const processAndRemember = async (record: SQSRecord): Promise<void> => {
    try {
      await processIdempotently(record);
    } catch (error) {
      errorNames.set(record.messageId, error instanceof Error ? error.name : typeof error);
      throw error;
    }
  };

  return async (event, invocationContext) => {
    context = invocationContext;
    recordConfig.registerLambdaContext(invocationContext);
    notificationConfig.registerLambdaContext(invocationContext);
    completed.clear();
    errorNames.clear();
    let response: SQSBatchResponse;
    try {
      response = await processPartialResponse(event, processAndRemember, new BatchProcessor(EventType.SQS), {
        context: invocationContext,
      });
    } catch (error) {
      for (const record of event.Records) options.onOutcome?.(record.messageId, 'failed', errorNames.get(record.messageId));
      throw error;
    }
    const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    for (const record of event.Records) {
      options.onOutcome?.(
        record.messageId,
        failed.has(record.messageId) ? 'failed' : completed.has(record.messageId) ? 'applied' : 'duplicate',
        errorNames.get(record.messageId),
      );
    }
    return response;
  };
}

function toOrder(item: Record<string, unknown> | undefined): Order | undefined {
  if (item === undefined) return undefined;
  return {
    orderId: String(item.orderId),
    status: item.status as Order['status'],
    history: item.history as Order['history'],
    pointsAwarded: Number(item.pointsAwarded),
  };
}

/**
 * The stable id of the `position`-th outgoing message of the event with `idempotencyKey`: the
 * formula of the engine's `outboxMessageId` (SHA-256, hex, of consumer name, key and position).
 */
export function baselineOutboxMessageId(consumerName: string, idempotencyKey: string, position: number): string {
  return createHash('sha256').update(`${consumerName}\u0000${idempotencyKey}\u0000${position}`).digest('hex');
}

/**
 * The payment's outbox item, as a conditional `Put` (lib-dynamodb shape): the attributes the
 * engine writes for the café's `PaymentReceived` message.
 */
export function outboxPut(tableName: string, consumerName: string, payment: PaymentReceived, ttlSeconds: number, now = new Date()) {
  const messageId = baselineOutboxMessageId(consumerName, payment.eventId, 0);
  return {
    TableName: tableName,
    Item: {
      pk: `${consumerName}#outbox#${messageId}`,
      kind: 'outbox',
      consumer: consumerName,
      messageId,
      idempotencyKey: payment.eventId,
      position: 0,
      destination: 'default',
      messageGroupId: payment.orderId,
      body: JSON.stringify({ type: 'PaymentReceived', ...payment }),
      createdAt: now.toISOString(),
      expiresAt: Math.floor(now.getTime() / 1000) + ttlSeconds,
    },
    ConditionExpression: 'attribute_not_exists(pk)',
  };
}

function ledgerPut(tableName: string, entry: LedgerEntry) {
  return {
    TableName: tableName,
    Item: {
      orderId: entry.orderId,
      sk: `${LEDGER_SK_PREFIX}${entry.rule}`,
      rule: entry.rule,
      points: entry.points,
      eventId: entry.eventId,
    },
    ConditionExpression: 'attribute_not_exists(sk)',
  };
}
