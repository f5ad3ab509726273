/**
 * The engine's await points, as the proof suite names them: every AWS SDK call a consumer
 * invocation makes is one (an invocation can be killed right before it, so that neither it nor
 * anything after it reaches the stores), and so is the moment after the handler returned, before
 * the event source reads its response.
 *
 * A call is named by what it is for, read from its service, operation, table or queue and input:
 * e.g. `commit` (the batch's `TransactWriteItems`), `side-effect lock` (Powertools'
 * in-progress `PutItem`), `dead-letter send` (`SendMessageBatch` to the DLQ).
 *
 * @module
 */

/** The await points the suite can kill an invocation at. */
export const KillPoint = {
  /** Strongly consistent `BatchGetItem` of inbox rows and business items: the read before retrying a message or running its side effect. */
  verify: 'verify',
  /** `TransactGetItems`: the serializable snapshot taken before a verdict that dead-letters a message. */
  snapshot: 'snapshot',
  /** `TransactWriteItems`: the batch's commit (inbox rows, writes, outbox items). */
  commit: 'commit',
  /** Strongly consistent `BatchGetItem` of park items (`<consumer>#park#<ordering key>`): the parked messages read after a commit (`retry.parkOutOfOrder`). */
  parkRead: 'park read',
  /** Powertools idempotency `PutItem`: the side effect's in-progress lock. */
  sideEffectLock: 'side-effect lock',
  /** The side effect's own call (the café's notification `PutItem`). */
  sideEffect: 'side effect',
  /** Powertools idempotency `UpdateItem`: the side effect's completion record. */
  sideEffectCompletion: 'side-effect completion',
  /** Powertools idempotency `DeleteItem`: the lock released after the effect failed. */
  sideEffectRelease: 'side-effect release',
  /** Powertools idempotency `GetItem`: an existing record read back. */
  sideEffectRecordRead: 'side-effect record read',
  /** Under `inboxHome`: the strongly consistent `GetItem` of the home item a dead-letter marker's mark goes on. */
  deadLetterHomeRead: 'dead-letter home read',
  /** `PutItem` of the inbox's dead-letter marker; under `inboxHome`, the `TransactWriteItems` of its row and its home item's mark. */
  deadLetterMarker: 'dead-letter marker',
  /** `SendMessage(Batch)` to the dead-letter queue. */
  deadLetterSend: 'dead-letter send',
  /** `PutObject` of a dead-letter body too large for the queue. */
  deadLetterOffload: 'dead-letter offload',
  /** `UpdateItem` of an attempt record: a receive that was not an attempt (SQS). */
  attemptSkip: 'attempt skip',
  /** `UpdateItem` of an attempt record: a failed attempt (Kafka). */
  attemptFailure: 'attempt failure',
  /** `BatchGetItem` of the attempt records' skips (SQS, at the last receives). */
  attemptSkipsRead: 'attempt skips read',
  /** `UpdateItem` `SET` of a park item's entry: a delivery waiting for its predecessor parked (`retry.parkOutOfOrder`). */
  parkWrite: 'park write',
  /** `UpdateItem` `REMOVE` of a park item's entry: a settled message leaves the park. */
  parkRelease: 'park release',
  /** `GetQueueUrl` of the source queue (the retry backoff, once per execution environment). */
  queueUrl: 'queue URL',
  /** `ChangeMessageVisibilityBatch`: the retry backoff. */
  backoff: 'backoff',
  /** `DeleteMessage(Batch)` on the source queue: a parked message settled from the park, deleted with its parked receipt handle. */
  parkedDelete: 'parked message delete',
  /** After the handler returned, before the event source read the response: the response is lost. */
  response: 'response',
} as const;
export type KillPoint = (typeof KillPoint)[keyof typeof KillPoint];

/** Every kill point, in the order a batch usually meets them. */
export const killPoints: readonly KillPoint[] = Object.values(KillPoint);

/** The physical names a call is matched against. */
export interface CallTargets {
  readonly inboxTable: string;
  readonly idempotencyTable: string;
  /** The business tables' physical names. */
  readonly businessTables: ReadonlySet<string>;
  readonly deadLetterQueueUrl: string;
}

/**
 * The name of one SDK call, from the client's name, the command's name and its input (marshalled
 * or not: the document client's input is marshalled before the client's own middleware sees it).
 * A call the suite does not know is named `<Operation> (other)`.
 */
