/**
 * `dlq redrive` of Kafka dead letters through the command line: by an Invoke of the consumer's
 * function (`--function`, Lambda at `AWS_ENDPOINT_URL_LAMBDA`), the record at its original
 * coordinates with the redrive mark; and `dlq list|redrive --on-failure-bucket`.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaEvent } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import { startLocalKafkaFunction, type LocalFunctionEndpoint } from '../../packages/local/src/kafka/localFunctionEndpoint.js';
import { createS3OnFailureDestination } from '../../packages/local/src/kafka/s3OnFailureDestination.js';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { listDeadLetters } from '../../packages/cli/src/dlq/list.js';
import { formatList } from '../../packages/cli/src/dlq/output.js';
import { createQueue, eventBody, s3For, seedDeadLetters, startSqs, visibleCount, type FauxqsServer } from './dlqFixtures.js';
import { runInProcess } from './inProcessCli.js';

const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/c/abc';
let server: FauxqsServer;
let sqs: SQSClient;
let endpoint: string;
let lambda: LocalFunctionEndpoint;
const invoked: KafkaEvent[] = [];
let reply: unknown = { batchItemFailures: [] };
/** When the records were produced: a minute ago, well inside the inbox window. */
const produced = Date.now() - 60_000;

beforeAll(async () => {
  ({ server, sqs, endpoint } = await startSqs());
  lambda = await startLocalKafkaFunction({
    functionName: 'orders-consumer',
    functionTimeoutSeconds: 10,
    memorySizeMb: 128,
    createHandler: () => (event: KafkaEvent, _context: Context) => {
      invoked.push(event);
      return reply;
    },
  });
});

afterAll(async () => {
  await lambda.stop();
  sqs.destroy();
  await server.stop();
});

async function kafkaDlq(name: string) {
  const dlq = await createQueue(sqs, name);
  await seedDeadLetters(sqs, dlq.url, [
    {
      reason: 'BusinessRuleViolation',
      body: eventBody('k-1'),
      source: clusterArn,
      originalMessageId: 'orders-3@17',
      coordinates: { topic: 'orders', partition: 3, offset: 17, timestamp: produced, timestampType: 'CREATE_TIME', key: 'o-1' },
    },
  ]);
  return dlq;
}

describe('dlq redrive of a Kafka dead letter', () => {
  it('leaves it in the DLQ without --function, saying how to redrive it', async () => {
    const dlq = await kafkaDlq('kafka-nofn');

    const run = await runInProcess(['dlq', 'redrive', '--queue-url', dlq.url, '--no-dlq-check', '--yes', '--json'], {
      AWS_ENDPOINT_URL_SQS: endpoint,
    });

    expect(run.code).toBe(1);
    const result = JSON.parse(run.stdout) as { skipped: { detail: string; coordinates: unknown }[] };
    expect(result.skipped).toEqual([
      expect.objectContaining({
        detail: expect.stringContaining('--function NAME'),
        coordinates: { topic: 'orders', partition: 3, offset: 17 },
      }),
    ]);
    expect(await visibleCount(sqs, dlq.url)).toBe(1);
  });

  it('invokes --function with the record at its coordinates, marked as a redrive, and deletes it once acknowledged', async () => {
    const dlq = await kafkaDlq('kafka-fn');
    invoked.length = 0;
    reply = { batchItemFailures: [] };

    const run = await runInProcess(['dlq', 'redrive', '--queue-url', dlq.url, '--no-dlq-check', '--function', 'orders-consumer', '--yes'], {
      AWS_ENDPOINT_URL_SQS: endpoint,
      AWS_ENDPOINT_URL_LAMBDA: lambda.url,
    });

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('(orders-3@17)');
    expect(run.stdout).toContain('lambda:orders-consumer');
    expect(invoked).toHaveLength(1);
    const record = invoked[0]!.records['orders-3']![0]!;
    expect(record).toMatchObject({ topic: 'orders', partition: 3, offset: 17, timestamp: produced });
    expect(Buffer.from(record.value!, 'base64').toString('utf8')).toBe(eventBody('k-1'));
    expect(record.headers).toContainEqual({ 'ic.redrive': [...Buffer.from('orders-3@17')] });
    expect(await visibleCount(sqs, dlq.url)).toBe(0);
  });

  it('keeps it in the DLQ when the function reports it for a retry (exit code 1)', async () => {
    const dlq = await kafkaDlq('kafka-retry');
    reply = { batchItemFailures: [{ itemIdentifier: { partition: 'orders-3', offset: 17 } }] };

    const run = await runInProcess(
      ['dlq', 'redrive', '--queue-url', dlq.url, '--no-dlq-check', '--function', 'orders-consumer', '--yes', '--json'],
      { AWS_ENDPOINT_URL_SQS: endpoint, AWS_ENDPOINT_URL_LAMBDA: lambda.url },
    );

    expect(run.code).toBe(1);
    expect((JSON.parse(run.stdout) as { failed: { detail: string }[] }).failed[0]?.detail).toContain('retry');
    expect(await visibleCount(sqs, dlq.url)).toBe(1);
  });
});

