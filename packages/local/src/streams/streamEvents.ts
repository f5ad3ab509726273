/**
 * The events the local stream mappings send: Kinesis Data Streams and DynamoDB Streams, as Lambda
 * builds them from a shard's records.
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html
 *
 * @module
 */
import type { DynamoDBRecord, DynamoDBStreamEvent, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import type { ShardLog, ShardRecord } from './ShardLog.js';

const localRegion = 'us-east-1';

/** A Kinesis event of one shard's records: `data` in base64, `approximateArrivalTimestamp` in epoch seconds. */
export function buildKinesisEvent(log: Pick<ShardLog, 'arn'>, records: readonly ShardRecord[]): KinesisStreamEvent {
  return {
    Records: records.map(
      (record): KinesisStreamRecord => ({
        kinesis: {
          kinesisSchemaVersion: '1.0',
          partitionKey: record.partitionKey,
          sequenceNumber: record.sequenceNumber,
          data: Buffer.from(record.data ?? '', 'utf8').toString('base64'),
          approximateArrivalTimestamp: record.arrivalMs / 1000,
        },
        eventSource: 'aws:kinesis',
        eventVersion: '1.0',
        eventID: record.eventId,
        eventName: 'aws:kinesis:record',
        invokeIdentityArn: 'arn:aws:iam::000000000000:role/local-consumer',
        awsRegion: localRegion,
        eventSourceARN: log.arn,
      }),
    ),
  };
}

/** A DynamoDB Streams event of one shard's records (`INSERT`s, view type `NEW_IMAGE`, `ApproximateCreationDateTime` in epoch seconds). */
export function buildDynamoDbStreamEvent(log: Pick<ShardLog, 'arn'>, records: readonly ShardRecord[]): DynamoDBStreamEvent {
  return {
    Records: records.map(
      (record): DynamoDBRecord => ({
        eventID: record.eventId,
        eventName: 'INSERT',
        eventVersion: '1.1',
        eventSource: 'aws:dynamodb',
        awsRegion: localRegion,
        dynamodb: {
          ApproximateCreationDateTime: Math.floor(record.arrivalMs / 1000),
          Keys: { ...record.keys },
          NewImage: { ...record.newImage },
          SequenceNumber: record.sequenceNumber,
          SizeBytes: Buffer.byteLength(JSON.stringify(record.keys ?? {})) + Buffer.byteLength(JSON.stringify(record.newImage ?? {})),
          StreamViewType: 'NEW_IMAGE',
        },
        eventSourceARN: log.arn,
      }),
    ),
  };
}

/** The event of a shard's records for the log's kind. */
export function buildStreamEvent(
  log: Pick<ShardLog, 'arn' | 'kind'>,
  records: readonly ShardRecord[],
): KinesisStreamEvent | DynamoDBStreamEvent {
  return log.kind === 'kinesis' ? buildKinesisEvent(log, records) : buildDynamoDbStreamEvent(log, records);
}
