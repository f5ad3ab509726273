/**
 * The partial batch response of a Kafka event source mapping (Amazon MSK and self-managed
 * Apache Kafka): the ONE module that knows its format, both to write it (the handler) and to
 * read it as AWS does (the local event source).
 *
 * ```json
 * {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":12}}]}
 * ```
 *
 * - `partition` is the string `"<topic>-<partition>"`, exactly a key of the event's `records`;
 * - `offset` is a JSON number, the offset of a record of that partition in the event;
 * - Lambda resumes each reported partition from its lowest reported offset (records before it
 *   are committed); partitions not reported are committed to the end of the batch;
 * - an empty or `null` list, `null`, or an empty object is full success;
 * - a `partition` or `offset` that was not in the invoked event makes the whole batch fail
 *   (every record is retried). This module also treats any other malformed item that way.
 *
 * It only takes effect when the mapping has `FunctionResponseTypes: ["ReportBatchItemFailures"]`.
 *
 * Source: "Configuring error handling controls for Kafka event sources", section
 * PartialBatchResponse, https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html
 * (formerly services-msk-batchfailurereporting).
 *
 * @module
 */

/** A record's place in Kafka: topic, partition and offset. */
export interface KafkaCoordinates {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** The identifier of a failed Kafka record in a partial batch response. */
export interface KafkaItemIdentifier {
  /** `"<topic>-<partition>"`, e.g. `"orders-0"`. */
  readonly partition: string;
  /** The record's offset, a number. */
  readonly offset: number;
}

/** One entry of `batchItemFailures`. */
export interface KafkaBatchItemFailure {
  readonly itemIdentifier: KafkaItemIdentifier;
}

/** The response a Kafka handler returns. */
export interface KafkaBatchResponse {
  /**
   * The records to retry, at most one needed per partition (its first failed record): Lambda
   * resumes each listed partition from its lowest listed offset. Empty: every record succeeded.
   */
  readonly batchItemFailures: readonly KafkaBatchItemFailure[];
}

/** The key of a topic partition, as in the event's `records` and the response: `"<topic>-<partition>"`. */
export function topicPartition(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

/** The batch item failure of one record. */
export function kafkaBatchItemFailure(record: KafkaCoordinates): KafkaBatchItemFailure {
  return { itemIdentifier: { partition: topicPartition(record.topic, record.partition), offset: record.offset } };
}

/**
 * The response reporting `failed` records (at most one per partition is needed: the first
 * failure of each). `[]` reports full success.
 *
 * @example
 * kafkaBatchResponse([{ topic: 'orders', partition: 0, offset: 12 }]);
 * // {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":12}}]}
 */
export function kafkaBatchResponse(failed: readonly KafkaCoordinates[]): KafkaBatchResponse {
  return { batchItemFailures: failed.map(kafkaBatchItemFailure) };
}

/** What the event source mapping makes of a response, per {@link readKafkaBatchResponse}. */
export type KafkaBatchVerdict =
  /** Every record of the batch is committed. */
  | { readonly kind: 'success' }
  /**
   * Each partition in `resumeAt` resumes from that offset (its lowest reported one); every
   * other partition of the batch is committed.
   */
  | { readonly kind: 'partial'; readonly resumeAt: ReadonlyMap<string, number> }
  /** The whole batch is retried; `reason` says why the response was rejected. */
  | { readonly kind: 'failure'; readonly reason: string };

/**
 * Reads a handler's response as the Kafka event source mapping does (see the module comment).
 *
 * @param response - what the handler returned (any value)
 * @param batch - the records of the invoked event, by `"<topic>-<partition>"`
 * @returns the verdict; never throws
 */
export function readKafkaBatchResponse(
  response: unknown,
  batch: Readonly<Record<string, readonly Pick<KafkaCoordinates, 'offset'>[]>>,
): KafkaBatchVerdict {
  if (response === null || response === undefined) return { kind: 'success' };
  if (typeof response !== 'object' || Array.isArray(response)) {
    return { kind: 'failure', reason: `the response is not a JSON object: ${describe(response)}` };
  }
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { kind: 'success' };
  if (!Array.isArray(failures)) {
    return { kind: 'failure', reason: `batchItemFailures is not a list: ${describe(failures)}` };
  }

  const resumeAt = new Map<string, number>();
  for (const failure of failures as unknown[]) {
    const identifier = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (identifier === null || typeof identifier !== 'object') {
      return { kind: 'failure', reason: `an item has no itemIdentifier object: ${describe(failure)}` };
    }
    const { partition, offset } = identifier as { partition?: unknown; offset?: unknown };
    if (typeof partition !== 'string' || !Object.hasOwn(batch, partition)) {
      return { kind: 'failure', reason: `itemIdentifier.partition ${describe(partition)} is not a partition of the batch` };
    }
    if (typeof offset !== 'number' || !(batch[partition] ?? []).some((record) => record.offset === offset)) {
      return { kind: 'failure', reason: `itemIdentifier.offset ${describe(offset)} is not an offset of ${partition} in the batch` };
    }
    resumeAt.set(partition, Math.min(resumeAt.get(partition) ?? offset, offset));
  }
  return resumeAt.size === 0 ? { kind: 'success' } : { kind: 'partial', resumeAt };
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