describe('dlq list of Kafka dead letters and Kafka on-failure records', () => {
  it("names a dead letter's coordinates, and what a metadata-only on-failure record gave up", async () => {
    const dlq = await kafkaDlq('kafka-list');
    const metadataOnly = {
      requestContext: {
        requestId: 'r',
        functionArn: 'arn:aws:lambda:us-east-1:0:function:f',
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: 5,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
      version: '1.0',
      timestamp: new Date(produced).toISOString(),
      KafkaBatchInfo: {
        batchSize: 4,
        eventSourceArn: clusterArn,
        bootstrapServers: 'b-1:9092',
        payloadSize: 900,
        recordsInfo: {
          'orders-0': { firstRecordOffset: '12', lastRecordOffset: '15', firstRecordTimestamp: 'x', lastRecordTimestamp: 'y' },
        },
      },
    };
    await sqs.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: JSON.stringify(metadataOnly) }));

    const result = await listDeadLetters({ sqs }, { queueUrl: dlq.url, dlqCheck: false, waitTimeSeconds: 0, visibilityTimeoutSeconds: 30 });

    const kafka = result.groups.flatMap((group) => group.messages.map((m) => [group.reason, m.kafka]));
    expect(kafka.sort()).toEqual([
      ['BusinessRuleViolation', 'orders-3@17'],
      ['none', 'gave up orders-0@12..15 (RetryAttemptsExhausted), metadata only'],
    ]);
    expect(formatList(result)).toContain('orders-3@17');
  });
});

describe('dlq list and redrive --on-failure-bucket', () => {
  it('lists the records an S3 on-failure destination kept whole, and redrives them by Invoke', async () => {
    const { s3 } = s3For(endpoint);
    const write = await createS3OnFailureDestination({ s3, bucket: 'give-ups-cli' });
    const value = Buffer.from(eventBody('s-1')).toString('base64');
    const event: KafkaEvent = {
      eventSource: 'aws:kafka',
      eventSourceArn: clusterArn,
      bootstrapServers: 'b-1:9092',
      records: {
        // The batch held a record of another partition, which succeeded: it is not redriven.
        'orders-0': [{ topic: 'orders', partition: 0, offset: 4, timestamp: produced, timestampType: 'CREATE_TIME', value, headers: [] }],
        'orders-1': [{ topic: 'orders', partition: 1, offset: 9, timestamp: produced, timestampType: 'CREATE_TIME', value, headers: [] }],
      },
    };
    await write(
      {
        requestContext: {
          requestId: 'r-1',
          functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:orders-consumer',
          condition: 'RetryAttemptsExhausted',
          approximateInvokeCount: 3,
        },
        responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
        version: '1.0',
        timestamp: new Date(produced).toISOString(),
        KafkaBatchInfo: {
          batchSize: 1,
          eventSourceArn: clusterArn,
          bootstrapServers: 'b-1:9092',
          payloadSize: 500,
          recordsInfo: {
            'orders-1': {
              firstRecordOffset: '9',
              lastRecordOffset: '9',
              firstRecordTimestamp: new Date(produced).toISOString(),
              lastRecordTimestamp: new Date(produced).toISOString(),
            },
          },
        },
      },
      event,
    );
    s3.destroy();
    invoked.length = 0;
    reply = { batchItemFailures: [] };
    const env = { AWS_ENDPOINT_URL_LAMBDA: lambda.url };

    const list = await runInProcess(['dlq', 'list', '--on-failure-bucket', 's3://give-ups-cli', '--endpoint', endpoint], env);
    const redrive = await runInProcess(
      ['dlq', 'redrive', '--on-failure-bucket', 's3://give-ups-cli', '--endpoint', endpoint, '--function', 'orders-consumer', '--yes'],
      env,
    );
    const after = await runInProcess(['dlq', 'list', '--on-failure-bucket', 's3://give-ups-cli', '--endpoint', endpoint, '--json'], env);

    expect(list.code).toBe(0);
    expect(list.stdout).toContain('RetryAttemptsExhausted (Unhandled), 3 invocation(s)');
    expect(list.stdout).toContain('orders-1@9..9: 1 record(s) kept whole');
    expect(redrive.code).toBe(0);
    expect(redrive.stdout).toContain('1 object(s) acknowledged and deleted');
    expect(invoked).toHaveLength(1);
    expect(Object.keys(invoked[0]!.records)).toEqual(['orders-1']);
    expect(invoked[0]!.records['orders-1']![0]!.headers).toEqual([]);
    expect((JSON.parse(after.stdout) as { entries: unknown[] }).entries).toEqual([]);
  });
});
