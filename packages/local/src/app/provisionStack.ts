/**
 * Creates a stack's tables, queues, topics, event buses and buckets in the emulators from its template's own
 * properties (key schemas, streams, TTL, FIFO, visibility timeouts, retention, message sizes,
 * redrive policies), and gives each its local values (`Ref` and attributes) for resolving the
 * functions' environments.
 *
 * @module
 */
import { CreateTopicCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { QueueAttributeName, SQSClient } from '@aws-sdk/client-sqs';
import type { S3Client } from '@aws-sdk/client-s3';
import { ProvisioningError } from '../errors.js';
import { localRegion } from '../localClientConfig.js';
import { ensureBucket, ensureQueue, ensureTable } from '../provision.js';
import type { QueueModel, ResourceValues, StackModel } from './stackTemplate.js';

/** The account id of the local resources' ARNs (the emulators' own). */
export const localAccountId = '000000000000';

/** Options of {@link provisionStack}. */
export interface ProvisionStackOptions {
  readonly dynamoDb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly sns: SNSClient;
  /** Without it, the stack's buckets are not created (their names still resolve). */
  readonly s3?: S3Client;
  /** The local EventBridge (`startEventBridgeServer`) that creates the stack's event buses; needed when it has any. */
  readonly eventBridge?: { createEventBus(name: string): string };
  /** Put before every name, so that several runs share the emulators. @default '' */
  readonly prefix?: string;
  /** Only these resources (logical ids), e.g. those the functions refer to. @default all of the stack's */
  readonly only?: ReadonlySet<string>;
}

/** What {@link provisionStack} created: the local values of each resource, by logical id. */
export type LocalStackResources = ReadonlyMap<string, ResourceValues>;

/**
 * The physical name of a resource the template leaves unnamed, as CloudFormation would make it
 * without its random suffix: `<prefix><stack>-<logical id>`; a FIFO queue's ends in `.fifo`; a
 * bucket's is lower case. Cut to the service's length limit.
 */
export function localName(
  kind: 'table' | 'queue' | 'topic' | 'bucket',
  stackName: string,
  id: string,
  given: string | undefined,
  prefix = '',
  fifo = false,
): string {
  const suffix = fifo ? '.fifo' : '';
  const base = given === undefined ? `${stackName}-${id}` : given.endsWith(suffix) ? given.slice(0, given.length - suffix.length) : given;
  switch (kind) {
    case 'table':
      return `${prefix}${base}`.slice(0, 255);
    case 'queue':
      return `${`${prefix}${base}`.slice(0, 80 - suffix.length)}${suffix}`;
    case 'topic':
      return `${`${prefix}${base}`.slice(0, 256 - suffix.length)}${suffix}`;
    case 'bucket':
      return `${prefix}${base}`
        .toLowerCase()
        .replace(/[^a-z0-9.-]/g, '-')
        .slice(0, 63)
        .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  }
}

/**
 * Creates the stack's resources (or reuses them, as `provisionResources` does): each table on
 * demand with its key schema (and key types), stream and TTL; each queue with its FIFO flag,
 * content-based deduplication, visibility timeout, retention, maximum message size and redrive
 * policy (its dead-letter queue first, `maxReceiveCount` as written); each topic with its FIFO
 * flag and content-based deduplication; each bucket. Not mirrored, as in `provisionResources`:
 * encryption, policies, point-in-time recovery, removal policies, alarms.
 *
 * @throws {ProvisioningError} when a resource exists with another shape, or the emulators refuse one
 */
export async function provisionStack(model: StackModel, options: ProvisionStackOptions): Promise<LocalStackResources> {
  const prefix = options.prefix ?? '';
  const wanted = (id: string) => options.only === undefined || options.only.has(id);
  const values = new Map<string, ResourceValues>();

  await Promise.all([
    ...[...model.tables.values()]
      .filter((table) => wanted(table.id))
      .map(async (table) => {
        const name = localName('table', model.stackName, table.id, table.name, prefix);
        const description = await ensureTable(options.dynamoDb, {
          name,
          partitionKey: table.partitionKey.name,
          partitionKeyType: table.partitionKey.type,
          ...(table.sortKey === undefined ? {} : { sortKey: table.sortKey.name, sortKeyType: table.sortKey.type }),
          ...(table.ttlAttribute === undefined ? {} : { ttlAttribute: table.ttlAttribute }),
          ...(table.streamViewType === undefined ? {} : { streamViewType: table.streamViewType }),
        });
        const attributes: Record<string, string> = {
          Arn: description?.TableArn ?? `arn:aws:dynamodb:${localRegion}:${localAccountId}:table/${name}`,
        };
        if (description?.LatestStreamArn !== undefined) attributes.StreamArn = description.LatestStreamArn;
        values.set(table.id, { ref: name, attributes });
      }),
    ...[...model.buckets.values()]
      .filter((bucket) => wanted(bucket.id))
      .map(async (bucket) => {
        const name = localName('bucket', model.stackName, bucket.id, bucket.name, prefix);
        if (options.s3 !== undefined) await ensureBucket(options.s3, name);
        values.set(bucket.id, {
          ref: name,
          attributes: {
            Arn: `arn:aws:s3:::${name}`,
            DomainName: `${name}.s3.amazonaws.com`,
            RegionalDomainName: `${name}.s3.${localRegion}.amazonaws.com`,
          },
        });
      }),
    ...[...model.topics.values()]
      .filter((topic) => wanted(topic.id))
      .map(async (topic) => {
        const name = localName('topic', model.stackName, topic.id, topic.name, prefix, topic.fifo);
        const { TopicArn } = await options.sns.send(
          new CreateTopicCommand({
            Name: name,
            Attributes: {
              ...(topic.fifo ? { FifoTopic: 'true' } : {}),
              ...(topic.contentBasedDeduplication === undefined
                ? {}
                : { ContentBasedDeduplication: String(topic.contentBasedDeduplication) }),
            },
          }),
        );
        if (TopicArn === undefined) throw new ProvisioningError(`SNS returned no ARN for topic ${name}.`);
        values.set(topic.id, { ref: TopicArn, attributes: { TopicArn, TopicName: name } });
      }),
  ]);

  // Dead-letter queues before the queues whose redrive policy names them.
  const created = new Map<string, Promise<ResourceValues>>();
  const createQueue = (queue: QueueModel): Promise<ResourceValues> => {
    let promise = created.get(queue.id);
    if (promise === undefined) {
      promise = (async () => {
        const name = localName('queue', model.stackName, queue.id, queue.name, prefix, queue.fifo);
        const attributes: Partial<Record<QueueAttributeName, string>> = {};
        if (queue.fifo) attributes.FifoQueue = 'true';
        if (queue.contentBasedDeduplication !== undefined) attributes.ContentBasedDeduplication = String(queue.contentBasedDeduplication);
        if (queue.visibilityTimeoutSeconds !== undefined) attributes.VisibilityTimeout = String(queue.visibilityTimeoutSeconds);
        if (queue.retentionPeriodSeconds !== undefined) attributes.MessageRetentionPeriod = String(queue.retentionPeriodSeconds);
        if (queue.maxMessageSizeBytes !== undefined) attributes.MaximumMessageSize = String(queue.maxMessageSizeBytes);
        if (queue.redrive !== undefined) {
          const deadLetterQueue = model.queues.get(queue.redrive.deadLetterQueueId)!;
          const target = await createQueue(deadLetterQueue);
          attributes.RedrivePolicy = JSON.stringify({
            deadLetterTargetArn: target.attributes.Arn,
            maxReceiveCount: queue.redrive.maxReceiveCount,
          });
        }
        const { url, arn } = await ensureQueue(options.sqs, name, attributes);
        return { ref: url, attributes: { Arn: arn, QueueName: name, QueueUrl: url } };
      })();
      created.set(queue.id, promise);
    }
    return promise;
  };
  for (const queue of model.queues.values()) {
    if (!wanted(queue.id)) continue;
    values.set(queue.id, await createQueue(queue));
  }
  for (const bus of model.eventBuses.values()) {
    if (!wanted(bus.id)) continue;
    if (options.eventBridge === undefined)
      throw new ProvisioningError(`${bus.path}: an event bus needs the local EventBridge, and none was given.`);
    const name = `${prefix}${bus.name ?? `${model.stackName}-${bus.id}`}`.replace(/[^/.\-_A-Za-z0-9]/g, '-').slice(0, 256);
    const arn = options.eventBridge.createEventBus(name);
    values.set(bus.id, { ref: name, attributes: { Arn: arn, Name: name } });
  }
  for (const fn of model.functions.values()) {
    const name = `${prefix}${model.stackName}-${fn.id}`.slice(0, 64);
    values.set(fn.id, { ref: name, attributes: { Arn: `arn:aws:lambda:${localRegion}:${localAccountId}:function:${name}` } });
  }
  return values;
}
