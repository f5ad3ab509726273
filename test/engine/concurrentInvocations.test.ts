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
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { IdempotentConsumerOptions, SideEffectContext, TableDefinition } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { consumerEnvironment, idempotencyRecords, inboxRowOf, sourceRecord, storedItem } from '../support/consumerHarness.js';
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
});
