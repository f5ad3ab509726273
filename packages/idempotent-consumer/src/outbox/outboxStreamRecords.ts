/**
 * Which DynamoDB Stream records the relay publishes, and how it reads an outbox item from one.
 *
 * @module
 */
import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { tableKeys } from '../settings/settings.js';
import { OutboxMessageError, type OutboxMessage } from './OutboxDestination.js';
import { OUTBOX_KIND } from './outboxItems.js';
import { traceHeaderOrUndefined } from '../observability/traceHeader.js';

/**
 * The filter pattern of the relay's event source mapping: new outbox items of one consumer
 * (`INSERT` records whose new image has `kind = "outbox"` and `consumer = <consumerName>`).
 * Lambda drops every other record before it invokes the relay and checkpoints past it
 * (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-ddb):
 * the relay's own marks (`MODIFY`), TTL deletions (`REMOVE`), inbox rows, attempt records and
 * other consumers' items never reach it. The relay checks the same itself
 * (`readOutboxRecord`), so it is also correct without the filter.
 */
export function outboxFilterPattern(consumerName: string) {
  return {
    eventName: ['INSERT'],
    dynamodb: { NewImage: { kind: { S: [OUTBOX_KIND] }, consumer: { S: [consumerName] } } },
  } as const;
}

/** What the relay does with one stream record. */
export type OutboxRecordVerdict =
  /** Publish this message. */
  | { readonly kind: 'publish'; readonly message: OutboxMessage }
  /** Not an outbox item of this consumer, or not its insertion: acknowledge it, publish nothing. */
  | { readonly kind: 'skip'; readonly reason: string };

const MESSAGE_ID = /^[0-9a-f]{64}$/;

/**
 * Reads a stream record: an `INSERT` of an outbox item of `consumerName` becomes the message to
 * publish; anything else is skipped (see {@link outboxFilterPattern}).
 *
 * @throws OutboxMessageError when the record is an outbox insert that cannot be read: no new image
 *   (the stream's view type must be `NEW_IMAGE` or `NEW_AND_OLD_IMAGES`), or an item without a
 *   well-formed message id, destination, group, body, attributes or creation time
 */
export function readOutboxRecord(record: DynamoDBRecord, consumerName: string): OutboxRecordVerdict {
  if (record.eventName !== 'INSERT') return { kind: 'skip', reason: `${record.eventName ?? 'unknown'} record` };
  const image = record.dynamodb?.NewImage;
  if (image === undefined) {
    const keys = record.dynamodb?.Keys;
    const key = keys?.[tableKeys.inbox.partitionKey]?.S;
    if (key !== undefined && !key.startsWith(`${consumerName}#outbox#`))
      return { kind: 'skip', reason: 'not an outbox item of this consumer' };
    throw new OutboxMessageError(
      `stream record ${record.dynamodb?.SequenceNumber ?? '?'} has no new image: the inbox table's stream must have the view type NEW_IMAGE or NEW_AND_OLD_IMAGES`,
    );
  }
  if (image['kind']?.S !== OUTBOX_KIND) return { kind: 'skip', reason: 'not an outbox item' };
  if (image['consumer']?.S !== consumerName)
    return { kind: 'skip', reason: `an outbox item of another consumer (${image['consumer']?.S ?? 'none'})` };

  const item = unmarshall(image as Record<string, SdkAttributeValue>);
  const problems: string[] = [];
  const string = (name: string): string => {
    const value = item[name];
    if (typeof value !== 'string') problems.push(`${name} is not a string`);
    return typeof value === 'string' ? value : '';
  };
  const messageId = string('messageId');
  if (messageId !== '' && !MESSAGE_ID.test(messageId)) problems.push('messageId is not 64 lowercase hex digits');
  const destination = string('destination');
  const messageGroupId = string('messageGroupId');
  if (messageGroupId === '' && typeof item['messageGroupId'] === 'string') problems.push('messageGroupId is empty');
  const body = string('body');
  const idempotencyKey = string('idempotencyKey');
  const createdAt = string('createdAt');
  if (createdAt !== '' && Number.isNaN(Date.parse(createdAt))) problems.push('createdAt is not an ISO 8601 time');
  const position = item['position'];
  if (typeof position !== 'number' || !Number.isInteger(position) || position < 0) problems.push('position is not a whole number');
  const rawAttributes: unknown = item['attributes'] ?? {};
  const attributes: Record<string, string> = {};
  if (rawAttributes === null || typeof rawAttributes !== 'object' || Array.isArray(rawAttributes)) problems.push('attributes is not a map');
  else {
    for (const [name, value] of Object.entries(rawAttributes)) {
      if (typeof value === 'string') attributes[name] = value;
      else problems.push(`attribute ${name} is not a string`);
    }
  }
  const pk = item[tableKeys.inbox.partitionKey];
  if (messageId !== '' && pk !== `${consumerName}#outbox#${messageId}`)
    problems.push(`${tableKeys.inbox.partitionKey} does not match the message id`);
  if (problems.length > 0) {
    throw new OutboxMessageError(
      `outbox item ${JSON.stringify(pk)} (stream record ${record.dynamodb?.SequenceNumber ?? '?'}) is malformed: ${problems.join('; ')}`,
    );
  }
  // Optional: items written before it was stored have none; one that is not a trace header is not carried on.
  const traceHeader = traceHeaderOrUndefined(item['traceHeader']);
  return {
    kind: 'publish',
    message: {
      messageId,
      consumer: consumerName,
      idempotencyKey,
      position: position as number,
      destination,
      messageGroupId,
      body,
      attributes,
      createdAt,
      ...(traceHeader === undefined ? {} : { traceHeader }),
    },
  };
}
