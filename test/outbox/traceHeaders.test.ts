/**
 * The relay carries each outbox item's trace header on, against DynamoDB Local (items, stream,
 * Powertools records) and the SQS/SNS server: to an SQS queue as the `AWSTraceHeader` message
 * system attribute, to an SNS topic as the `Publish` request's `X-Amzn-Trace-Id` header (SNS has no
 * system attribute for it), replacing the relay invocation's own that the SDK adds in Lambda; an
 * item written without one still publishes. With a tracer, each publish is a `## publish`
 * subsegment whose annotations hold nothing of the message.
 *
 * What the emulator keeps: fauxqs 1.9.2 accepts `MessageSystemAttributes` and drops them (a
 * received message has no `AWSTraceHeader`), and its SNS does not pass a request's trace header on
 * to subscribers; so the header is checked on the requests (a recording middleware), the delivery
 * of the messages on the emulator.
 */
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { createOutboxRelay } from '../../packages/idempotent-consumer/src/outbox/createOutboxRelay.js';
import { outboxPut } from '../../packages/idempotent-consumer/src/outbox/outboxItems.js';
import type { OutgoingMessage } from '../../packages/idempotent-consumer/src/types.js';
import { receiveOutboxDeliveries } from '../../packages/local/src/outbox/receiveOutboxDeliveries.js';
import { FakeTracer, INVOCATION_TRACE_HEADER } from '../support/fakeTracer.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';
import { CONSUMER, clients, insertEvent, invocationContext, type OutboxResources, outboxResources } from './outboxHarness.js';

const describe = describeUnlessDeployedStack('an inbox table with a stream and destination queues of its own');

const SOURCE_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=557abcec3ee5a047;Sampled=1';
const SECRET = 'S3CR3T';

/** Records the command name, input and final HTTP headers of every request a client sends. */
function recording<T extends SQSClient | SNSClient>(client: T) {
  const requests: { command: string; input: Record<string, unknown>; headers: Record<string, string> }[] = [];
  (client.middlewareStack as unknown as SQSClient['middlewareStack']).add(
    (next, context) => async (args) => {
      const headers = (args.request as { headers?: Record<string, string> }).headers ?? {};
      requests.push({ command: context.commandName ?? '', input: args.input as Record<string, unknown>, headers: { ...headers } });
      return next(args);
    },
    { step: 'finalizeRequest', name: 'traceTestRecorder' },
  );
  return { client, requests };
}

/** Writes one outbox item as the engine does, with the trace header given (or none, as items written before). */
async function commit(env: OutboxResources, key: string, message: OutgoingMessage, traceHeader?: string): Promise<string> {
  const put = outboxPut({
    tableName: env.inboxTable,
    consumerName: CONSUMER,
    idempotencyKey: key,
    orderingKey: `${key}-group`,
    position: 0,
    message,
    now: new Date(),
    ttlSeconds: 3600,
    ...(traceHeader === undefined ? {} : { traceHeader }),
  });
  await env.documentClient.send(new TransactWriteCommand({ TransactItems: [{ Put: put }] }));
  return put.Item.messageId;
}

