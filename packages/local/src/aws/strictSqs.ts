/**
 * The strict SQS layer: makes the embedded fauxqs server behave like Amazon SQS where the
 * consumer depends on it, as a small patch kept in this project (in the spirit of an upstream
 * fix) rather than a fork.
 *
 * What it changes, each with the SQS rule it restores (see `docs/aws-rules.md` for sources and
 * tests):
 *
 * - **FIFO receives return several messages of a message group**, in order, up to
 *   `MaxNumberOfMessages`, then messages of other available groups (fauxqs returns one per group).
 *   Every message received counts a receive (`ApproximateReceiveCount`), also one the consumer
 *   later reports without running it, as on SQS.
 * - **FIFO order survives a return to the queue**: messages of a group whose visibility timeout
 *   ends (or is set to 0) go back in sequence order (fauxqs puts them back in reverse).
 * - **Character set**: bodies and `String` attribute values may hold any character of
 *   `#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF`: emoji are accepted (fauxqs
 *   refuses everything above U+FFFF), NUL and lone surrogates refused.
 * - **Message attributes**: at most 10, SQS's name rules, data types and non-empty values.
 * - **Sizes**: body + attributes against the queue's `MaximumMessageSize` (binary values counted
 *   decoded), and a `SendMessageBatch` of at most 1 MiB in total.
 * - **Batches**: 1 to 10 entries with distinct, well-formed ids (also for
 *   `ChangeMessageVisibilityBatch`); an entry that breaks a per-message rule fails alone, in
 *   `Failed`, as SQS reports it.
 * - **Visibility**: `ChangeMessageVisibility(Batch)` cannot keep a message invisible longer than
 *   12 hours after the `ReceiveMessage` that returned its receipt handle.
 * - **Error codes**: the `x-amzn-query-error` header carries the codes SQS sends (the SDK names
 *   its errors after them): `MissingParameter`, `InvalidParameterValue`, `QueueAlreadyExists`
 *   … without fauxqs's `AWS.SimpleQueueService.` prefix, which SQS uses only for its own codes
 *   (`AWS.SimpleQueueService.BatchRequestTooLong`, `…NonExistentQueue`, …).
 *
 * Mechanism: the store's queues get their receive and return methods replaced (per instance);
 * a Fastify `preHandler` hook checks requests before fauxqs's handlers run and answers refused
 * ones itself, in the SQS JSON protocol (`__type`, `x-amzn-query-error`); a `preSerialization`
 * hook adds the entries it refused to a batch's `Failed` list. fauxqs's own body check is
 * replaced by SQS's character set (the pattern object its handlers share).
 *
 * What stays lenient: fauxqs counts a binary attribute's base64 text (not its bytes) in its own
 * size checks, which run after these, so a message within a third of its binary attributes' size
 * of the limit can still be refused; throughput quotas, in-flight limits (120,000 / 20,000),
 * retention and the FIFO 20,000-message look-ahead are not emulated.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { buildApp } from 'fauxqs';
import type {
  FauxqsInflightEntry,
  FauxqsInternals,
  FauxqsMessage,
  FauxqsQueue,
  FauxqsReceivedMessage,
  FauxqsSqsStore,
} from './fauxqsInternals.js';
import { checkBatchEntries, checkMessage, checkSendBatchSize, checkVisibilityExtension, isSqsText } from './sqsRules.js';
import type { SqsRuleViolation } from './sqsRules.js';

/** The Fastify app fauxqs's `buildApp()` returns. */
export type FauxqsApp = ReturnType<typeof buildApp>;

/** Options of {@link makeSqsStoreStrict} and {@link installStrictSqsHooks}. */
export interface StrictSqsOptions {
  /**
   * The clock of the 12-hour visibility limit, in epoch milliseconds (tests pass a clock they
   * move). fauxqs keeps its own timers on `Date.now`.
   * @default Date.now
   */
  readonly clock?: () => number;
}

/** When each receipt handle was received (the start of its 12 hours), by in-flight entry. */
export type ReceiptTimes = WeakMap<FauxqsInflightEntry, number>;

const strictQueues = new WeakSet<FauxqsQueue>();

/**
 * Makes every queue the store creates from now on behave like SQS on receive and return (FIFO
 * groups, receipt times). Call it before the server creates queues.
 *
 * @returns the receipt times the hooks check the 12-hour limit against
 */
