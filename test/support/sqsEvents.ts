import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';

/** The queue ARN of the cases' shared conventions. */
export const ORDERS_QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:orders';

let counter = 0;
const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString();

/** Order event bodies with the cases' defaults; `minute` sets `occurredAt`. */
export const body = {
  placed: (eventId: string, orderId: string, minute = 0) =>
    ({ eventId, type: 'OrderPlaced', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
  paid: (eventId: string, orderId: string, points: unknown = 10, minute = 1) =>
    ({ eventId, type: 'OrderPaid', orderId, occurredAt: at(minute), points }) as Record<string, unknown>,
  shipped: (eventId: string, orderId: string, minute = 2) =>
    ({ eventId, type: 'OrderShipped', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
  delivered: (eventId: string, orderId: string, minute = 3) =>
    ({ eventId, type: 'OrderDelivered', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
  cancelled: (eventId: string, orderId: string, minute = 4) =>
    ({ eventId, type: 'OrderCancelled', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
};

/** An SQS record as Lambda delivers it (the cases' shared convention). */
export function sqsRecord(
  messageId: string,
  messageBody: string | Record<string, unknown>,
  options: { receiveCount?: number; groupId?: string; queueArn?: string } = {},
): SQSRecord {
  counter += 1;
  return {
    messageId,
    receiptHandle: `rh-${messageId}-${counter}`,
    body: typeof messageBody === 'string' ? messageBody : JSON.stringify(messageBody),
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: '1767268800000',
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: '1767268800001',
      ...(options.groupId !== undefined
        ? { MessageGroupId: options.groupId, MessageDeduplicationId: messageId, SequenceNumber: String(counter) }
        : {}),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: options.queueArn ?? ORDERS_QUEUE_ARN,
    awsRegion: 'us-east-1',
  } as SQSRecord;
}

/** An SQS event of these records. */
export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

/** A Lambda context whose deadline is `timeoutMs` milliseconds from now. */
export function lambdaContext(timeoutMs = 30_000, functionName = 'consumer-test'): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: `req-${Math.random().toString(16).slice(2)}`,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
