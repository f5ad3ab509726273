/**
 * How the local DynamoDB Stream event source reads an invocation's result: the one place that
 * applies AWS's rules for partial batch responses of stream records.
 *
 * @module
 */
import type { InvocationOutcome } from '../judgeBatchResponse.js';

/** How the stream event source treats a batch after an invocation. */
export type StreamBatchJudgement =
  /** Every record succeeded: the shard's checkpoint moves past the batch. */
  | { readonly kind: 'success'; readonly reason: string }
  /**
   * The records before `resumeIndex` succeeded; the batch is retried from the record at
   * `resumeIndex` (the lowest reported sequence number).
   */
  | { readonly kind: 'partial'; readonly resumeIndex: number; readonly reason: string }
  /** A function error (thrown, timed out, unreadable response): the whole batch is retried. */
  | { readonly kind: 'failure'; readonly reason: string };

/**
 * Judges an invocation's outcome the way Lambda's DynamoDB Stream event source mapping does with
 * `ReportBatchItemFailures` on ("Success and failure conditions" in
 * https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html):
 *
 * - The handler threw or ran past its timeout: a function error (`failure`).
 * - The response is read as the Node.js runtime sends it, `JSON.stringify(response)`; one that
 *   cannot be serialized is a function error.
 * - Complete success: a null or empty response (`undefined`, `null`, `{}`), or a
 *   `batchItemFailures` list that is null or empty.
 * - Complete failure: an entry whose `itemIdentifier` is missing (a wrong key name), `null`, an
 *   empty string or not a string; as this module reads the rules, also an identifier that is not
 *   the `SequenceNumber` of a record of this batch, a response that is not a JSON object, a
 *   `batchItemFailures` that is not a list, or an entry that is not an object.
 * - Otherwise Lambda checkpoints before the lowest reported sequence number and retries from it
 *   (with `BisectBatchOnFunctionError` too, it retries only the records from there).
 *
 * Pure: no I/O, no clock.
 *
 * @param outcome how the invocation ended
 * @param sequenceNumbers the `SequenceNumber` of every record of the batch, in batch (stream) order
 */
export function judgeStreamBatchResponse(outcome: InvocationOutcome, sequenceNumbers: readonly string[]): StreamBatchJudgement {
  if (outcome.kind === 'threw') return { kind: 'failure', reason: `the handler threw: ${describe(outcome.error)}` };
  if (outcome.kind === 'timed-out') return { kind: 'failure', reason: `the invocation timed out after ${outcome.timeoutSeconds} s` };
  let response: unknown;
  try {
    const json = JSON.stringify(outcome.response);
    response = json === undefined ? null : JSON.parse(json);
  } catch (error) {
    return { kind: 'failure', reason: `the response cannot be serialized: ${describe(error)}` };
  }
  if (response === null) return { kind: 'success', reason: 'null response' };
  if (typeof response !== 'object' || Array.isArray(response)) return { kind: 'failure', reason: 'the response is not a JSON object' };
  const failures = (response as Record<string, unknown>)['batchItemFailures'];
  if (failures === undefined || failures === null) return { kind: 'success', reason: 'no batchItemFailures' };
  if (!Array.isArray(failures)) return { kind: 'failure', reason: 'batchItemFailures is not a list' };
  if (failures.length === 0) return { kind: 'success', reason: 'empty batchItemFailures' };
  let resumeIndex = Number.POSITIVE_INFINITY;
  for (const entry of failures) {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry))
      return { kind: 'failure', reason: 'a batchItemFailures entry is not an object' };
    const identifier = (entry as Record<string, unknown>)['itemIdentifier'];
    if (typeof identifier !== 'string' || identifier === '') {
      return { kind: 'failure', reason: `itemIdentifier ${JSON.stringify(identifier) ?? 'missing'} is not a sequence number` };
    }
    const index = sequenceNumbers.indexOf(identifier);
    if (index < 0) return { kind: 'failure', reason: `itemIdentifier ${identifier} is not the sequence number of a record of the batch` };
    resumeIndex = Math.min(resumeIndex, index);
  }
  return {
    kind: 'partial',
    resumeIndex,
    reason: `${failures.length} of ${sequenceNumbers.length} records reported; resume at ${sequenceNumbers[resumeIndex]}`,
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
