import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import type { Delivery } from '../processing/MessageConsumer.js';

/**
 * Turns an SQS record of a Lambda event into a source-neutral {@link Delivery}: the attempt
 * is the record's `ApproximateReceiveCount` out of the queue's `maxReceiveCount`; the
 * dead-letter context keeps the source queue ARN, the FIFO message group and the original
 * message attributes.
 *
 * @param record - one record of the `SQSEvent`
 * @param maxReceiveCount - the source queue's redrive policy `maxReceiveCount`
 */
export function sqsDelivery(record: SQSRecord, maxReceiveCount: number): Delivery {
  const receiveCount = Number.parseInt(record.attributes.ApproximateReceiveCount, 10);
  const attempt = Number.isFinite(receiveCount) && receiveCount > 0 ? receiveCount : 1;
  const group = record.attributes.MessageGroupId;
  const originalAttributes = toSendMessageAttributes(record.messageAttributes);
  return {
    message: { body: record.body, messageId: record.messageId },
    attempt: { attempt, maxAttempts: maxReceiveCount },
    deadLetter: {
      attempts: attempt,
      source: record.eventSourceARN,
      ...(group !== undefined ? { messageGroupId: group, coordinates: { messageGroupId: group } } : {}),
      ...(Object.keys(originalAttributes).length > 0 ? { originalAttributes } : {}),
    },
  };
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
      ...(value.binaryValue !== undefined && value.binaryValue !== null
        ? { BinaryValue: Buffer.from(value.binaryValue, 'base64') }
        : {}),
    };
  }
  return result;
}
