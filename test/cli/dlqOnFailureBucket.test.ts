/**
 * The Kafka mapping's S3 on-failure destination, kept whole: the local mapping writes Lambda's S3
 * invocation record (the last event in `payload`) to a bucket of the embedded S3 server, and the
 * DLQ tool lists those records and redrives their records by invoking the function (served by the
 * local Lambda `Invoke` endpoint), deleting each object once acknowledged.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readKafkaOnFailureRecord } from '../../packages/idempotent-consumer/src/dlq/kafkaOnFailureRecord.js';
import type { KafkaEvent } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import { createFunctionInvoker } from '../../packages/cli/src/dlq/functionInvoker.js';
import {
  createOnFailureBucketStore,
  formatOnFailureList,
  listOnFailureRecords,
  parseBucketLocation,
  redriveOnFailureRecords,
} from '../../packages/cli/src/dlq/onFailureBucket.js';
import { KafkaEventSourcePoller } from '../../packages/local/src/kafka/KafkaEventSourcePoller.js';
import { PartitionedLog } from '../../packages/local/src/kafka/PartitionedLog.js';
import { startLocalKafkaFunction, type LocalFunctionEndpoint } from '../../packages/local/src/kafka/localFunctionEndpoint.js';
import { createS3OnFailureDestination } from '../../packages/local/src/kafka/s3OnFailureDestination.js';
import { s3For, startSqs, type FauxqsServer } from './dlqFixtures.js';

let server: FauxqsServer;
let endpoint: string;
let s3: S3Client;

beforeAll(async () => {
  ({ server, endpoint } = await startSqs());
  ({ s3 } = s3For(endpoint));
});

afterAll(async () => {
  s3.destroy();
  await server.stop();
});

/** A Kafka handler that fails every record of `poison` partitions' values while `down`, and records what it received. */
function flakyHandler(state: { down: boolean; received: string[] }) {
  return (event: KafkaEvent, _context: Context) => {
    const values = Object.values(event.records).flatMap((group) => group.map((r) => Buffer.from(r.value ?? '', 'base64').toString('utf8')));
    if (state.down && values.some((v) => v.includes('poison'))) throw new Error('downstream is down');
    state.received.push(...values);
    return { batchItemFailures: [] };
  };
}

