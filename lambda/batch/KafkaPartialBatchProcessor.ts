import { type KafkaBatchResponse, type KafkaCoordinates, kafkaBatchResponse, topicPartition } from './kafkaBatchResponse.js';

/** Options of {@link KafkaPartialBatchProcessor}. */
export interface KafkaPartialBatchProcessorOptions<R extends KafkaCoordinates = KafkaCoordinates> {
  /**
   * Called once for each record that stopped its partition, with what it threw (e.g. to log an
   * error that is not a planned retry). It must not throw.
   * @default none
   */
  readonly onRecordFailure?: (record: R, error: unknown) => void;
}

/**
 * Processes the records of a Kafka event with Lambda's Kafka partial batch semantics:
 *
 * - records of one partition run one after another, in offset order;
 * - the first record of a partition whose handler rejects stops that partition: it is the
 *   partition's only batch item failure, and the records after it are not run (Lambda resumes
 *   the partition from the lowest reported offset, so they come back anyway);
 * - partitions run concurrently, and a failure in one never stops another;
 * - a failure of every partition is reported, not thrown.
 *
 * Powertools' `BatchProcessor` (TypeScript, 2.35) knows SQS, Kinesis and DynamoDB streams but
 * not Kafka's `{partition, offset}` identifier, hence this processor. The response format
 * itself lives in `kafkaBatchResponse.ts`.
 *
 * @example
 * const processor = new KafkaPartialBatchProcessor();
 * return processor.process(event.records, (record) => consumer.consume(kafkaDelivery(record, options)));
 */
export class KafkaPartialBatchProcessor<R extends KafkaCoordinates = KafkaCoordinates> {
  readonly #options: KafkaPartialBatchProcessorOptions<R>;

  constructor(options: KafkaPartialBatchProcessorOptions<R> = {}) {
    this.#options = options;
  }

  /**
   * @param records - the event's `records` (grouped by `"<topic>-<partition>"`); records are
   *   regrouped by their own topic and partition and sorted by offset, so the grouping key
   *   and order of the input do not matter
   * @param handler - processes one record; a rejection marks the record failed
   * @returns the partial batch response: one failure per stopped partition, in the order the
   *   partitions first appear in `records`; never rejects
   */
  async process(
    records: Readonly<Record<string, readonly R[]>> | undefined,
    handler: (record: R) => Promise<unknown>,
  ): Promise<KafkaBatchResponse> {
    const partitions = groupByPartition(records ?? {});
    const stoppedAt: (KafkaCoordinates | undefined)[] = await Promise.all(
      partitions.map((partition) => this.#runPartition(partition, handler)),
    );
    return kafkaBatchResponse(stoppedAt.filter((record) => record !== undefined));
  }

  /** Runs one partition's records in order; resolves with the record that failed, if any. */
  async #runPartition(records: readonly R[], handler: (record: R) => Promise<unknown>): Promise<R | undefined> {
    for (const record of records) {
      try {
        await handler(record);
      } catch (error) {
        this.#options.onRecordFailure?.(record, error);
        return record;
      }
    }
    return undefined;
  }
}

function groupByPartition<R extends KafkaCoordinates>(records: Readonly<Record<string, readonly R[]>>): R[][] {
  const byPartition = new Map<string, R[]>();
  for (const group of Object.values(records)) {
    for (const record of group) {
      const key = topicPartition(record.topic, record.partition);
      const partition = byPartition.get(key);
      if (partition === undefined) byPartition.set(key, [record]);
      else partition.push(record);
    }
  }
  return [...byPartition.values()].map((partition) => partition.sort((a, b) => a.offset - b.offset));
}
