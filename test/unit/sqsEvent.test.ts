import { readFileSync } from 'node:fs';
import type { Message } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { buildSqsEvent } from '../../packages/local/src/sqsEvent.js';

const fixture = (name: string): SQSEvent => JSON.parse(readFileSync(new URL(`../events/${name}`, import.meta.url), 'utf8')) as SQSEvent;

/** The message ReceiveMessage returns for a record of the fixture (what the poller starts from). */
function receivedMessage(record: SQSRecord): Message {
  const attributes = Object.entries(record.messageAttributes);
  return {
    MessageId: record.messageId,
    ReceiptHandle: record.receiptHandle,
    Body: record.body,
    MD5OfBody: record.md5OfBody,
    ...(record.md5OfMessageAttributes ? { MD5OfMessageAttributes: record.md5OfMessageAttributes } : {}),
    Attributes: { ...record.attributes },
    ...(attributes.length > 0
      ? {
          MessageAttributes: Object.fromEntries(
            attributes.map(([name, value]) => [
              name,
              {
                DataType: value.dataType,
                ...(value.stringValue === undefined ? {} : { StringValue: value.stringValue }),
                ...(value.binaryValue === undefined ? {} : { BinaryValue: new Uint8Array(Buffer.from(value.binaryValue, 'base64')) }),
              },
            ]),
          ),
        }
      : {}),
  };
}

describe('buildSqsEvent', () => {
  it.each(['sqs-event-standard.json', 'sqs-event-fifo.json'])('builds the event of %s from the received messages', (name) => {
    // Arrange
    const expected = fixture(name);
    const first = expected.Records[0];
    if (!first) throw new Error(`${name} has no records`);
    const messages = expected.Records.map(receivedMessage);

    // Act
    const event = buildSqsEvent(messages, { eventSourceArn: first.eventSourceARN, awsRegion: first.awsRegion });

    // Assert
    expect(event).toEqual(expected);
    expect(JSON.stringify(event)).toBe(JSON.stringify(expected)); // same key order as AWS's examples
  });

  it('rejects a message received without its system attributes', () => {
    const message: Message = { MessageId: 'm-1', ReceiptHandle: 'rh-1', Body: '{}', MD5OfBody: '99914b932bd37a50b983c5e7c90ae93b' };

    expect(() => buildSqsEvent([message], { eventSourceArn: 'arn:aws:sqs:us-east-1:000000000000:q', awsRegion: 'us-east-1' })).toThrow(
      /ApproximateReceiveCount/,
    );
  });
});
