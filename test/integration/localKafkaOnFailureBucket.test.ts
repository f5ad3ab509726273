/**
 * `runLocal` with `kafkaOnFailureBucket`: a batch the local Kafka mapping gives up on (every
 * DynamoDB call fails, so the function never settles the record) is written whole to a bucket of
 * the embedded S3 server, as Lambda writes it to an S3 on-failure destination.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { handler } from '../../examples/inventory/handler.js';
import { readKafkaOnFailureRecord } from '../../packages/idempotent-consumer/src/dlq/kafkaOnFailureRecord.js';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { localClientConfig } from '../../packages/local/src/localClientConfig.js';
import { runLocal } from '../../packages/local/src/runLocal.js';

describe('runLocal with kafkaOnFailureBucket', () => {
  it('keeps the batch the mapping gave up on whole in the bucket', async () => {
    const settings = withOverrides({
      consumerName: 'inventory-give-ups',
      kafka: { topic: 'inventory', batchSize: 1 },
      retry: { maxAttempts: 1 },
    });
    const body = JSON.stringify({ requestId: 'g-1', kind: 'StockReceived', sku: 'SKU-G', quantity: 2, at: '2026-03-01T09:00:00.000Z' });
    let objects: { key: string; text: string }[] = [];

    const result = await runLocal({
      handler,
      settings,
      source: 'kafka',
      partitions: 1,
      relay: false,
      input: [{ line: 1, body }],
      faults: { rates: { 'dynamodb-5xx': 1 }, seed: 7 },
      kafkaOnFailureBucket: 'give-ups',
      timeoutMs: 120_000,
      onReport: async (_result, running) => {
        const s3 = new S3Client({ ...localClientConfig(running.sqsEndpoint), forcePathStyle: true });
        try {
          const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'give-ups' }));
          objects = await Promise.all(
            (listed.Contents ?? []).map(async ({ Key }) => ({
              key: Key!,
              text: (await (await s3.send(new GetObjectCommand({ Bucket: 'give-ups', Key: Key! }))).Body?.transformToString()) ?? '',
            })),
          );
        } finally {
          s3.destroy();
        }
      },
    });

    expect(result.report.check.ok).toBe(false); // the record was never applied: the check says so
    expect(objects).toHaveLength(1);
    expect(objects[0]!.key).toMatch(/^aws\/lambda\/[0-9a-f-]+\/inventory-0\//);
    const { record, event } = readKafkaOnFailureRecord(objects[0]!.text);
    expect(record.requestContext.condition).toBe('RetryAttemptsExhausted');
    expect(record.KafkaBatchInfo.recordsInfo['inventory-0']).toMatchObject({ firstRecordOffset: '0', lastRecordOffset: '0' });
    expect(Buffer.from(event!.records['inventory-0']![0]!.value!, 'base64').toString('utf8')).toBe(body);
  }, 240_000);
});
