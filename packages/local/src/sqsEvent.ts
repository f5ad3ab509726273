/**
 * Builds the Lambda SQS event from messages received with the SQS API, in the shape Lambda
 * delivers it (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, "Example standard
 * queue message event" and "Example FIFO queue message event").
 *
 * @module
 */
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSMessageAttribute, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';

/** Where the records come from. */
export interface SqsEventSource {
  /** ARN of the source queue (`eventSourceARN` of every record). */
  readonly eventSourceArn: string;
  /** Region of the source queue (`awsRegion` of every record). */
  readonly awsRegion: string;
}

/**
 * The Lambda event for a batch: `{ Records: [...] }`, one record per message, in receive order.
 *
 * @param messages messages received with `MessageSystemAttributeNames: ['All']` and
 *   `MessageAttributeNames: ['All']`
 * @throws {Error} when a message lacks a field Lambda always sets (id, receipt handle, body,
 *   MD5 of the body, or one of the system attributes `ApproximateReceiveCount`,
 *   `SentTimestamp`, `SenderId`, `ApproximateFirstReceiveTimestamp`)
 */
export function buildSqsEvent(messages: readonly Message[], source: SqsEventSource): SQSEvent {
  return { Records: messages.map((message) => toSqsRecord(message, source)) };
}

/**
 * One Lambda SQS record. System attributes keep their SQS names (`ApproximateReceiveCount`,
 * ..., and for FIFO `SequenceNumber`, `MessageGroupId`, `MessageDeduplicationId`); message
 * attributes take Lambda's lower-camel form `{ stringValue?, binaryValue? (base64),
 * stringListValues, binaryListValues, dataType }`.
 *
 * @throws {Error} as {@link buildSqsEvent}
 */
export function toSqsRecord(message: Message, source: SqsEventSource): SQSRecord {
  const required = (value: string | undefined, name: string): string => {
    if (value === undefined) throw new Error(`SQS message ${message.MessageId ?? '(no id)'} has no ${name}`);
    return value;
  };
  const system = message.Attributes ?? {};
  const optional = (name: keyof SQSRecordAttributes): Partial<SQSRecordAttributes> => {
    const value = system[name as keyof typeof system];
    return value === undefined ? {} : { [name]: value };
  };
  // Key order as in AWS's example events.
  const attributes: SQSRecordAttributes = {
    ...optional('AWSTraceHeader'),
    ApproximateReceiveCount: required(system.ApproximateReceiveCount, 'ApproximateReceiveCount attribute'),
    SentTimestamp: required(system.SentTimestamp, 'SentTimestamp attribute'),
    ...optional('SequenceNumber'),
    ...optional('MessageGroupId'),
    SenderId: required(system.SenderId, 'SenderId attribute'),
    ...optional('MessageDeduplicationId'),
    ApproximateFirstReceiveTimestamp: required(system.ApproximateFirstReceiveTimestamp, 'ApproximateFirstReceiveTimestamp attribute'),
    ...optional('DeadLetterQueueSourceArn'),
  };

  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = toLambdaMessageAttribute(value);
  }

  return {
    messageId: required(message.MessageId, 'MessageId'),
    receiptHandle: required(message.ReceiptHandle, 'ReceiptHandle'),
    body: required(message.Body, 'Body'),
    attributes,
    messageAttributes,
    md5OfBody: required(message.MD5OfBody, 'MD5OfBody'),
    ...(message.MD5OfMessageAttributes === undefined ? {} : { md5OfMessageAttributes: message.MD5OfMessageAttributes }),
    eventSource: 'aws:sqs',
    eventSourceARN: source.eventSourceArn,
    awsRegion: source.awsRegion,
  };
}

function toLambdaMessageAttribute(value: MessageAttributeValue): SQSMessageAttribute {
  const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
  return {
    ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
    ...(value.BinaryValue === undefined ? {} : { binaryValue: base64(value.BinaryValue) }),
    stringListValues: [...(value.StringListValues ?? [])],
    binaryListValues: (value.BinaryListValues ?? []).map(base64),
    dataType: value.DataType ?? 'String',
  };
}
