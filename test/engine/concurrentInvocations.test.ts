/**
 * Many invocations in one process (issue 18, Lambda Managed Instances): one handler instance
 * serves 16 invocations at once, as a Node.js 22+ process on a capacity provider does, with
 * deadlines that differ, batches whose ordering keys overlap, copies of one message in two
 * invocations, and a side effect per message, against DynamoDB Local and the SQS server.
 *
 * What each invocation owns must stay its own: a side effect's lock (Powertools' in-progress
 * record) expires at the deadline of the invocation that runs it, and the effect's
 * `remainingTimeMs()` is that invocation's. What they share (the item cache, the tables) must
 * still give each message exactly one effect on the state. An `AsyncLocalStorage` of the test
 * tags each invocation, so the effect can say which invocation ran it.
 *
 * The second test runs them as Lambda Managed Instances do: `AWS_LAMBDA_MAX_CONCURRENCY` set and
 * each invocation in Lambda's per-invocation store (as the local runtime and Lambda's Node.js
 * runtime run them), SQS and Kafka batches mixed, and checks what each invocation logs and
 * publishes as metrics: its own request id on every line, only its own messages, and metrics
 * that count its own outcomes (Powertools Logger and Metrics keep that state per invocation in
 * the store; shared, one invocation's flush would carry another's counts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSRecord } from 'aws-lambda';
import {
  createIdempotentConsumer,
  type IdempotentConsumerOptions,
  type SideEffectContext,
  type TableDefinition,
} from 'idempotent-consumer';
import type { KafkaBatchResponse, KafkaEvent, KafkaRecord } from 'idempotent-consumer/kafka';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { newTraceHeader, runInInvocationStore } from '../../packages/local/src/lambdaInvokeStore.js';
import { consumerEnvironment, idempotencyRecords, inboxRowOf, sourceRecord, storedItem } from '../support/consumerHarness.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a consumer with a table of its own and a side effect that reports which invocation ran it');

const Deposit = z.object({ eventId: z.string().min(1), accountId: z.string().min(1), amount: z.number().int().positive() });
type Deposit = z.infer<typeof Deposit>;
const tables = { accounts: { partitionKey: 'accountId' } } as const satisfies Record<string, TableDefinition>;

const INVOCATIONS = 16;
const ACCOUNTS = 6;
const PER_BATCH = 5;

/** Which invocation of the test is running (its index), through every await of the engine. */
const invocation = new AsyncLocalStorage<number>();

interface EffectRun {
  readonly invocation: number;
  readonly effectKey: string;
  readonly remainingMs: number;
  readonly at: number;
}

function depositConsumer(runs: EffectRun[]) {
  const sideEffects = {
    notify: async (_input: { accountId: string }, context: SideEffectContext<'accounts'>) => {
      runs.push({
        invocation: invocation.getStore() ?? -1,
        effectKey: context.effectKey,
        remainingMs: context.remainingTimeMs(),
        at: Date.now(),
      });
      // Let the other invocations interleave here.
      await new Promise((resolve) => setTimeout(resolve, 5));
    },
  };
  const options: IdempotentConsumerOptions<Deposit, keyof typeof tables, typeof sideEffects> = {
    schema: Deposit,
    idempotencyKey: 'eventId',
    orderingKey: 'accountId',
    tables,
    read: (event) => [{ table: 'accounts', key: { accountId: event.accountId } }],
    decide: (event, state) => {
      const account = state.get<{ accountId: string; balance: number }>('accounts', { accountId: event.accountId });
      return {
        writes: [{ Put: { TableName: 'accounts', Item: { accountId: event.accountId, balance: (account?.balance ?? 0) + event.amount } } }],
        sideEffects: [{ name: 'notify', input: { accountId: event.accountId } }],
      };
    },
    sideEffects,
  };
  return options;
}

