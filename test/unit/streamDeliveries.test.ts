import { describe, expect, it } from 'vitest';
import { reportedSequenceNumbers } from '../../packages/idempotent-consumer/src/batch/handleStreamEvent.js';
import {
  compareSequenceNumbers,
  dynamoDbStreamEntries,
  kinesisEntries,
  kinesisShardId,
} from '../../packages/idempotent-consumer/src/batch/streamDeliveries.js';
import { streamImageToJson } from '../../packages/idempotent-consumer/src/batch/streamImage.js';
import { body } from '../support/sqsEvents.js';
import { DYNAMODB_STREAM_ARN, dynamoDbRecord, KINESIS_STREAM_ARN, kinesisRecord, kinesisSequenceNumber } from '../support/streamEvents.js';

describe('streamImageToJson', () => {
  it('turns DynamoDB JSON into plain JSON, keeping numbers a number cannot hold as text', () => {
    expect(
      streamImageToJson({
        s: { S: 'x' },
        n: { N: '42' },
        f: { N: '1.50' },
        big: { N: '123456789012345678901234567890' },
        b: { BOOL: true },
        z: { NULL: true },
        m: { M: { inner: { L: [{ S: 'a' }, { N: '2' }] } } },
        ss: { SS: ['a', 'b'] },
        ns: { NS: ['1', '9007199254740993'] },
        bin: { B: 'AQI=' },
      }),
    ).toEqual({
      s: 'x',
      n: 42,
      f: 1.5,
      big: '123456789012345678901234567890',
      b: true,
      z: null,
      m: { inner: ['a', 2] },
      ss: ['a', 'b'],
      ns: [1, '9007199254740993'],
      bin: 'AQI=',
    });
  });

  it('refuses a value of no DynamoDB type', () => {
    expect(() => streamImageToJson({ x: {} as never })).toThrow(TypeError);
  });
});

describe('kinesisEntries', () => {
  it('makes a delivery of each record, shard by shard in sequence-number order, with its coordinates', () => {
    const entries = kinesisEntries([
      kinesisRecord(1, 3, body.placed('e-3', 'O-3')),
      kinesisRecord(0, 2, body.placed('e-2', 'O-2')),
      kinesisRecord(1, 1, body.placed('e-1', 'O-1')),
    ]);
    expect(entries.map((e) => [e.scope, e.sequenceNumber])).toEqual([
      [`shard:${KINESIS_STREAM_ARN}/shardId-000000000001`, kinesisSequenceNumber(1)],
      [`shard:${KINESIS_STREAM_ARN}/shardId-000000000001`, kinesisSequenceNumber(3)],
      [`shard:${KINESIS_STREAM_ARN}/shardId-000000000000`, kinesisSequenceNumber(2)],
    ]);
    const delivery = entries[0]!.delivery!;
    expect(delivery.messageId).toBe(`shardId-000000000001:${kinesisSequenceNumber(1)}`);
    expect(JSON.parse(delivery.body)).toEqual(body.placed('e-1', 'O-1'));
    expect(delivery.attempts).toMatchObject({ kind: 'log', sourceId: `kinesis:orders/${delivery.messageId}`, source: KINESIS_STREAM_ARN });
    expect(delivery.deadLetter).toMatchObject({
      source: KINESIS_STREAM_ARN,
      messageGroupId: 'O-1',
      coordinates: { shardId: 'shardId-000000000001', sequenceNumber: kinesisSequenceNumber(1), partitionKey: 'O-1' },
    });
  });

  it('rejects data that is not UTF-8 and keeps it in base64, and empty data', () => {
    const bad = kinesisRecord(0, 1, 'x');
    const notUtf8 = { ...bad, kinesis: { ...bad.kinesis, data: Buffer.from([0xff, 0xfe]).toString('base64') } };
    const empty = { ...bad, kinesis: { ...bad.kinesis, data: '' } };
    const [a, b] = kinesisEntries([notUtf8, { ...empty, kinesis: { ...empty.kinesis, sequenceNumber: kinesisSequenceNumber(2) } }]);
    expect(a?.delivery?.rejection?.name).toBe('ValidationError');
    expect(a?.delivery?.deadLetter.bodyEncoding).toBe('base64');
    expect(a?.delivery?.body).toBe(notUtf8.kinesis.data);
    expect(b?.delivery?.rejection?.message).toMatch(/empty/);
  });

  it('reads the shard id from the eventID', () => {
    expect(kinesisShardId({ eventID: 'shardId-000000000006:4954' })).toBe('shardId-000000000006');
    expect(kinesisShardId({ eventID: '' })).toBe('unknown-shard');
  });
});

