/**
 * The local Kafka event source mapping's S3 on-failure destination: each batch given up becomes
 * one object, Lambda's S3 invocation record (the metadata record with the whole event in
 * `payload`), in a bucket of the embedded S3 server.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { KafkaOnFailureInvocationRecord } from 'idempotent-consumer/dlq';
import type { KafkaEvent } from 'idempotent-consumer/kafka';
import type { KafkaOnFailureRecord } from './KafkaEventSourcePoller.js';

/** The local mapping's UUID in the object keys (a deployed mapping has its own). */
export const LOCAL_MAPPING_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * What Lambda writes to an S3 on-failure destination: the metadata record, and the event of the
 * last invocation "as an escaped JSON string" in `payload`
 * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html).
 */
export function kafkaS3OnFailureRecord(record: KafkaOnFailureRecord, event: KafkaEvent): KafkaOnFailureInvocationRecord {
  return { ...record, payload: JSON.stringify(event) };
}

/**
 * The object key of an on-failure record: `aws/lambda/<mapping UUID>/<topic>-<partition>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<UUID>`
 * (its first topic-partition; the time is when Lambda gave up, UTC). AWS documents this layout for
 * Kinesis and DynamoDB Streams destinations; for Kafka it documents none, so the DLQ tool reads
 * any key under the prefix it is given.
 */
export function kafkaS3OnFailureKey(
  record: KafkaOnFailureRecord,
  mappingUuid: string = LOCAL_MAPPING_UUID,
  id: string = randomUUID(),
): string {
  const at = new Date(record.timestamp);
  const iso = at.toISOString();
  const day = iso.slice(0, 10).replaceAll('-', '/');
  const time = `${iso.slice(0, 10)}T${iso.slice(11, 19).replaceAll(':', '.')}`;
  const partition = Object.keys(record.KafkaBatchInfo.recordsInfo)[0] ?? 'unknown';
  return `aws/lambda/${mappingUuid}/${partition}/${day}/${time}-${id}`;
}

/** Options of {@link createS3OnFailureDestination}. */
export interface S3OnFailureDestinationOptions {
  /** An S3 client of the local S3 server (path-style). */
  readonly s3: S3Client;
  /** The destination bucket: created if it does not exist. */
  readonly bucket: string;
  /** @default {@link LOCAL_MAPPING_UUID} */
  readonly mappingUuid?: string;
}

/**
 * Creates the bucket (if needed) and returns the poller's `onFailure` that writes each record
 * given up there ({@link kafkaS3OnFailureRecord} at {@link kafkaS3OnFailureKey}).
 *
 * @throws what `CreateBucket` throws, except that the bucket exists already
 */
export async function createS3OnFailureDestination(
  options: S3OnFailureDestinationOptions,
): Promise<(record: KafkaOnFailureRecord, event: KafkaEvent) => Promise<string>> {
  try {
    await options.s3.send(new CreateBucketCommand({ Bucket: options.bucket }));
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
  }
  return async (record, event) => {
    const key = kafkaS3OnFailureKey(record, options.mappingUuid);
    await options.s3.send(
      new PutObjectCommand({
        Bucket: options.bucket,
        Key: key,
        Body: JSON.stringify(kafkaS3OnFailureRecord(record, event)),
        ContentType: 'application/json',
      }),
    );
    return key;
  };
}