describe('one handler instance serving 16 invocations at once', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('concurrent-invocations', tables, { consumerName: 'deposits' });
  });
  afterAll(() => env?.dispose());

  it('applies each message once, and each side effect locks until, and reads the clock of, the invocation that runs it', async () => {
    // Arrange: 16 batches of 5 deposits over 6 accounts; invocation i's last message is a copy of
    // invocation i−1's first (the same message in two invocations at once).
    const runs: EffectRun[] = [];
    const { handler } = consumerEnvironment(env, depositConsumer(runs));
    const deposits: Deposit[] = [];
    const batches: SQSRecord[][] = [];
    for (let i = 0; i < INVOCATIONS; i += 1) {
      const batch: SQSRecord[] = [];
      for (let j = 0; j < PER_BATCH - 1; j += 1) {
        const deposit = { eventId: `d-${i}-${j}`, accountId: `a-${(i + j) % ACCOUNTS}`, amount: 1 + ((i * PER_BATCH + j) % 7) };
        deposits.push(deposit);
        batch.push(sourceRecord(env, `m-${i}-${j}`, deposit));
      }
      const copied = i === 0 ? deposits[deposits.length - 1]! : deposits[(i - 1) * (PER_BATCH - 1)]!;
      batch.push(sourceRecord(env, `m-${i}-copy`, copied));
      batches.push(batch);
    }
    // Deadlines 60 s to 135 s away, 5 s apart: an invocation that took another's would be seen.
    const deadlines = batches.map((_, i) => Date.now() + 60_000 + i * 5_000);
    const contextOf = (i: number) => lambdaContext(deadlines[i]! - Date.now());

    // Act: all at once; what is reported comes back, as SQS would redeliver it, until none is.
    let pending = batches.map((records, i) => ({ i, records }));
    for (let round = 1; pending.length > 0 && round <= 10; round += 1) {
      const responses = await Promise.all(
        pending.map(({ i, records }) => invocation.run(i, () => handler(sqsEvent(...records), contextOf(i)) as Promise<SQSBatchResponse>)),
      );
      pending = pending
        .map(({ i, records }, k) => {
          const failed = new Set(responses[k]!.batchItemFailures.map((failure) => failure.itemIdentifier));
          return {
            i,
            records: records
              .filter((record) => failed.has(record.messageId))
              .map((record) => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(round + 1) } })),
          };
        })
        .filter(({ records }) => records.length > 0);
    }

    // Assert: every batch settled; each account holds the sum of its deposits, each deposit once.
    expect(pending).toEqual([]);
    for (let a = 0; a < ACCOUNTS; a += 1) {
      const accountId = `a-${a}`;
      const expected = deposits.filter((d) => d.accountId === accountId).reduce((sum, d) => sum + d.amount, 0);
      expect((await storedItem<{ balance: number }>(env, 'accounts', { accountId }))?.balance, accountId).toBe(expected);
    }
    for (const deposit of deposits) expect((await inboxRowOf(env, deposit.eventId))?.status, deposit.eventId).toBe('applied');

    // Each effect ran once, in a known invocation, reading that invocation's own clock.
    const byKey = new Map<string, EffectRun[]>();
    for (const run of runs) byKey.set(run.effectKey, [...(byKey.get(run.effectKey) ?? []), run]);
    expect(byKey.size).toBe(deposits.length);
    for (const [effectKey, ofKey] of byKey) {
      expect(ofKey, effectKey).toHaveLength(1);
      const run = ofKey[0]!;
      expect(run.invocation, effectKey).toBeGreaterThanOrEqual(0);
      expect(Math.abs(run.remainingMs - (deadlines[run.invocation]! - run.at)), effectKey).toBeLessThan(1_000);
    }

    // Each effect's lock expired at the deadline of the invocation that ran it (Powertools writes
    // `in_progress_expiration` = now + the context's remaining time, in milliseconds).
    const ranIn = new Map([...byKey].map(([effectKey, [run]]) => [effectKey, run!.invocation]));
    const records = await idempotencyRecords(env);
    expect(records).toHaveLength(deposits.length);
    const invocationsOfRecords = new Set<number>();
    for (const record of records) {
      const expiry = Number(record.in_progress_expiration);
      const nearest = deadlines.reduce(
        (best, deadline, i) => (Math.abs(deadline - expiry) < Math.abs(deadlines[best]! - expiry) ? i : best),
        0,
      );
      expect(Math.abs(deadlines[nearest]! - expiry), String(record.id)).toBeLessThan(1_000);
      invocationsOfRecords.add(nearest);
    }
    // The records' deadlines are the invocations' that ran effects, not one invocation's for all.
    expect(invocationsOfRecords).toEqual(new Set(ranIn.values()));
  });
  it('runs them as Lambda Managed Instances do (one store per invocation, SQS and Kafka mixed): exactly once, and each invocation logs and counts only its own', async () => {
    // Arrange: Lambda Managed Instances set AWS_LAMBDA_MAX_CONCURRENCY; the logs and metrics are on.
    // The logger and metrics are made first, as a module's top level makes them at init.
    const saved = {
      AWS_LAMBDA_MAX_CONCURRENCY: process.env.AWS_LAMBDA_MAX_CONCURRENCY,
      POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL,
      POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED,
    };
    process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const logger = new Logger({ serviceName: 'deposits' });
    const metrics = new Metrics({ namespace: 'ConcurrentInvocationsTest', serviceName: 'deposits' });
    process.env.AWS_LAMBDA_MAX_CONCURRENCY = String(INVOCATIONS);
    // Every JSON line the process writes (INFO on standard output, WARN and ERROR on standard
    // error), with the invocation (of this test) whose code wrote it.
    const written: { invocation: number; line: string }[] = [];
    const streams = [process.stdout, process.stderr] as const;
    const writes = streams.map((stream) => stream.write.bind(stream));
    streams.forEach((stream, k) => {
      stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
        if (!text.startsWith('{')) return writes[k]!(chunk, ...(rest as []));
        for (const line of text.split('\n').filter((l) => l !== '')) written.push({ invocation: invocation.getStore() ?? -1, line });
        const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }) as typeof stream.write;
    });
    try {
      const runs: EffectRun[] = [];
      const handler = createIdempotentConsumer(depositConsumer(runs), {
        environment: env.environment,
        clients: { dynamoDb: env.dynamoDb, sqs: env.sqs, s3: env.s3 },
        logger,
        metrics,
      });

      // 16 invocations: even ones SQS batches, odd ones Kafka batches (a partition each), over 4
      // accounts shared by both; each Kafka batch carries a copy of an SQS message's event.
      const deposits: Deposit[] = [];
      type Batch = { readonly kind: 'sqs'; records: SQSRecord[] } | { readonly kind: 'kafka'; records: KafkaRecord[] };
      const batches: Batch[] = [];
      for (let i = 0; i < INVOCATIONS; i += 1) {
        const fresh: Deposit[] = [];
        for (let j = 0; j < PER_BATCH - 1; j += 1) {
          const deposit = { eventId: `mi-${i}-${j}`, accountId: `mi-a-${(i + j) % 4}`, amount: 1 + ((i * PER_BATCH + j) % 5) };
          deposits.push(deposit);
          fresh.push(deposit);
        }
        if (i % 2 === 0) {
          batches.push({ kind: 'sqs', records: fresh.map((deposit, j) => sourceRecord(env, `mi-m-${i}-${j}`, deposit)) });
        } else {
          const copied = deposits[(i - 1) * (PER_BATCH - 1)]!;
          const records = [...fresh, copied].map((deposit, j) => kafkaRecord('deposits', i, 100 + j, deposit, { key: deposit.accountId }));
          batches.push({ kind: 'kafka', records });
        }
      }
      const deadlines = batches.map((_, i) => Date.now() + 60_000 + i * 5_000);
      const requestIds = new Map<string, number>();
      const contextOf = (i: number): Context => {
        const context = lambdaContext(deadlines[i]! - Date.now());
        requestIds.set(context.awsRequestId, i);
        return context;
      };
      const messageIdsOf = (batch: Batch): string[] =>
        batch.kind === 'sqs' ? batch.records.map((r) => r.messageId) : batch.records.map((r) => `${r.topic}-${r.partition}@${r.offset}`);
      const allMessageIds = batches.map((batch) => new Set(messageIdsOf(batch)));

      // Act: all at once, each in Lambda's per-invocation store; failures come back, as the mapping
      // would send them again (SQS: the failed messages; Kafka: the partition from its lowest failure).
      let pending = batches.map((batch, i) => ({ i, batch }));
      for (let round = 1; pending.length > 0 && round <= 10; round += 1) {
        const responses = await Promise.all(
          pending.map(({ i, batch }) =>
            invocation.run(i, () => {
              const context = contextOf(i);
              const event = batch.kind === 'sqs' ? sqsEvent(...batch.records) : mskEvent(...batch.records);
              return runInInvocationStore(context.awsRequestId, newTraceHeader(), () => handler(event as KafkaEvent, context));
            }),
          ),
        );
        pending = pending
          .map(({ i, batch }, k): { i: number; batch: Batch } => {
            const response = responses[k]!;
            if (batch.kind === 'sqs') {
              const failed = new Set((response as SQSBatchResponse).batchItemFailures.map((f) => f.itemIdentifier));
              return {
                i,
                batch: {
                  kind: 'sqs',
                  records: batch.records
                    .filter((r) => failed.has(r.messageId))
                    .map((r) => ({ ...r, attributes: { ...r.attributes, ApproximateReceiveCount: String(round + 1) } })),
                },
              };
            }
            const failures = (response as KafkaBatchResponse).batchItemFailures;
            const lowest = Math.min(...failures.map((f) => f.itemIdentifier.offset));
            return { i, batch: { kind: 'kafka', records: batch.records.filter((r) => r.offset >= lowest) } };
          })
          .filter(({ batch }) => batch.records.length > 0);
      }

      // Assert: every batch settled, none dead-lettered, each deposit applied once (the copies
      // acknowledged as duplicates).
      expect(pending).toEqual([]);
      const deadLettered = written
        .map(({ line }) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.outcome === 'dead-lettered' || entry.outcome === 'retried')
        .map((entry) => `${entry.messageId} ${entry.outcome} ${entry.attempt} ${entry.reason} ${entry.errorType}`);
      expect(
        deadLettered.filter((line) => line.includes('dead-lettered')),
        deadLettered.join('\n'),
      ).toEqual([]);
      for (let a = 0; a < 4; a += 1) {
        const accountId = `mi-a-${a}`;
        const expected = deposits.filter((d) => d.accountId === accountId).reduce((sum, d) => sum + d.amount, 0);
        expect((await storedItem<{ balance: number }>(env, 'accounts', { accountId }))?.balance, accountId).toBe(expected);
      }
      for (const deposit of deposits) expect((await inboxRowOf(env, deposit.eventId))?.status, deposit.eventId).toBe('applied');
      expect(new Set(runs.map((run) => run.effectKey)).size).toBe(deposits.length);

      // Each invocation's log lines carry its own request id and only its own messages.
      const logs = written.map(({ invocation: i, line }) => ({ i, entry: JSON.parse(line) as Record<string, unknown> }));
      const outcomeLines = logs.filter(({ entry }) => typeof entry.outcome === 'string');
      expect(outcomeLines.length).toBeGreaterThanOrEqual(deposits.length + INVOCATIONS / 2);
      for (const { i, entry } of outcomeLines) {
        expect(i, JSON.stringify(entry)).toBeGreaterThanOrEqual(0);
        expect(requestIds.get(String(entry.function_request_id)), JSON.stringify(entry)).toBe(i);
        expect(allMessageIds[i]!.has(String(entry.messageId)), JSON.stringify(entry)).toBe(true);
      }
      const applied = outcomeLines.filter(({ entry }) => entry.outcome === 'applied').map(({ entry }) => entry.idempotencyKey);
      expect(applied.sort()).toEqual(deposits.map((d) => d.eventId).sort());

      // Each invocation's metrics count its own outcomes, once: per invocation, the EMF blobs it
      // wrote add up to the outcome lines it wrote, metric by metric.
      const metricOf: Record<string, string> = {
        applied: 'MessagesApplied',
        duplicate: 'DuplicatesAcknowledged',
        retried: 'RetryableFailures',
        'dead-lettered': 'DeadLettered',
      };
      const blobs = logs.filter(({ entry }) => entry._aws !== undefined);
      expect(blobs.length).toBeGreaterThan(0);
      for (let i = 0; i < INVOCATIONS; i += 1) {
        const counted: Record<string, number> = {};
        for (const { entry } of blobs.filter((b) => b.i === i)) {
          const dimensions = (entry._aws as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics[0]!.Dimensions.flat();
          if (dimensions.includes('FailureReason')) continue; // the dead letters by reason, counted again on purpose
          for (const name of Object.values(metricOf)) {
            const value = entry[name] as number | number[] | undefined;
            if (value !== undefined)
              counted[name] = (counted[name] ?? 0) + (Array.isArray(value) ? value.reduce((a, b) => a + b, 0) : value);
          }
        }
        const expected: Record<string, number> = {};
        for (const { entry } of outcomeLines.filter((line) => line.i === i)) {
          const name = metricOf[String(entry.outcome)]!;
          expected[name] = (expected[name] ?? 0) + 1;
        }
        expect(counted, `invocation ${i}`).toEqual(expected);
      }
      expect(blobs.every(({ i }) => i >= 0)).toBe(true);
    } finally {
      streams.forEach((stream, k) => {
        stream.write = writes[k]!;
      });
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
