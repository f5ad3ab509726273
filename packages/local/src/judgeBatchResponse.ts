/**
 * How the local SQS event source reads an invocation's result: the one place that applies
 * AWS's rules for partial batch responses.
 *
 * @module
 */

/** What an invocation of the handler ended with. */
export type InvocationOutcome =
  /** The handler returned (or resolved to) `response`, whatever it is. */
  | { readonly kind: 'returned'; readonly response: unknown }
  /** The handler threw (or rejected with) `error`. */
  | { readonly kind: 'threw'; readonly error: unknown }
  /** The handler had not finished when the function timeout (in seconds) ran out. */
  | { readonly kind: 'timed-out'; readonly timeoutSeconds: number };

/** How the event source treats a batch after an invocation. */
export interface BatchJudgement {
  /**
   * `all-succeeded`: every message is deleted. `partial`: the messages in `failedIds` stay on
   * the queue, the others are deleted. `all-failed`: nothing is deleted.
   */
  readonly kind: 'all-succeeded' | 'partial' | 'all-failed';
  /** Message ids that stay on the queue (back after their visibility timeout), in batch order. */
  readonly failedIds: readonly string[];
  /** Why, in one sentence (for logs and test failure messages). */
  readonly reason: string;
}

/**
 * Judges an invocation's outcome the way Lambda's SQS event source mapping does with
 * `ReportBatchItemFailures` on, following "Success and failure conditions" in
 * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html :
 *
 * - The handler threw, or ran past the function timeout: the whole batch failed (nothing is
 *   deleted; every message comes back after its visibility timeout).
 * - The response is read as the Node.js runtime sends it: `JSON.stringify(response)`. A
 *   response that cannot be serialized (a `BigInt`, a cycle) is a function error: all failed.
 * - Complete success: an empty or null response (`undefined`, `null`, `{}`), or a
 *   `batchItemFailures` list that is empty or null. Keys are matched exactly, so a response
 *   without the key `batchItemFailures` (e.g. `{"BatchItemFailures": [...]}`) is a success
 *   too: the failures it lists are lost and those messages are deleted.
 * - Complete failure ("an invalid JSON response"): an entry whose `itemIdentifier` is missing
 *   (e.g. spelled `ItemIdentifier`), `null`, an empty string, not a string, or not the
 *   `messageId` of a message in this batch (e.g. a receipt handle); also, as this module reads
 *   "invalid", a response that is not a JSON object, a `batchItemFailures` that is not a list,
 *   or an entry that is not an object. The successes of the batch are then replayed.
 * - Otherwise the listed messages failed and the others succeeded (`partial`); when every
 *   message of the batch is listed the kind is `all-failed`.
 *
 * Pure: no I/O, no clock.
 *
 * @param outcome how the invocation ended
 * @param messageIds the `messageId` of every record of the batch, in batch order
 *
 * @example
 * judgeBatchResponse({ kind: 'returned', response: { batchItemFailures: [{ itemIdentifier: 'm-2' }] } }, ['m-1', 'm-2', 'm-3']);
 * // → { kind: 'partial', failedIds: ['m-2'], reason: '1 of 3 messages reported in batchItemFailures' }
 */
export function judgeBatchResponse(outcome: InvocationOutcome, messageIds: readonly string[]): BatchJudgement {
  const allFailed = (reason: string): BatchJudgement => ({ kind: 'all-failed', failedIds: [...messageIds], reason });
  const allSucceeded = (reason: string): BatchJudgement => ({ kind: 'all-succeeded', failedIds: [], reason });

  if (outcome.kind === 'threw') return allFailed(`the handler threw: ${describeError(outcome.error)}`);
  if (outcome.kind === 'timed-out') {
    return allFailed(`the invocation ran past the function timeout of ${outcome.timeoutSeconds} s`);
  }

  let serialized: string | undefined;
  try {
    serialized = JSON.stringify(outcome.response);
  } catch (error) {
    return allFailed(`the response cannot be serialized to JSON (${describeError(error)})`);
  }
  const response: unknown = serialized === undefined ? null : JSON.parse(serialized);

  if (response === null) return allSucceeded('the response is empty (null)');
  if (typeof response !== 'object' || Array.isArray(response)) {
    return allFailed(`invalid response: expected a JSON object, got ${Array.isArray(response) ? 'an array' : typeof response}`);
  }

  const record = response as Record<string, unknown>;
  const failures = record['batchItemFailures'];
  if (failures === undefined || failures === null) {
    const lookalike = Object.keys(record).find((key) => key !== 'batchItemFailures' && key.toLowerCase() === 'batchitemfailures');
    if (lookalike !== undefined) {
      return allSucceeded(
        `the response has no "batchItemFailures" key (it has "${lookalike}", which AWS ignores): ` +
          'the whole batch counts as a success and the failures it lists are lost',
      );
    }
    return allSucceeded(failures === null ? 'batchItemFailures is null' : 'the response has no batchItemFailures');
  }
  if (!Array.isArray(failures)) {
    return allFailed(`invalid response: batchItemFailures is ${typeof failures}, not a list`);
  }
  if (failures.length === 0) return allSucceeded('batchItemFailures is empty');

  const known = new Set(messageIds);
  const reported = new Set<string>();
  for (const [index, entry] of failures.entries()) {
    const where = `batchItemFailures[${index}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      return allFailed(`invalid response: ${where} is not an object`);
    }
    const item = entry as Record<string, unknown>;
    if (!Object.hasOwn(item, 'itemIdentifier')) {
      const keys =
        Object.keys(item)
          .map((key) => `"${key}"`)
          .join(', ') || 'none';
      return allFailed(`${where} has no "itemIdentifier" key (keys: ${keys})`);
    }
    const identifier = item['itemIdentifier'];
    if (identifier === null) return allFailed(`${where}.itemIdentifier is null`);
    if (typeof identifier !== 'string') return allFailed(`${where}.itemIdentifier is a ${typeof identifier}, not a string`);
    if (identifier === '') return allFailed(`${where}.itemIdentifier is an empty string`);
    if (!known.has(identifier)) {
      return allFailed(`${where}.itemIdentifier "${identifier}" is not the messageId of a message in this batch`);
    }
    reported.add(identifier);
  }

  const failedIds = messageIds.filter((id) => reported.has(id));
  const reason = `${failedIds.length} of ${messageIds.length} messages reported in batchItemFailures`;
  return failedIds.length === messageIds.length ? { kind: 'all-failed', failedIds, reason } : { kind: 'partial', failedIds, reason };
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