describe('dynamoDbStreamEntries', () => {
  it('makes the NewImage the event, the image in DynamoDB JSON the body, and keeps the event name and keys as coordinates', () => {
    const record = dynamoDbRecord(5, { ...body.paid('e-5', 'O-5', 12), extra: { nested: [1, 'a'] } });
    const [entry] = dynamoDbStreamEntries([record]);
    const delivery = entry!.delivery!;
    expect(delivery.messageId).toBe(record.eventID);
    expect(delivery.parsedBody?.value).toEqual({ ...body.paid('e-5', 'O-5', 12), extra: { nested: [1, 'a'] } });
    expect(JSON.parse(delivery.body)).toEqual(record.dynamodb?.NewImage);
    expect(delivery.scope).toBe(`shard:${DYNAMODB_STREAM_ARN}`);
    expect(delivery.attempts).toMatchObject({ kind: 'log', sourceId: `dynamodb:${record.eventID}` });
    expect(delivery.deadLetter.coordinates).toMatchObject({
      eventID: record.eventID,
      eventName: 'INSERT',
      sequenceNumber: record.dynamodb?.SequenceNumber,
      keys: JSON.stringify(record.dynamodb?.Keys),
    });
  });

  it('leaves a REMOVE unprocessed and dead-letters an INSERT without a NewImage', () => {
    const removed = dynamoDbRecord(1, null, { keys: { orderId: 'O-1', eventId: 'e-1' } });
    const keysOnly = dynamoDbRecord(2, null, { eventName: 'INSERT', keys: { orderId: 'O-2', eventId: 'e-2' } });
    const [a, b] = dynamoDbStreamEntries([removed, keysOnly]);
    expect(a?.delivery).toBeUndefined();
    expect(b?.delivery?.rejection?.message).toMatch(/NEW_IMAGE/);
  });

  it('orders the records by sequence number, numerically', () => {
    const entries = dynamoDbStreamEntries([dynamoDbRecord(10, body.placed('b', 'O')), dynamoDbRecord(9, body.placed('a', 'O'))]);
    expect(entries.map((e) => e.delivery?.parsedBody?.value)).toEqual([body.placed('a', 'O'), body.placed('b', 'O')]);
    expect(compareSequenceNumbers('99', '100')).toBeLessThan(0);
  });
});

describe('reportedSequenceNumbers', () => {
  it('reports the first reported record of a shard and everything after it, also records not processed', () => {
    const entries = dynamoDbStreamEntries([
      dynamoDbRecord(1, body.placed('e-1', 'O-1')),
      dynamoDbRecord(2, body.placed('e-2', 'O-2')),
      dynamoDbRecord(3, null, { keys: { orderId: 'O-1', eventId: 'e-1' } }),
      dynamoDbRecord(4, body.placed('e-4', 'O-4')),
    ]);
    const second = entries[1]!.delivery!.messageId;
    expect([...reportedSequenceNumbers(entries, new Set([second]))]).toEqual(entries.slice(1).map((e) => e.sequenceNumber));
    expect(reportedSequenceNumbers(entries, new Set()).size).toBe(0);
  });
});

describe('a redrive of a stream dead letter', () => {
  it('is the record with an "ic.redrive" field: Kinesis and DynamoDB Streams records carry it as redriveOf; others do not', () => {
    const kinesis = { ...kinesisRecord(0, 1, body.placed('e-1', 'O-1')), 'ic.redrive': 'shardId-000000000000:1' };
    const dynamodb = { ...dynamoDbRecord(1, body.placed('e-1', 'O-1')), 'ic.redrive': 'abc' };
    expect(kinesisEntries([kinesis])[0]?.delivery?.redriveOf).toBe('shardId-000000000000:1');
    expect(dynamoDbStreamEntries([dynamodb])[0]?.delivery?.redriveOf).toBe('abc');
    expect(kinesisEntries([kinesisRecord(0, 2, 'x')])[0]?.delivery?.redriveOf).toBeUndefined();
  });
});
