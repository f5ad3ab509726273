import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import type { Delivery } from '../engine/Delivery.js';

/**
 * Turns the records of an SQS event into source-neutral deliveries: the attempt count is the
 * record's `ApproximateReceiveCount` (minus the receives the attempt log knows were not attempts);
 * on a FIFO queue the message group is the delivery's scope (the group stops at its first message
 * that must come back); the dead-letter origin keeps the source queue's ARN, the message group and
 * the producer's message attributes.
 *
 * @param records - the `SQSEvent`'s records, in order
 * @param fifo - whether the source queue is FIFO
 */
export function sqsDeliveries(records: readonly SQSRecord[], fifo: boolean): Delivery[] {
  return records.map((record) => {
    const receiveCount = Number.parseInt(record.attributes?.ApproximateReceiveCount ?? '1', 10);
    const group = record.attributes?.MessageGroupId;
    const originalAttributes = toSendMessageAttributes(record.messageAttributes);
    return {
      messageId: record.messageId,
      body: typeof record.body === 'string' ? record.body : '',
      ...(fifo && group !== undefined ? { scope: `group:${group}` } : {}),
      attempts: { kind: 'receive-count', receiveCount: Number.isFinite(receiveCount) && receiveCount > 0 ? receiveCount : 1, sourceId: `sqs:${record.messageId}` },
      deadLetter: {
        source: record.eventSourceARN,
        ...(group !== undefined ? { messageGroupId: group, coordinates: { messageGroupId: group } } : {}),
        ...(Object.keys(originalAttributes).length > 0 ? { originalAttributes } : {}),
      },
    };
  });
}

/**
 * Lambda's form of message attributes (`stringValue`, `binaryValue` in base64, `dataType`) in
 * the form `SendMessage` takes (`StringValue`, `BinaryValue` as bytes, `DataType`).
 */
export function toSendMessageAttributes(attributes: SQSMessageAttributes | undefined): Record<string, MessageAttributeValue> {
  const result: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(attributes ?? {})) {
    result[name] = {
      DataType: value.dataType,
      ...(value.stringValue !== undefined && value.stringValue !== null ? { StringValue: value.stringValue } : {}),
      ...(value.binaryValue !== undefined && value.binaryValue !== null ? { BinaryValue: Buffer.from(value.binaryValue, 'base64') } : {}),
    };
  }
  return result;
}