export function makeSqsStoreStrict(store: FauxqsSqsStore, options: StrictSqsOptions = {}): ReceiptTimes {
  const clock = options.clock ?? Date.now;
  const receiptTimes: ReceiptTimes = new WeakMap();
  const createQueue = store.createQueue.bind(store);
  store.createQueue = (...args) => {
    const queue = createQueue(...args);
    makeQueueStrict(queue, clock, receiptTimes);
    return queue;
  };
  return receiptTimes;
}

function makeQueueStrict(queue: FauxqsQueue, clock: () => number, receiptTimes: ReceiptTimes): void {
  if (strictQueues.has(queue)) return;
  strictQueues.add(queue);
  const dequeue = queue.dequeue.bind(queue);
  const processTimers = queue.processTimers.bind(queue);
  const changeVisibility = queue.changeVisibility.bind(queue);

  queue.dequeueFifo = (maxCount, visibilityTimeoutOverride, deadLetterQueueOf) =>
    receiveFromMessageGroups(queue, maxCount, visibilityTimeoutOverride, deadLetterQueueOf);

  queue.dequeue = (maxCount, visibilityTimeoutOverride, deadLetterQueueOf) => {
    const received = dequeue(maxCount, visibilityTimeoutOverride, deadLetterQueueOf);
    const receivedAt = clock();
    for (const message of received) {
      const entry = queue.inflightMessages.get(message.ReceiptHandle);
      if (entry) receiptTimes.set(entry, receivedAt);
    }
    return received;
  };

  queue.processTimers = () => {
    if (!queue.isFifo()) {
      processTimers();
      return;
    }
    const now = Date.now();
    const returning = new Set<string>();
    for (const entry of queue.inflightMessages.values()) {
      if (entry.visibilityDeadline <= now) returning.add(groupOf(entry.message));
    }
    processTimers();
    restoreGroupOrder(queue, returning);
  };

  queue.changeVisibility = (receiptHandle, timeoutSeconds) => {
    const entry = queue.inflightMessages.get(receiptHandle);
    changeVisibility(receiptHandle, timeoutSeconds);
    if (entry && timeoutSeconds === 0 && queue.isFifo()) restoreGroupOrder(queue, [groupOf(entry.message)]);
  };
}

const groupOf = (message: FauxqsMessage): string => message.messageGroupId ?? '__default';

/** Puts each group's visible messages back in sequence order (fauxqs puts returned ones at the front one by one). */
function restoreGroupOrder(queue: FauxqsQueue, groups: Iterable<string>): void {
  for (const group of groups) {
    queue.fifoMessages.get(group)?.sort((a, b) => compareSequence(a.sequenceNumber, b.sequenceNumber));
  }
}

function compareSequence(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  return a.length - b.length || (a < b ? -1 : 1);
}

interface RedrivePolicy {
  readonly deadLetterTargetArn: string;
  readonly maxReceiveCount: number;
}