describe('the local Kafka mapping with an S3 on-failure destination', () => {
  it('keeps a batch given up whole, and the DLQ tool lists it and redrives it by Invoke', async () => {
    const bucket = 'kafka-give-ups';
    const state = { down: true, received: [] as string[] };
    const log = new PartitionedLog({ topic: 'orders', partitions: 1 });
    log.append({ key: 'k-1', value: '{"n":1}' });
    log.append({ key: 'k-2', value: '{"n":2,"poison":true}', headers: [{ name: 'trace', value: Buffer.from('t-2') }] });
    const write = await createS3OnFailureDestination({ s3, bucket });
    const keys: string[] = [];
    const poller = new KafkaEventSourcePoller({
      log,
      batchSize: 10,
      retryAttempts: 1,
      functionTimeoutSeconds: 10,
      createHandler: () => flakyHandler(state),
      onFailure: async (record, event) => {
        keys.push(await write(record, event));
      },
    });

    await poller.runUntilIdle({ timeoutMs: 60_000 });

    // One object: the metadata, and the whole last event in payload, as escaped JSON text.
    expect(keys).toHaveLength(1);
    const listedKeys = (await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents?.map((o) => o.Key);
    expect(listedKeys).toEqual(keys);
    expect(keys[0]).toMatch(
      /^aws\/lambda\/[0-9a-f-]{36}\/orders-0\/\d{4}\/\d{2}\/\d{2}\/\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}-[0-9a-f-]{36}$/,
    );

    const store = createOnFailureBucketStore({ endpoint, env: {} });
    const location = parseBucketLocation(`s3://${bucket}/aws/lambda/`);
    const raw = readKafkaOnFailureRecord(await store.get(bucket, keys[0]!));
    expect(typeof (JSON.parse(await store.get(bucket, keys[0]!)) as { payload: unknown }).payload).toBe('string');
    expect(raw.record).toMatchObject({
      requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 2 },
      responseContext: { functionError: 'Unhandled' },
      KafkaBatchInfo: { batchSize: 2, recordsInfo: { 'orders-0': { firstRecordOffset: '0', lastRecordOffset: '1' } } },
    });
    expect(raw.event?.records['orders-0']?.[1]?.headers).toEqual([{ trace: [...Buffer.from('t-2')] }]);

    const listed = await listOnFailureRecords(store, location);
    expect(listed.entries).toEqual([
      expect.objectContaining({ key: keys[0], condition: 'RetryAttemptsExhausted', functionError: 'Unhandled', records: 2 }),
    ]);
    expect(formatOnFailureList(listed)).toContain('orders-0@0..1: 2 record(s) kept whole');

    // The downstream recovers; the records are redriven through the function's Invoke endpoint.
    state.down = false;
    let function_: LocalFunctionEndpoint | undefined;
    try {
      function_ = await startLocalKafkaFunction({
        functionName: 'orders-consumer',
        functionTimeoutSeconds: 10,
        memorySizeMb: 128,
        createHandler: () => flakyHandler(state),
      });
      const invoker = createFunctionInvoker({
        connection: { endpoint: undefined, region: 'us-east-1', dummyCredentials: true },
        env: { AWS_ENDPOINT_URL_LAMBDA: function_.url },
      });
      const dryRun = await redriveOnFailureRecords(store, invoker, { location, functionName: 'orders-consumer', dryRun: true });
      expect(dryRun.redriven.map((item) => item.coordinates)).toEqual([['orders-0@0..1']]);
      expect(state.received).toEqual([]);

      const redriven = await redriveOnFailureRecords(store, invoker, { location, functionName: 'orders-consumer', yes: true });

      expect(redriven.failed).toEqual([]);
      expect(redriven.redriven).toEqual([expect.objectContaining({ key: keys[0], records: 2 })]);
      expect(state.received).toEqual(['{"n":1}', '{"n":2,"poison":true}']);
      expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).toEqual([]);
    } finally {
      await function_?.stop();
    }
  }, 120_000);

  it('keeps the object when the function still fails, and stops there', async () => {
    const bucket = 'kafka-give-ups-2';
    const state = { down: true, received: [] as string[] };
    const log = new PartitionedLog({ topic: 'orders', partitions: 1 });
    log.append({ key: 'k', value: '{"poison":1}' });
    const write = await createS3OnFailureDestination({ s3, bucket });
    const poller = new KafkaEventSourcePoller({
      log,
      retryAttempts: 0,
      createHandler: () => flakyHandler(state),
      onFailure: async (record, event) => {
        await write(record, event);
      },
    });
    await poller.runUntilIdle({ timeoutMs: 60_000 });
    const store = createOnFailureBucketStore({ endpoint, env: {} });
    const function_ = await startLocalKafkaFunction({
      functionName: 'orders-consumer',
      functionTimeoutSeconds: 10,
      memorySizeMb: 128,
      createHandler: () => flakyHandler(state),
    });
    try {
      const invoker = createFunctionInvoker({
        connection: { endpoint: undefined, region: 'us-east-1', dummyCredentials: true },
        env: { AWS_ENDPOINT_URL_LAMBDA: function_.url },
      });

      const result = await redriveOnFailureRecords(store, invoker, {
        location: { bucket, prefix: '' },
        functionName: 'orders-consumer',
        yes: true,
      });

      expect(result.redriven).toEqual([]);
      expect(result.failed).toEqual([expect.objectContaining({ detail: 'the function failed (Unhandled): Error: downstream is down' })]);
      expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents).toHaveLength(1);
    } finally {
      await function_.stop();
    }
  }, 120_000);
});
