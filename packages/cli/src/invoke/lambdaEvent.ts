/**
 * The event file of `invoke -e EVENT.json`: an SQS event or an Amazon MSK / self-managed Kafka
 * event as Lambda delivers it, told apart by its `eventSource`. No AWS SDK.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { KafkaEvent, KafkaRecord } from 'idempotent-consumer/kafka';
import { kafkaMessageId } from 'idempotent-consumer/kafka';
import { UsageError } from '../dlq/errors.js';

/** An event file, read and told apart. */
export type LambdaEventFile =
  | {
      readonly source: 'sqs';
      readonly event: SQSEvent;
      /** From a FIFO queue: its ARN ends in `.fifo`, or its records have a `MessageGroupId`. */
      readonly fifo: boolean;
    }
  | { readonly source: 'kafka'; readonly event: KafkaEvent };

const SQS_SHAPE = '{ "Records": [{ "eventSource": "aws:sqs", "messageId": …, "body": …, … }] }';
const KAFKA_SHAPE =
  '{ "eventSource": "aws:kafka" | "SelfManagedKafka", "records": { "<topic>-<partition>": [{ "topic", "partition", "offset", "value", … }] } }';

/**
 * Tells an event apart and checks what the consumer needs of it: for SQS (`Records[].eventSource`
 * `aws:sqs`, https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html) every record's
 * `messageId` and `body`; for Kafka (`eventSource` `aws:kafka` or `SelfManagedKafka`,
 * https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html) every record's `topic`,
 * `partition` and `offset`.
 *
 * @param file - the file's name, for messages
 * @throws UsageError naming the file and what is wrong
 */
export function parseLambdaEvent(content: unknown, file: string): LambdaEventFile {
  const neither = (why: string): UsageError =>
    new UsageError(`-e ${file}: ${why}; expected an SQS event ${SQS_SHAPE} or a Kafka event ${KAFKA_SHAPE}`);
  if (typeof content !== 'object' || content === null || Array.isArray(content)) throw neither('not a JSON object');
  const candidate = content as { Records?: unknown; eventSource?: unknown; records?: unknown };
  if (Array.isArray(candidate.Records)) {
    if (candidate.Records.length === 0) throw neither('"Records" is empty');
    candidate.Records.forEach((record: unknown, index) => {
      const r = record as Partial<SQSRecord> | null;
      const where = `Records[${index}]`;
      if (typeof r !== 'object' || r === null) throw neither(`${where} is not an object`);
      if (r.eventSource !== 'aws:sqs') throw neither(`${where}.eventSource is ${JSON.stringify(r.eventSource)}, not "aws:sqs"`);
      if (typeof r.messageId !== 'string' || r.messageId === '') throw neither(`${where} has no messageId`);
      if (typeof r.body !== 'string') throw neither(`${where} has no body (a string)`);
    });
    const records = candidate.Records as SQSRecord[];
    const fifo =
      records.some((r) => typeof r.eventSourceARN === 'string' && r.eventSourceARN.endsWith('.fifo')) ||
      records.some((r) => r.attributes?.MessageGroupId !== undefined);
    return { source: 'sqs', event: { Records: records }, fifo };
  }
  if (candidate.eventSource === 'aws:kafka' || candidate.eventSource === 'SelfManagedKafka') {
    const groups = candidate.records;
    if (typeof groups !== 'object' || groups === null || Array.isArray(groups))
      throw neither('"records" is not an object of "<topic>-<partition>" lists');
    let count = 0;
    for (const [key, list] of Object.entries(groups)) {
      if (!Array.isArray(list)) throw neither(`records["${key}"] is not a list`);
      list.forEach((record: unknown, index) => {
        const r = record as Partial<KafkaRecord> | null;
        const where = `records["${key}"][${index}]`;
        if (typeof r !== 'object' || r === null) throw neither(`${where} is not an object`);
        if (typeof r.topic !== 'string' || !Number.isInteger(r.partition) || !Number.isInteger(r.offset))
          throw neither(`${where} needs "topic" (a string), "partition" and "offset" (whole numbers)`);
        count += 1;
      });
    }
    if (count === 0) throw neither('"records" holds no record');
    return { source: 'kafka', event: content as KafkaEvent };
  }
  throw neither(`it has neither "Records" nor an "eventSource" of Kafka (eventSource: ${JSON.stringify(candidate.eventSource)})`);
}

/**
 * Reads `-e FILE` ({@link parseLambdaEvent}).
 *
 * @throws UsageError when the file is missing, not JSON, or not an event
 */
export async function readLambdaEvent(file: string): Promise<LambdaEventFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      `-e ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory, not a file' : (error as Error).message}`,
      { cause: error },
    );
  }
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`-e ${file}: not JSON (${(error as Error).message})`, { cause: error });
  }
  return parseLambdaEvent(content, file);
}

/** The event with every record's `eventSourceARN` and `awsRegion` those of the provisioned source queue. */
export function withSourceQueue(event: SQSEvent, queueArn: string, region: string): SQSEvent {
  return { Records: event.Records.map((record) => ({ ...record, eventSourceARN: queueArn, awsRegion: region })) };
}

/**
 * The id of each record, in event order, as the engine reports its outcome: the SQS `messageId`,
 * or `<topic>-<partition>@<offset>` for Kafka.
 */
export function recordIdsOf(parsed: LambdaEventFile): string[] {
  if (parsed.source === 'sqs') return parsed.event.Records.map((record) => record.messageId);
  return Object.values(parsed.event.records).flatMap((records) => records.map((record) => kafkaMessageId(record)));
}

/**
 * The ids a batch response reports as failed: SQS `itemIdentifier` strings, Kafka
 * `{ partition: "<topic>-<partition>", offset }` as `<topic>-<partition>@<offset>`. Anything else
 * in the response is ignored.
 */
export function failedIdsOf(response: unknown): Set<string> {
  const failures = (response as { batchItemFailures?: unknown } | null)?.batchItemFailures;
  const ids = new Set<string>();
  if (!Array.isArray(failures)) return ids;
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id === 'string') ids.add(id);
    else if (typeof id === 'object' && id !== null) {
      const { partition, offset } = id as { partition?: unknown; offset?: unknown };
      if (typeof partition === 'string' && (typeof offset === 'number' || typeof offset === 'string')) ids.add(`${partition}@${offset}`);
    }
  }
  return ids;
}