export function nameCall(clientName: string, commandName: string, input: Readonly<Record<string, unknown>>, targets: CallTargets): string {
  const operation = commandName.replace(/Command$/, '');
  const table = typeof input.TableName === 'string' ? input.TableName : undefined;
  if (clientName.startsWith('DynamoDB')) {
    if (operation === 'TransactGetItems') return KillPoint.snapshot;
    if (operation === 'TransactWriteItems')
      return deadLetterMarkerTransaction(input, targets) ? KillPoint.deadLetterMarker : KillPoint.commit;
    if (table === targets.idempotencyTable) {
      if (operation === 'PutItem') return KillPoint.sideEffectLock;
      if (operation === 'UpdateItem') return KillPoint.sideEffectCompletion;
      if (operation === 'DeleteItem') return KillPoint.sideEffectRelease;
      if (operation === 'GetItem') return KillPoint.sideEffectRecordRead;
    }
    if (table === targets.inboxTable) {
      if (operation === 'PutItem') return KillPoint.deadLetterMarker;
      if (operation === 'UpdateItem' && partitionKeyOf((input.Key as Record<string, unknown> | undefined) ?? {}).includes('#park#')) {
        const expression = typeof input.UpdateExpression === 'string' ? input.UpdateExpression : '';
        return expression.trimStart().startsWith('REMOVE') ? KillPoint.parkRelease : KillPoint.parkWrite;
      }
      if (operation === 'UpdateItem') {
        const expression = typeof input.UpdateExpression === 'string' ? input.UpdateExpression : '';
        return expression.includes('#skips') ? KillPoint.attemptSkip : KillPoint.attemptFailure;
      }
    }
    if (operation === 'BatchGetItem') {
      const tables = Object.keys((input.RequestItems as Record<string, unknown> | undefined) ?? {});
      const inboxKeys = ((input.RequestItems as Record<string, { Keys?: unknown[] }> | undefined)?.[targets.inboxTable]?.Keys ??
        []) as Record<string, unknown>[];
      if (inboxKeys.some((key) => partitionKeyOf(key).includes('#attempt#'))) return KillPoint.attemptSkipsRead;
      if (inboxKeys.some((key) => partitionKeyOf(key).includes('#park#'))) return KillPoint.parkRead;
      if (tables.includes(targets.inboxTable) || tables.some((name) => targets.businessTables.has(name))) return KillPoint.verify;
    }
    // Under inboxHome, the dead-letter marker reads its home item first: not the side effect's call.
    if (operation === 'GetItem' && table !== undefined && targets.businessTables.has(table)) return KillPoint.deadLetterHomeRead;
    if (table !== undefined && targets.businessTables.has(table)) return KillPoint.sideEffect;
    return `${operation} (other)`;
  }
  if (clientName.startsWith('SQS')) {
    if ((operation === 'SendMessageBatch' || operation === 'SendMessage') && input.QueueUrl === targets.deadLetterQueueUrl)
      return KillPoint.deadLetterSend;
    if (operation === 'GetQueueUrl') return KillPoint.queueUrl;
    if (operation === 'ChangeMessageVisibilityBatch' || operation === 'ChangeMessageVisibility') return KillPoint.backoff;
    if (operation === 'DeleteMessageBatch' || operation === 'DeleteMessage') return KillPoint.parkedDelete;
    return `${operation} (other)`;
  }
  if (clientName.startsWith('S3') && operation === 'PutObject') return KillPoint.deadLetterOffload;
  return `${operation} (other)`;
}

/**
 * Whether a `TransactWriteItems` is a dead-letter marker under `inboxHome`: it puts a dead-lettered
 * inbox row (with its home item's mark), where a commit puts applied rows only.
 */
function deadLetterMarkerTransaction(input: Readonly<Record<string, unknown>>, targets: CallTargets): boolean {
  const items = (input.TransactItems as { Put?: { TableName?: unknown; Item?: Record<string, unknown> } }[] | undefined) ?? [];
  return items.some((item) => {
    const status = item.Put?.Item?.status;
    const text = typeof status === 'string' ? status : (status as { S?: unknown } | undefined)?.S;
    return item.Put?.TableName === targets.inboxTable && text === 'dead-lettered';
  });
}

/** An inbox key's `pk`, marshalled (`{ S: … }`) or not. */
function partitionKeyOf(key: Record<string, unknown>): string {
  const pk = key.pk;
  if (typeof pk === 'string') return pk;
  if (pk !== null && typeof pk === 'object' && typeof (pk as { S?: unknown }).S === 'string') return (pk as { S: string }).S;
  return '';
}