describe('the relay and the trace header', () => {
  let env: OutboxResources;
  beforeAll(async () => {
    env = await outboxResources('trace');
  });
  afterAll(() => env.dispose());
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("publishes with the item's trace header: AWSTraceHeader to SQS, X-Amzn-Trace-Id to SNS; none from an old item", async () => {
    // As in Lambda: the SDK would send the relay invocation's own header on every request.
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'outbox-relay');
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    const own = clients();
    const sqs = recording(own.sqs);
    const sns = recording(own.sns);
    const tracer = new FakeTracer();
    const relay = createOutboxRelay(
      {},
      {
        environment: env.environment({ default: env.fifoQueueUrl, topic: env.fifoTopicArn }, { publishedTtlSeconds: 600 }),
        clients: { dynamoDb: env.dynamoDb, sqs: sqs.client, sns: sns.client },
        logger: new Logger({ serviceName: CONSUMER, logLevel: 'SILENT' }),
        metrics: new Metrics({ namespace: 'TraceTest', serviceName: CONSUMER }),
        tracer,
      },
    );
    const toQueue = await commit(env, 'e-1', { body: { note: `${SECRET}-1` }, attributes: { kind: SECRET } }, SOURCE_HEADER);
    const toTopic = await commit(env, 'e-2', { body: { note: `${SECRET}-2` }, destination: 'topic' }, SOURCE_HEADER);
    const old = await commit(env, 'e-3', { body: { note: `${SECRET}-3` } });

    const response = await relay(await insertEvent(env, [toQueue, toTopic, old]), invocationContext().context);
    expect(response).toEqual({ batchItemFailures: [] });

    const sends = sqs.requests.filter((request) => request.command === 'SendMessageCommand');
    expect(sends.map((request) => request.input['MessageSystemAttributes'])).toEqual([
      { AWSTraceHeader: { DataType: 'String', StringValue: SOURCE_HEADER } },
      undefined,
    ]);
    const publishes = sns.requests.filter((request) => request.command === 'PublishCommand');
    expect(publishes).toHaveLength(1);
    expect(publishes[0]!.headers['X-Amzn-Trace-Id']).toBe(SOURCE_HEADER);
    expect(Object.keys(publishes[0]!.headers).filter((name) => name.toLowerCase() === 'x-amzn-trace-id')).toHaveLength(1);
    // The message's attributes stay the decision's own and outboxMessageId.
    expect(Object.keys(publishes[0]!.input['MessageAttributes'] as object)).toEqual(['outboxMessageId']);

    // The emulator took every request; the bodies arrive unchanged.
    const queued = await receiveOutboxDeliveries(own.sqs, env.fifoQueueUrl);
    expect(queued.messages.map((message) => message.Body).sort()).toEqual([`{"note":"${SECRET}-1"}`, `{"note":"${SECRET}-3"}`]);
    const delivered = await receiveOutboxDeliveries(own.sqs, env.fifoTopicSubscriberUrl);
    expect(delivered.messages.map((message) => message.Body)).toEqual([`{"note":"${SECRET}-2"}`]);

    // One `## publish` per message, annotated with names and outcomes only.
    const publishSegments = tracer.named('## publish');
    expect(publishSegments.map((segment) => segment.annotations)).toEqual([
      { consumer: CONSUMER, destination: 'default', sent: true, marked: true },
      { consumer: CONSUMER, destination: 'topic', sent: true, marked: true },
      { consumer: CONSUMER, destination: 'default', sent: true, marked: true },
    ]);
    expect(publishSegments.every((segment) => segment.closed && segment.errors.length === 0)).toBe(true);
    const values = tracer.subsegments().flatMap((segment) => Object.values(segment.annotations).map(String));
    expect(values.filter((value) => value.includes(SECRET) || value.includes('e-1'))).toEqual([]);
    expect(tracer.subsegments().flatMap((segment) => segment.metadata)).toEqual([]);
    own.sqs.destroy();
    own.sns.destroy();
    own.dynamoDb.destroy();
    own.streams.destroy();
  });

  it('adds the error of a failed publish to its ## publish and closes it; the record is reported', async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    const tracer = new FakeTracer();
    const failure = new Error('the destination is down');
    const relay = createOutboxRelay(
      { destinations: { default: { target: 'down', publish: async () => Promise.reject(failure) } } },
      {
        environment: env.environment({}, { publishedTtlSeconds: 600 }),
        clients: { dynamoDb: env.dynamoDb },
        logger: new Logger({ serviceName: CONSUMER, logLevel: 'SILENT' }),
        metrics: new Metrics({ namespace: 'TraceTest', serviceName: CONSUMER }),
        tracer,
      },
    );
    const id = await commit(env, 'e-4', { body: { note: 'x' } }, SOURCE_HEADER);
    const event = await insertEvent(env, [id]);
    const response = await relay(event, invocationContext().context);
    expect(response.batchItemFailures).toHaveLength(1);
    const [segment] = tracer.named('## publish');
    expect(segment?.errors).toEqual([failure]);
    expect(segment?.closed).toBe(true);
    expect(segment?.annotations).toEqual({ consumer: CONSUMER, destination: 'default' });
    expect(tracer.current).toBe(tracer.root);
  });
});
