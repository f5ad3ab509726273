/**
 * What the parking tests share (`retry.parkOutOfOrder`, docs/parking.md): a message sent to the
 * test's source queue and received alone, the park item of an ordering key and the message ids it
 * holds, the source queue's counts, and a DynamoDB client that runs something just before the
 * park of one ordering key is written (the race of a predecessor committing meanwhile).
 *
 * @module
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, type MessageAttributeValue, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import {
  BusinessRuleViolation,
  type IdempotentConsumerOptions,
  PredecessorNotApplied,
  RetryableError,
  type TableDefinition,
} from 'idempotent-consumer';
import { z } from 'zod';
import { recordFromMessage } from './consumerHarness.js';
import { awsClients, type TestResources } from './testResources.js';

/** Receives one message of the test's source queue (waiting up to 20 s), as Lambda hands it over. @throws Error when none arrives */
export async function receiveOne(env: TestResources): Promise<SQSRecord> {
  for (let tries = 0; tries < 20; tries += 1) {
    const { Messages = [] } = await env.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: env.resources.queueUrl,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages[0] !== undefined) return recordFromMessage(Messages[0], env.resources.queueArn);
  }
  throw new Error('the message did not arrive');
}

/** Sends `body` to the test's source queue and receives it (the queue holding nothing else visible). */
export async function sendAndReceive(
  env: TestResources,
  body: string,
  attributes: Record<string, MessageAttributeValue> = {},
): Promise<SQSRecord> {
  await env.sqs.send(new SendMessageCommand({ QueueUrl: env.resources.queueUrl, MessageBody: body, MessageAttributes: attributes }));
  return receiveOne(env);
}

/** The park item of an ordering key (read consistently), or `undefined`. */
export async function parkItem(env: TestResources, orderingKey: string): Promise<Record<string, unknown> | undefined> {
  const output = await env.documentClient.send(
    new GetCommand({
      TableName: env.resources.inboxTable,
      Key: { pk: `${env.settings.consumerName}#park#${orderingKey}` },
      ConsistentRead: true,
    }),
  );
  return output.Item;
}

/** The message ids parked under an ordering key, sorted. */
export async function parkedIds(env: TestResources, orderingKey: string): Promise<string[]> {
  return Object.keys((await parkItem(env, orderingKey)) ?? {})
    .filter((name) => name.startsWith('parked:'))
    .map((name) => name.slice('parked:'.length))
    .sort();
}

/** The source queue's messages: visible, in flight, delayed. */
export async function queueCounts(env: TestResources): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const { Attributes = {} } = await env.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: env.resources.queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed),
  };
}

/**
 * A DynamoDB client of its own that runs `before` (once) just before the first write of the park
 * of `orderingKey` goes out: a predecessor committing, and reading the park, while a successor is
 * being parked. Destroy it with `destroy()`.
 */
export function clientRacingThePark(
  env: TestResources,
  orderingKey: string,
  before: () => Promise<void>,
): { readonly dynamoDb: DynamoDBClient; raced(): boolean; destroy(): void } {
  const clients = awsClients();
  const parkKey = `${env.settings.consumerName}#park#${orderingKey}`;
  let raced = false;
  clients.dynamoDb.middlewareStack.add(
    (next, context) => async (args) => {
      // The document client's input, marshalled or not yet, depending on where its middleware runs.
      const pk = (args.input as { Key?: { pk?: string | { S?: string } } }).Key?.pk;
      const key = typeof pk === 'string' ? pk : pk?.S;
      if (!raced && context.commandName === 'UpdateItemCommand' && key === parkKey) {
        raced = true;
        await before();
      }
      return next(args);
    },
    { step: 'initialize', name: 'racingThePark' },
  );
  return { dynamoDb: clients.dynamoDb, raced: () => raced, destroy: () => clients.destroy() };
}

/**
 * The tally event of the parking edge tests: `{ need }` applies when the key's tally is at least
 * `need` (else it waits: `PredecessorNotApplied`) and adds one; with `below`, a tally at or above it
 * makes it a `BusinessRuleViolation`; `pad` makes a body as large as a test needs.
 */
export const TallyEvent = z.object({
  eventId: z.string().min(1),
  key: z.string().min(1),
  need: z.number().int().min(0),
  below: z.number().int().optional(),
  pad: z.string().optional(),
});
export type TallyEvent = z.infer<typeof TallyEvent>;
export const tallyTables = { tallies: { partitionKey: 'key' } } as const satisfies Record<string, TableDefinition>;

class Flaky extends RetryableError {}

/** The tally consumer; `flaky(event)` true makes its decision throw a retryable error first. */
export function tallyConsumer(flaky: (event: TallyEvent) => boolean = () => false): IdempotentConsumerOptions<TallyEvent> {
  return {
    schema: TallyEvent,
    idempotencyKey: 'eventId',
    orderingKey: 'key',
    tables: tallyTables,
    read: (event) => [{ table: 'tallies', key: { key: event.key } }],
    decide: (event, state) => {
      if (flaky(event)) throw new Flaky(`event ${event.eventId} failed for now`);
      const count = state.get<{ count: number }>('tallies', { key: event.key })?.count ?? 0;
      if (event.below !== undefined && count >= event.below)
        throw new BusinessRuleViolation(`tally ${event.key} is ${count}, not below ${event.below}`);
      if (count < event.need) throw new PredecessorNotApplied(`tally ${event.key} is ${count}, ${event.eventId} needs ${event.need}`);
      return { writes: [{ Put: { TableName: 'tallies', Item: { key: event.key, count: count + 1 } } }] };
    },
  };
}

/** A tally event. */
export const tally = (key: string, eventId: string, need: number, extra: Partial<TallyEvent> = {}): TallyEvent => ({
  eventId,
  key,
  need,
  ...extra,
});
