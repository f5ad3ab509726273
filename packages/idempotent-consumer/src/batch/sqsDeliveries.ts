import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import type { Delivery } from '../engine/Delivery.js';
import { traceHeaderOrUndefined } from '../observability/traceHeader.js';

/**
 * The message attribute (SQS) or record header (Kafka) that marks a redrive of a dead letter:
 * its value is the source's id of the dead-lettered message (`dlq redrive` adds it). Only a
 * redrive applies a key the inbox holds as dead-lettered.
 */
export const REDRIVE_ATTRIBUTE = 'ic.redrive';

/**
 * Turns the records of an SQS event into source-neutral deliveries: the attempt count is the
 * record's `ApproximateReceiveCount` (minus the receives the attempt log knows were not attempts);
 * on a FIFO queue the message group is the delivery's scope (the group stops at its first message
 * that must come back); the dead-letter origin keeps the source queue's ARN, the message group and
 * the producer's message attributes; the X-Ray trace header (`AWSTraceHeader`), when well formed,
 * goes on to the dead letter and the outbox messages.
 *
 * @param records - the `SQSEvent`'s records, in order
 * @param fifo - whether the source queue is FIFO
 */
export function sqsDeliveries(records: readonly SQSRecord[], fifo: boolean): Delivery[] {
  return records.map((record) => {
    const receiveCount = Number.parseInt(record.attributes?.ApproximateReceiveCount ?? '1', 10);
    const group = record.attributes?.MessageGroupId;
    const { [REDRIVE_ATTRIBUTE]: _redrive, ...originalAttributes } = toSendMessageAttributes(record.messageAttributes);
    const redriveOf = redriveOfAttributes(record.messageAttributes);
    const traceHeader = traceHeaderOrUndefined(record.attributes?.AWSTraceHeader);
    return {
      messageId: record.messageId,
      body: typeof record.body === 'string' ? record.body : '',
      ...(fifo && group !== undefined ? { scope: `group:${group}` } : {}),
      attempts: {
        kind: 'receive-count',
        receiveCount: Number.isFinite(receiveCount) && receiveCount > 0 ? receiveCount : 1,
        sourceId: `sqs:${record.messageId}`,
      },
      deadLetter: {
        source: record.eventSourceARN,
        ...(group !== undefined ? { messageGroupId: group, coordinates: { messageGroupId: group } } : {}),
        ...(Object.keys(originalAttributes).length > 0 ? { originalAttributes } : {}),
      },
      ...(redriveOf === undefined ? {} : { redriveOf }),
      ...(traceHeader === undefined ? {} : { traceHeader }),
      ...(fifo ? {} : { sqsRecord: record }),
    };
  });
}

/**
 * The id of the dead-lettered message a record redrives: its `ic.redrive` attribute, or, for a
 * dead letter the queue's own redrive moved back as it was (`StartMessageMoveTask` keeps the
 * attributes), the `originalMessageId` in its `ic.context`; `undefined` for any other message.
 */
export function redriveOfAttributes(attributes: SQSMessageAttributes | undefined): string | undefined {
  const marked = attributes?.[REDRIVE_ATTRIBUTE]?.stringValue;
  if (typeof marked === 'string' && marked !== '') return marked;
  const context = attributes?.['ic.context']?.stringValue;
  if (typeof context !== 'string' || attributes?.['ic.failureReason'] === undefined) return undefined;
  try {
    const id = (JSON.parse(context) as { originalMessageId?: unknown }).originalMessageId;
    return typeof id === 'string' && id !== '' ? id : undefined;
  } catch {
    return undefined;
  }
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