function redrivePolicyOf(queue: FauxqsQueue): RedrivePolicy | undefined {
  const text = queue.attributes['RedrivePolicy'];
  if (text === undefined) return undefined;
  try {
    const policy = JSON.parse(text) as { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
    const maxReceiveCount = Number(policy.maxReceiveCount);
    if (typeof policy.deadLetterTargetArn !== 'string' || !Number.isFinite(maxReceiveCount)) return undefined;
    return { deadLetterTargetArn: policy.deadLetterTargetArn, maxReceiveCount };
  } catch {
    return undefined;
  }
}

/**
 * A FIFO receive as SQS does it: from each message group that has no message in flight, in the
 * order groups became available, as many messages of the group as fit (in order), then the next
 * group, up to `maxCount` (at most 10). Each message taken counts a receive; one past the redrive
 * policy's `maxReceiveCount` moves to the dead-letter queue instead.
 */
function receiveFromMessageGroups(
  queue: FauxqsQueue,
  maxCount: number,
  visibilityTimeoutOverride: number | undefined,
  deadLetterQueueOf: ((arn: string) => FauxqsQueue | undefined) | undefined,
): FauxqsReceivedMessage[] {
  queue.processTimers();
  const visibilityTimeoutSeconds = visibilityTimeoutOverride ?? Number(queue.attributes['VisibilityTimeout']);
  const redrive = redrivePolicyOf(queue);
  const limit = Math.min(maxCount, 10);
  const received: FauxqsReceivedMessage[] = [];
  for (const [group, waiting] of queue.fifoMessages) {
    if (received.length >= limit) break;
    if (queue.fifoLockedGroups.has(group)) continue;
    while (received.length < limit && waiting.length > 0) {
      const message = waiting.shift()!;
      message.approximateReceiveCount += 1;
      message.approximateFirstReceiveTimestamp ??= Date.now();
      const deadLetterQueue =
        redrive !== undefined && message.approximateReceiveCount > redrive.maxReceiveCount
          ? deadLetterQueueOf?.(redrive.deadLetterTargetArn)
          : undefined;
      if (deadLetterQueue) {
        deadLetterQueue.enqueue(message);
        continue;
      }
      const receiptHandle = randomUUID();
      queue.inflightMessages.set(receiptHandle, {
        message,
        receiptHandle,
        visibilityDeadline: Date.now() + visibilityTimeoutSeconds * 1_000,
      });
      queue.fifoLockedGroups.set(group, (queue.fifoLockedGroups.get(group) ?? 0) + 1);
      received.push({
        MessageId: message.messageId,
        ReceiptHandle: receiptHandle,
        MD5OfBody: message.md5OfBody,
        Body: message.body,
        ...(message.md5OfMessageAttributes ? { MD5OfMessageAttributes: message.md5OfMessageAttributes } : {}),
        ...(Object.keys(message.messageAttributes).length > 0 ? { MessageAttributes: message.messageAttributes } : {}),
      });
    }
    if (waiting.length === 0) queue.fifoMessages.delete(group);
  }
  return received;
}

const patchedPatterns = new WeakSet<RegExp>();

/**
 * Replaces the character test of fauxqs's `SendMessage` handlers by SQS's character set
 * ({@link isSqsText}): emoji and every other character from U+10000 up are accepted. Idempotent;
 * affects every fauxqs server in this process (the pattern is a module constant).
 */
export function acceptSqsCharacterSet(internals: FauxqsInternals): void {
  const pattern = internals.invalidBodyCharacter;
  if (patchedPatterns.has(pattern)) return;
  Object.defineProperty(pattern, 'test', { value: (text: string) => !isSqsText(String(text)), configurable: true });
  patchedPatterns.add(pattern);
}

interface BatchFailure {
  readonly Id: string;
  readonly SenderFault: true;
  readonly Code: string;
  readonly Message: string;
}

/**
 * Adds the request checks to the app: a `preHandler` hook answers a request that breaks an SQS
 * rule with SQS's error (HTTP 400, JSON protocol) before fauxqs handles it, and takes a batch's
 * refused entries out of the request; a `preSerialization` hook adds those to the response's
 * `Failed`. Register it before the app starts listening.
 */
export function installStrictSqsHooks(
  app: FauxqsApp,
  store: FauxqsSqsStore,
  receiptTimes: ReceiptTimes,
  options: StrictSqsOptions = {},
): void {
  const clock = options.clock ?? Date.now;
  const refusedEntries = new WeakMap<object, BatchFailure[]>();

  app.addHook('preHandler', async (request, reply) => {
    const target = request.headers['x-amz-target'];
    const contentType = request.headers['content-type'] ?? '';
    if (request.method !== 'POST' || typeof target !== 'string' || !contentType.includes('application/x-amz-json-1.0')) return;
    const body = request.body as Record<string, unknown> | null;
    if (typeof body !== 'object' || body === null) return;
    const action = target.replace(/^AmazonSQS\./, '');
    const queue = typeof body['QueueUrl'] === 'string' ? store.getQueue(body['QueueUrl']) : undefined;

    const refuse = (problem: SqsRuleViolation) =>
      reply
        .code(400)
        .header('content-type', 'application/x-amz-json-1.0')
        .header('x-amzn-query-error', `${problem.queryCode};Sender`)
        .send({ __type: `com.amazonaws.sqs#${problem.code}`, message: problem.message });

    /** Takes the entries `check` refuses out of the batch; answers alone when none is left. */
    const filterEntries = (
      entries: Array<Record<string, unknown>>,
      check: (entry: Record<string, unknown>) => SqsRuleViolation | undefined,
    ) => {
      const failures: BatchFailure[] = [];
      const kept = entries.filter((entry) => {
        const problem = check(entry);
        if (problem) failures.push({ Id: String(entry['Id']), SenderFault: true, Code: problem.code, Message: problem.message });
        return problem === undefined;
      });
      if (failures.length === 0) return undefined;
      if (kept.length === 0) {
        return reply.code(200).header('content-type', 'application/x-amz-json-1.0').send({ Successful: [], Failed: failures });
      }
      body['Entries'] = kept;
      refusedEntries.set(request, failures);
      return undefined;
    };

    switch (action) {
      case 'SendMessage': {
        if (!queue) return;
        const problem = checkMessage(body['MessageBody'], body['MessageAttributes'], maximumMessageSize(queue));
        if (problem) return refuse(problem);
        return;
      }
      case 'SendMessageBatch': {
        const shape = checkBatchEntries(body['Entries']);
        if (shape) return refuse(shape);
        if (!queue) return;
        const entries = body['Entries'] as Array<Record<string, unknown>>;
        const tooLong = checkSendBatchSize(entries);
        if (tooLong) return refuse(tooLong);
        return filterEntries(entries, (entry) => checkMessage(entry['MessageBody'], entry['MessageAttributes'], maximumMessageSize(queue)));
      }
      case 'ChangeMessageVisibility': {
        if (!queue || typeof body['ReceiptHandle'] !== 'string') return;
        const problem = visibilityProblem(queue, body['ReceiptHandle'], body['VisibilityTimeout']);
        if (problem) return refuse(problem);
        return;
      }
      case 'ChangeMessageVisibilityBatch': {
        const shape = checkBatchEntries(body['Entries']);
        if (shape) return refuse(shape);
        if (!queue) return;
        return filterEntries(body['Entries'] as Array<Record<string, unknown>>, (entry) =>
          typeof entry['ReceiptHandle'] === 'string'
            ? visibilityProblem(queue, entry['ReceiptHandle'], entry['VisibilityTimeout'])
            : undefined,
        );
      }
      case 'DeleteMessageBatch': {
        const shape = checkBatchEntries(body['Entries']);
        if (shape) return refuse(shape);
        return;
      }
      default:
        return;
    }
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    const header = reply.getHeader('x-amzn-query-error');
    if (typeof header === 'string') reply.header('x-amzn-query-error', sqsQueryErrorHeader(header));
    return payload;
  });

  app.addHook('preSerialization', async (request, _reply, payload) => {
    const failures = refusedEntries.get(request);
    if (failures === undefined || typeof payload !== 'object' || payload === null) return payload;
    const response = payload as { Successful?: unknown[]; Failed?: unknown[] };
    return { ...response, Failed: [...(response.Failed ?? []), ...failures] };
  });

  function visibilityProblem(queue: FauxqsQueue, receiptHandle: string, visibilityTimeout: unknown): SqsRuleViolation | undefined {
    const entry = queue.inflightMessages.get(receiptHandle);
    if (entry === undefined || typeof visibilityTimeout !== 'number') return undefined; // fauxqs answers these
    const receivedAt = receiptTimes.get(entry) ?? clock();
    return checkVisibilityExtension(visibilityTimeout, Math.max(0, clock() - receivedAt) / 1_000);
  }
}

/**
 * The query error codes SQS sends with the `AWS.SimpleQueueService.` prefix (from the SQS service
 * model, trait `awsQueryError`); every other code goes without it.
 */
const prefixedQueryCodes = new Set([
  'BatchEntryIdsNotDistinct',
  'BatchRequestTooLong',
  'EmptyBatchRequest',
  'InvalidBatchEntryId',
  'MessageNotInflight',
  'PurgeQueueInProgress',
  'QueueDeletedRecently',
  'NonExistentQueue',
  'TooManyEntriesInBatchRequest',
  'UnsupportedOperation',
]);
/** fauxqs codes SQS spells differently. */
const renamedQueryCodes: Readonly<Record<string, string>> = { QueueNameExists: 'QueueAlreadyExists' };

/** `AWS.SimpleQueueService.MissingParameter;Sender` → `MissingParameter;Sender`, as SQS sends it. */
export function sqsQueryErrorHeader(header: string): string {
  const match = /^(?:AWS\.SimpleQueueService\.)?([^;]+)(;.*)?$/.exec(header);
  if (!match) return header;
  const [, rawCode = '', fault = ''] = match;
  const code = renamedQueryCodes[rawCode] ?? rawCode;
  return `${prefixedQueryCodes.has(code) ? 'AWS.SimpleQueueService.' : ''}${code}${fault}`;
}

function maximumMessageSize(queue: FauxqsQueue): number {
  const size = Number(queue.attributes['MaximumMessageSize']);
  return Number.isFinite(size) && size > 0 ? size : 1_048_576;
}
