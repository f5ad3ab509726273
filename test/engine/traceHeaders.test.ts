/**
 * The source message's X-Ray trace header goes on to its dead letter and its outbox items: the
 * café consumer against DynamoDB Local and the SQS server, SQS (the record's `AWSTraceHeader`) and
 * Kafka (no header of its own: the invocation's `_X_AMZN_TRACE_ID`).
 *
 * The outbox item is read from DynamoDB Local. The dead letter's header is read from the
 * `SendMessageBatch` request (a recording middleware on the consumer's SQS client): the SQS server
 * (fauxqs 1.9.2) accepts `MessageSystemAttributes` but does not keep them, so a received dead
 * letter has no `AWSTraceHeader` there (the last test pins that, so a fauxqs that keeps them shows).
 */
import { type SQSClient, SendMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { createIdempotentConsumer } from 'idempotent-consumer';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { cafeConsumerOptions } from '../../examples/cafe/consumer.js';
import { cafeResources, deadLetters, queueRecord } from '../support/cafeHarness.js';
import { outboxItems } from '../support/consumerHarness.js';
import { INVOCATION_TRACE_HEADER } from '../support/fakeTracer.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { body, lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { awsClients, describeUnlessDeployedStack, type TestResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack("reads its own dead-letter queue's messages and the SQS server's behaviour");

const PAID_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=557abcec3ee5a047;Sampled=1';
const POISON_HEADER = 'Root=1-5759e989-cd862e3fe1be46a994272794;Parent=657abcec3ee5a048;Sampled=0';

/** An SQS client of the test's emulator that records every request's input. */
function recordingSqs(): { client: SQSClient; inputs: { command: string; input: Record<string, unknown> }[] } {
  const { sqs, dynamoDb, s3 } = awsClients();
  dynamoDb.destroy();
  s3.destroy();
  const inputs: { command: string; input: Record<string, unknown> }[] = [];
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      inputs.push({ command: context.commandName ?? '', input: args.input as Record<string, unknown> });
      return next(args);
    },
    { step: 'initialize', name: 'traceTestRecorder' },
  );
  return { client: sqs, inputs };
}

const withTraceHeader = (record: SQSRecord, header: string): SQSRecord => ({
  ...record,
  attributes: { ...record.attributes, AWSTraceHeader: header },
});

describe('trace headers on dead letters and outbox items', () => {
  let env: TestResources;
  let sqs: ReturnType<typeof recordingSqs>;
  beforeAll(async () => {
    env = await cafeResources('trace');
    sqs = recordingSqs();
  });
  afterAll(async () => {
    sqs.client.destroy();
    await env.dispose();
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  const handler = () =>
    createIdempotentConsumer(cafeConsumerOptions, {
      environment: env.environment,
      clients: { dynamoDb: env.dynamoDb, sqs: sqs.client, s3: env.s3 },
    });
  const dlqEntries = () =>
    sqs.inputs
      .filter((request) => request.command === 'SendMessageBatchCommand')
      .flatMap((request) => request.input['Entries'] as { MessageBody: string; MessageSystemAttributes?: unknown }[]);

  it("SQS: the outbox item carries its message's AWSTraceHeader, the dead letter its own, the body unchanged", async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    const poisonBody = JSON.stringify(body.paid('e-s3', 'O-s3', 'ten'));
    const response = await handler()(
      sqsEvent(
        queueRecord(env, 'm-s1', body.placed('e-s1', 'O-s1')),
        withTraceHeader(queueRecord(env, 'm-s2', body.paid('e-s2', 'O-s1', 10)), PAID_HEADER),
        withTraceHeader(queueRecord(env, 'm-s3', poisonBody), POISON_HEADER),
      ),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });

    const items = (await outboxItems(env)).filter((item) => item.idempotencyKey === 'e-s2');
    expect(items.map((item) => item.traceHeader)).toEqual([PAID_HEADER]);

    const entries = dlqEntries().filter((entry) => entry.MessageBody === poisonBody);
    expect(entries.map((entry) => entry.MessageSystemAttributes)).toEqual([
      { AWSTraceHeader: { DataType: 'String', StringValue: POISON_HEADER } },
    ]);
    const received = (await deadLetters(env)).filter((message) => message.Body === poisonBody);
    expect(received).toHaveLength(1);
  });

  it("Kafka: a record has no header of its own; its outbox item and dead letter carry the invocation's", async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    const poison = JSON.stringify(body.paid('e-k3', 'O-k1', 'ten'));
    const response = await handler()(
      mskEvent(
        kafkaRecord('orders', 0, 1, body.placed('e-k1', 'O-k1')),
        kafkaRecord('orders', 0, 2, body.paid('e-k2', 'O-k1', 10)),
        kafkaRecord('orders', 0, 3, poison),
      ),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    const items = (await outboxItems(env)).filter((item) => item.idempotencyKey === 'e-k2');
    expect(items.map((item) => item.traceHeader)).toEqual([INVOCATION_TRACE_HEADER]);
    const entries = dlqEntries().filter((entry) => entry.MessageBody === poison);
    expect(entries.map((entry) => entry.MessageSystemAttributes)).toEqual([
      { AWSTraceHeader: { DataType: 'String', StringValue: INVOCATION_TRACE_HEADER } },
    ]);
  });

  it('outside Lambda (no trace data) an item and a dead letter without a header of their own carry none', async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', '');
    const poison = JSON.stringify(body.paid('e-n2', 'O-n1', 'ten'));
    await handler()(
      mskEvent(kafkaRecord('orders', 1, 1, body.placed('e-n0', 'O-n1')), kafkaRecord('orders', 1, 2, body.paid('e-n1', 'O-n1', 5))),
      lambdaContext(),
    );
    await handler()(sqsEvent(queueRecord(env, 'm-n2', poison)), lambdaContext());
    const items = (await outboxItems(env)).filter((item) => item.idempotencyKey === 'e-n1');
    expect(items).toHaveLength(1);
    expect(items[0]).not.toHaveProperty('traceHeader');
    const entries = dlqEntries().filter((entry) => entry.MessageBody === poison);
    expect(entries).toHaveLength(1);
    expect(entries[0]).not.toHaveProperty('MessageSystemAttributes');
  });

  it('the SQS server takes a message with an AWSTraceHeader system attribute and drops the attribute (fauxqs 1.9.2)', async () => {
    await env.sqs.send(
      new SendMessageCommand({
        QueueUrl: env.resources.queueUrl,
        MessageBody: 'traced',
        MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: PAID_HEADER } },
      }),
    );
    const output = await env.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: env.resources.queueUrl, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 1 }),
    );
    const [message] = output.Messages ?? [];
    expect(message?.Body).toBe('traced');
    expect(message?.Attributes?.['SentTimestamp']).toBeDefined();
    expect(message?.Attributes?.['AWSTraceHeader']).toBeUndefined();
  });
});
