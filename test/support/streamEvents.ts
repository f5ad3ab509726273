/**
 * Factories of Kinesis Data Streams and DynamoDB Streams events as Lambda's event source mappings
 * deliver them (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html).
 *
 * @module
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord, DynamoDBStreamEvent, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';

/** The Kinesis stream ARN of the tests. */
export const KINESIS_STREAM_ARN = 'arn:aws:kinesis:us-east-1:000000000000:stream/orders';
/** The DynamoDB stream ARN of the tests. */
export const DYNAMODB_STREAM_ARN = 'arn:aws:dynamodb:us-east-1:000000000000:table/orders-events/stream/2026-01-01T00:00:00.000';

/** A Kinesis sequence number of 56 digits ending in `n` (ordered as `n`). */
export const kinesisSequenceNumber = (n: number): string =>
  `4954511524349098501828006771497314458218006259324${String(n).padStart(7, '0')}`;

/**
 * One Kinesis record: `data` is a body (an object is written as JSON), base64-encoded here; the
 * partition key defaults to the body's `orderId`.
 */
export function kinesisRecord(
  shard: number,
  n: number,
  data: string | Record<string, unknown>,
  options: { partitionKey?: string; streamArn?: string } = {},
): KinesisStreamRecord {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  const orderId = typeof data === 'object' && typeof data.orderId === 'string' ? data.orderId : 'no-key';
  const shardId = `shardId-${String(shard).padStart(12, '0')}`;
  const sequenceNumber = kinesisSequenceNumber(n);
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey: options.partitionKey ?? orderId,
      sequenceNumber,
      data: Buffer.from(text, 'utf8').toString('base64'),
      approximateArrivalTimestamp: 1_767_268_800 + n / 1000,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `${shardId}:${sequenceNumber}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: 'arn:aws:iam::000000000000:role/consumer',
    awsRegion: 'us-east-1',
    eventSourceARN: options.streamArn ?? KINESIS_STREAM_ARN,
  };
}

/** A Kinesis event of these records. */
export function kinesisEvent(...records: KinesisStreamRecord[]): KinesisStreamEvent {
  return { Records: records };
}

/** A DynamoDB Streams sequence number of 21 digits ending in `n`. */
export const dynamoDbSequenceNumber = (n: number): string => `1000000000000${String(n).padStart(8, '0')}`;

/**
 * One DynamoDB stream record of the table `orders-events` (partition key `orderId`, sort key
 * `eventId`) whose `NewImage` is `item` (marshalled); `null` for a `REMOVE`.
 */
export function dynamoDbRecord(
  n: number,
  item: Record<string, unknown> | null,
  options: { eventName?: 'INSERT' | 'MODIFY' | 'REMOVE'; keys?: Record<string, unknown> } = {},
): DynamoDBRecord {
  const keys = options.keys ?? { orderId: item?.orderId, eventId: item?.eventId };
  return {
    eventID: `c81e728d9d4c2f636f067f89cc14862c${String(n).padStart(4, '0')}`,
    eventName: options.eventName ?? (item === null ? 'REMOVE' : 'INSERT'),
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: 1_767_268_800 + n,
      Keys: marshall(keys) as Record<string, AttributeValue>,
      ...(item === null ? {} : { NewImage: marshall(item, { removeUndefinedValues: true }) as Record<string, AttributeValue> }),
      SequenceNumber: dynamoDbSequenceNumber(n),
      SizeBytes: 100,
      StreamViewType: 'NEW_IMAGE',
    },
    eventSourceARN: DYNAMODB_STREAM_ARN,
  };
}

/** A DynamoDB Streams event of these records. */
export function dynamoDbStreamEvent(...records: DynamoDBRecord[]): DynamoDBStreamEvent {
  return { Records: records };
}
