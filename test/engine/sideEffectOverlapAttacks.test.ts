/**
 * Adversarial tests of the overlapped side-effect guard (b88e238): the lock taken while the
 * commit's conditions are checked (the gate), the completion record written beside the commit.
 * On a consumer of their own (a user's activity, a claim with a condition of the user's own, a
 * `grant` effect with an optional chosen key), against DynamoDB Local, with a hooked client that
 * delays or refuses chosen requests. Expected values are what the design promises.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { IdempotentConsumerOptions, SideEffectContext, TableDefinition, Write } from 'idempotent-consumer';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { hookedDynamoDb } from '../support/hookedDynamoDb.js';
import { consumerEnvironment, idempotencyRecords, outcomeList, sourceRecord, storedItem } from '../support/consumerHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';
import { waitFor } from '../support/waitFor.js';

const describe = describeUnlessDeployedStack('a consumer with tables of its own and assertions over the guard table');

const id = z.string().min(1).max(128);
const Activity = z.object({
  eventId: id,
  userId: id,
  /** A claim written with attribute_not_exists: refused when the claim is taken. */
  claim: z.string().optional(),
  /** A chosen effect key. */
  key: z.string().optional(),
  /** How long the effect takes, in ms. */
  effectMs: z.number().optional(),
});
type Activity = z.infer<typeof Activity>;
const tables = {
  users: { partitionKey: 'userId' },
  claims: { partitionKey: 'claimId' },
} as const satisfies Record<string, TableDefinition>;

interface Start {
  readonly effectKey: string;
  readonly idempotencyKey: string;
  readonly remainingMs: number;
}

/** The downstream service: every start of the effect, with the time left then. */
class Downstream {
  readonly starts: Start[] = [];
  count(effectKey?: string): number {
    return this.starts.filter((s) => effectKey === undefined || s.effectKey === effectKey).length;
  }
}

function consumer(downstream: Downstream) {
  const sideEffects = {
    grant: async (input: { userId: string; effectMs?: number }, context: SideEffectContext<'users' | 'claims'>) => {
      downstream.starts.push({
        effectKey: context.effectKey,
        idempotencyKey: context.idempotencyKey,
        remainingMs: context.remainingTimeMs(),
      });
      if (input.effectMs !== undefined) await new Promise((resolve) => setTimeout(resolve, input.effectMs));
    },
  };
  const options: IdempotentConsumerOptions<Activity, keyof typeof tables, typeof sideEffects> = {
    schema: Activity,
    idempotencyKey: 'eventId',
    orderingKey: 'eventId',
    tables,
    read: (event) => [{ table: 'users', key: { userId: event.userId } }],
    decide: (event, state) => {
      const user = state.get<{ userId: string; active: number }>('users', {
        userId: event.userId,
      });
      const writes: Write<keyof typeof tables>[] = [
        {
          Put: {
            TableName: 'users',
            Item: { userId: event.userId, active: (user?.active ?? 0) + 1 },
          },
        },
      ];
      if (event.claim !== undefined)
        writes.push({
          Put: {
            TableName: 'claims',
            Item: { claimId: event.claim, by: event.eventId },
            ConditionExpression: 'attribute_not_exists(claimId)',
          },
        });
      return {
        writes,
        sideEffects: [
          {
            name: 'grant',
            input: {
              userId: event.userId,
              ...(event.effectMs === undefined ? {} : { effectMs: event.effectMs }),
            },
            ...(event.key === undefined ? {} : { key: event.key }),
          },
        ],
      };
    },
    sideEffects,
  };
  return options;
}

const activity = (eventId: string, userId: string, extra: Partial<Activity> = {}) => ({ eventId, userId, ...extra });

/** The engine's preflight: a TransactWriteItems of ConditionChecks only. */
const isPreflight = (command: string, input: Record<string, unknown>) =>
  command === 'TransactWriteItemsCommand' &&
  ((input.TransactItems as Record<string, unknown>[] | undefined) ?? []).every((item) => item.ConditionCheck !== undefined);
const isCommit = (command: string, input: Record<string, unknown>) =>
  command === 'TransactWriteItemsCommand' && !isPreflight(command, input);
const throttling = () =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ThrottlingException',
    $retryable: {},
  });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Unhandled rejections seen while a test runs. */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

describe('the gate: an effect never runs for a message whose check fails', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('overlap-gate', tables, {
      consumerName: 'attacks',
      idempotency: { sideEffectMinRemainingMs: 50 },
    });
    await env.documentClient.send(
      new PutCommand({
        TableName: env.resources.tables.claims,
        Item: { claimId: 'taken', by: 'someone' },
      }),
    );
  });
  afterAll(() => env?.dispose());

  it('three messages sharing a chosen key, one whose claim is refused: the key runs once, never for the refused one; the lock is released', async () => {
    const downstream = new Downstream();
    const { handler, outcomes } = consumerEnvironment(env, consumer(downstream));
    const response = await handler(
      sqsEvent(
        sourceRecord(env, 'g-1', activity('g-1', 'u-1', { claim: 'c-1', key: 'K1' })),
        sourceRecord(env, 'g-2', activity('g-2', 'u-2', { claim: 'taken', key: 'K1' })),
        sourceRecord(env, 'g-3', activity('g-3', 'u-3', { key: 'K1' })),
      ),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomeList(outcomes).sort()).toEqual(['g-1:applied', 'g-2:dead-lettered', 'g-3:applied']);
    expect(outcomes.find((o) => o.messageId === 'g-2')?.reason).toBe('ConditionalWriteFailed');
    expect(downstream.count('grant#K1')).toBe(1);
    expect(downstream.starts.map((s) => s.idempotencyKey)).not.toContain('g-2');
    const records = await idempotencyRecords(env);
    expect(records.map((r) => r.status)).toEqual(['COMPLETED']);
  });

  it('a message alone whose claim is refused: no effect, no lock left; another message with the key runs it at once, in another environment', async () => {
    const downstream = new Downstream();
    const first = consumerEnvironment(env, consumer(downstream));
    const refused = await first.handler(
      sqsEvent(sourceRecord(env, 'g-4', activity('g-4', 'u-4', { claim: 'taken', key: 'K2' }))),
      lambdaContext(),
    );
    expect(refused).toEqual({ batchItemFailures: [] });
    expect(outcomeList(first.outcomes)).toEqual(['g-4:dead-lettered']);
    expect(downstream.count()).toBe(0);
    expect((await idempotencyRecords(env)).filter((r) => r.status === 'INPROGRESS')).toEqual([]);

    const second = consumerEnvironment(env, consumer(downstream));
    const response = await second.handler(sqsEvent(sourceRecord(env, 'g-5', activity('g-5', 'u-5', { key: 'K2' }))), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomeList(second.outcomes)).toEqual(['g-5:applied']);
    expect(downstream.count('grant#K2')).toBe(1);
  });

  it('a throttled check (not a cancellation): nothing runs, the lock is released, the message retried; the redelivery runs the effect once at once', async () => {
    const downstream = new Downstream();
    let throttled = 0;
    const client = hookedDynamoDb(env, (command, input) => {
      if (isPreflight(command, input) && throttled === 0) {
        throttled += 1;
        throw throttling();
      }
    });
    const first = consumerEnvironment(env, consumer(downstream), {
      dynamoDb: client,
    });
    const event = (receiveCount: number) =>
      sqsEvent(
        sourceRecord(env, 'g-6', activity('g-6', 'u-6', { claim: 'c-6' }), {
          receiveCount,
        }),
      );
    const response = await first.handler(event(1), lambdaContext());
    expect(throttled).toBe(1);
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: 'g-6' }],
    });
    expect(downstream.count()).toBe(0);
    expect((await idempotencyRecords(env)).filter((r) => r.status === 'INPROGRESS')).toEqual([]);

    const again = await first.handler(event(2), lambdaContext());
    expect(again).toEqual({ batchItemFailures: [] });
    expect(downstream.count()).toBe(1);
    expect(await storedItem(env, 'claims', { claimId: 'c-6' })).toMatchObject({
      by: 'g-6',
    });
  });

  it('two concurrent invocations, one chosen key: the second meets the lock held behind a slow check, then finds the key completed', async () => {
    const downstream = new Downstream();
    const slow = hookedDynamoDb(env, async (command, input) => {
      if (isPreflight(command, input)) await sleep(1500);
    });
    const a = consumerEnvironment(env, consumer(downstream), {
      dynamoDb: slow,
    });
    const b = consumerEnvironment(env, consumer(downstream));
    const first = a.handler(sqsEvent(sourceRecord(env, 'g-7', activity('g-7', 'u-7', { claim: 'c-7', key: 'K3' }))), lambdaContext(10_000));
    await waitFor(async () => ((await idempotencyRecords(env)).some((r) => r.status === 'INPROGRESS') ? true : undefined), {
      timeoutMs: 5000,
      what: 'the lock behind the gate',
    });
    const second = await b.handler(sqsEvent(sourceRecord(env, 'g-8', activity('g-8', 'u-8', { key: 'K3' }))), lambdaContext());
    expect(second).toEqual({ batchItemFailures: [{ itemIdentifier: 'g-8' }] });
    expect(b.outcomes.at(-1)).toMatchObject({
      outcome: 'retried',
      countsAsAttempt: false,
      errorType: 'NotAttempted',
    });
    expect(await first).toEqual({ batchItemFailures: [] });
    const redelivered = await b.handler(
      sqsEvent(
        sourceRecord(env, 'g-8', activity('g-8', 'u-8', { key: 'K3' }), {
          receiveCount: 2,
        }),
      ),
      lambdaContext(),
    );
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(downstream.count('grant#K3')).toBe(1);
  });
});

describe('the gate: a refusal whose lock release fails', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('overlap-release', tables, {
      consumerName: 'attacks',
      idempotency: { sideEffectMinRemainingMs: 50 },
    });
    await env.documentClient.send(
      new PutCommand({
        TableName: env.resources.tables.claims,
        Item: { claimId: 'taken', by: 'someone' },
      }),
    );
  });
  afterAll(() => env?.dispose());

  it('a refused round whose first lock release fails: the runner deletes the lock once more, and the innocent messages are applied in the same invocation', async () => {
    const downstream = new Downstream();
    /** The lock ids whose first delete was refused. */
    const refusedOnce = new Set<string>();
    let deletes = 0;
    const client = hookedDynamoDb(env, (command, input) => {
      if (command === 'DeleteItemCommand' && input.TableName === env.resources.idempotencyTable) {
        deletes += 1;
        const id = JSON.stringify(input.Key);
        if (!refusedOnce.has(id)) {
          refusedOnce.add(id);
          throw throttling();
        }
      }
    });
    const { handler, outcomes } = consumerEnvironment(env, consumer(downstream), { dynamoDb: client });
    const response = await handler(
      sqsEvent(
        sourceRecord(env, 'g-9', activity('g-9', 'u-9', { claim: 'taken' })),
        sourceRecord(env, 'g-10', activity('g-10', 'u-10')),
        sourceRecord(env, 'g-11', activity('g-11', 'u-11', { claim: 'c-11' })),
      ),
      lambdaContext(),
    );
    // Each lock of the refused round: Powertools' delete (refused), then the runner's own.
    expect(refusedOnce.size).toBeGreaterThan(0);
    expect(deletes).toBe(2 * refusedOnce.size);
    expect(downstream.starts.map((s) => s.idempotencyKey)).not.toContain('g-9');
    expect(outcomeList(outcomes).sort()).toEqual(['g-10:applied', 'g-11:applied', 'g-9:dead-lettered']);
    expect(response).toEqual({ batchItemFailures: [] });
  });

  it('a refused round whose lock releases all fail: the innocent messages are retried without counting an attempt, no effect runs twice or for the refused message', async () => {
    const downstream = new Downstream();
    let deletesRefused = 0;
    const client = hookedDynamoDb(env, (command, input) => {
      if (command === 'DeleteItemCommand' && input.TableName === env.resources.idempotencyTable) {
        deletesRefused += 1;
        throw throttling();
      }
    });
    const { handler, outcomes } = consumerEnvironment(env, consumer(downstream), { dynamoDb: client });
    const response = await handler(
      sqsEvent(
        sourceRecord(env, 'g-12', activity('g-12', 'u-12', { claim: 'taken' })),
        sourceRecord(env, 'g-13', activity('g-13', 'u-13')),
        sourceRecord(env, 'g-14', activity('g-14', 'u-14', { claim: 'c-14' })),
      ),
      lambdaContext(),
    );
    expect(deletesRefused).toBeGreaterThan(0);
    // The round meets the locks it could not release: a delay until this invocation's deadline (the locks' expiry), never a lost or repeated effect.
    expect(downstream.starts.map((s) => s.idempotencyKey)).toEqual([]);
    expect(outcomeList(outcomes).sort()).toEqual(['g-12:dead-lettered', 'g-13:retried', 'g-14:retried']);
    for (const outcome of outcomes.filter((o) => o.outcome === 'retried')) expect(outcome.countsAsAttempt).toBe(false);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['g-13', 'g-14']);
  });
});

describe('the completion record written beside the commit', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('overlap-completion', tables, {
      consumerName: 'attacks',
      idempotency: { sideEffectMinRemainingMs: 50 },
    });
  });
  afterAll(() => env?.dispose());
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
  });

  it('a slow completion write: the handler returns only after every record is COMPLETED', async () => {
    const downstream = new Downstream();
    let finished = 0;
    const client = hookedDynamoDb(env, async (command, input) => {
      if (command === 'UpdateItemCommand' && input.TableName === env.resources.idempotencyTable) {
        await sleep(1200);
        finished += 1;
      }
    });
    const { handler } = consumerEnvironment(env, consumer(downstream), {
      dynamoDb: client,
    });
    const response = await handler(
      sqsEvent(
        sourceRecord(env, 'c-1', activity('c-1', 'v-1')),
        sourceRecord(env, 'c-2', activity('c-2', 'v-2', { key: 'CK' })),
        sourceRecord(env, 'c-3', activity('c-3', 'v-3')),
      ),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(finished).toBe(3);
    expect((await idempotencyRecords(env)).map((r) => r.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    expect(downstream.count()).toBe(3);
    await sleep(50);
    expect(unhandled).toEqual([]);
  });

  it('every completion write fails: applied at once, no unhandled rejection, redelivery is a duplicate, one effect each', async () => {
    const downstream = new Downstream();
    let refused = 0;
    const client = hookedDynamoDb(env, (command, input) => {
      if (command === 'UpdateItemCommand' && input.TableName === env.resources.idempotencyTable) {
        refused += 1;
        throw throttling();
      }
    });
    const { handler, outcomes } = consumerEnvironment(env, consumer(downstream), { dynamoDb: client });
    const event = (receiveCount: number) =>
      sqsEvent(
        sourceRecord(env, 'c-4', activity('c-4', 'w-1'), { receiveCount }),
        sourceRecord(env, 'c-5', activity('c-5', 'w-2', { claim: 'cl-5' }), {
          receiveCount,
        }),
      );
    expect(await handler(event(1), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(refused).toBe(2);
    expect(await handler(event(2), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(outcomeList(outcomes)).toEqual(['c-4:applied', 'c-5:applied', 'c-4:duplicate', 'c-5:duplicate']);
    expect(downstream.count()).toBe(2);
    await sleep(50);
    expect(unhandled).toEqual([]);
  });

  it('completion and commit both fail: the redelivery waits for the lock; the effect runs at most twice, the message applied once', async () => {
    const downstream = new Downstream();
    let completionRefused = 0;
    let commitRefused = 0;
    const client = hookedDynamoDb(env, (command, input) => {
      if (command === 'UpdateItemCommand' && input.TableName === env.resources.idempotencyTable && completionRefused === 0) {
        completionRefused += 1;
        throw throttling();
      }
      if (isCommit(command, input) && commitRefused === 0) {
        commitRefused += 1;
        throw throttling();
      }
    });
    const { handler, outcomes } = consumerEnvironment(env, consumer(downstream), { dynamoDb: client });
    const event = (receiveCount: number) =>
      sqsEvent(
        sourceRecord(env, 'c-6', activity('c-6', 'x-1', { claim: 'cl-6' }), {
          receiveCount,
        }),
      );
    const context1 = lambdaContext(3000);
    expect(await handler(event(1), context1)).toEqual({
      batchItemFailures: [{ itemIdentifier: 'c-6' }],
    });
    expect(downstream.count()).toBe(1);
    expect(await handler(event(2), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: 'c-6' }],
    });
    expect(outcomes.at(-1)).toMatchObject({
      outcome: 'retried',
      countsAsAttempt: false,
      errorType: 'NotAttempted',
    });
    expect(downstream.count()).toBe(1);
    await sleep(context1.getRemainingTimeInMillis() + 200);
    expect(await handler(event(3), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(downstream.count()).toBeLessThanOrEqual(2);
    expect(await storedItem(env, 'users', { userId: 'x-1' })).toMatchObject({
      active: 1,
    });
    expect(await handler(event(4), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(outcomes.at(-1)?.outcome).toBe('duplicate');
    expect(downstream.count()).toBeLessThanOrEqual(2);
    await sleep(50);
    expect(unhandled).toEqual([]);
  });

  it('a completion lost beside a landed commit, chosen key: another message with the key waits for the lock, then runs the effect again (at-least-once: at most twice)', async () => {
    const downstream = new Downstream();
    const client = hookedDynamoDb(env, (command, input) => {
      if (command === 'UpdateItemCommand' && input.TableName === env.resources.idempotencyTable) throw throttling();
    });
    const a = consumerEnvironment(env, consumer(downstream), {
      dynamoDb: client,
    });
    const context1 = lambdaContext(3000);
    expect(await a.handler(sqsEvent(sourceRecord(env, 'c-7', activity('c-7', 'y-1', { key: 'LOST' }))), context1)).toEqual({
      batchItemFailures: [],
    });
    const b = consumerEnvironment(env, consumer(downstream));
    const event = (receiveCount: number) =>
      sqsEvent(
        sourceRecord(env, 'c-8', activity('c-8', 'y-2', { key: 'LOST' }), {
          receiveCount,
        }),
      );
    expect(await b.handler(event(1), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: 'c-8' }],
    });
    await sleep(context1.getRemainingTimeInMillis() + 200);
    expect(await b.handler(event(2), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    // Documented: a lost completion record means the key's effect may run once more (observed: 2).
    expect(downstream.count('grant#LOST')).toBeGreaterThanOrEqual(1);
    expect(downstream.count('grant#LOST')).toBeLessThanOrEqual(2);
  });
});

describe('little time left: sideEffectMinRemainingMs', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('overlap-time', tables, {
      consumerName: 'attacks',
      idempotency: { sideEffectMinRemainingMs: 2000 },
    });
  });
  afterAll(() => env?.dispose());

  it('an effect never starts with less than sideEffectMinRemainingMs left, however long the check takes', async () => {
    const downstream = new Downstream();
    const slow = hookedDynamoDb(env, async (command, input) => {
      if (isPreflight(command, input)) await sleep(3200);
    });
    const { handler } = consumerEnvironment(env, consumer(downstream), {
      dynamoDb: slow,
    });
    await handler(sqsEvent(sourceRecord(env, 't-1', activity('t-1', 'z-1', { claim: 'tc-1' }))), lambdaContext(4500));
    for (const start of downstream.starts) expect(start.remainingMs).toBeGreaterThanOrEqual(2000);
  });

  it('a slow check must not make an effect of 2 s (within sideEffectMinRemainingMs) outlive its lock: a redelivery must not run it a second time', async () => {
    const downstream = new Downstream();
    const slow = hookedDynamoDb(env, async (command, input) => {
      if (isPreflight(command, input)) await sleep(3200);
    });
    const a = consumerEnvironment(env, consumer(downstream), {
      dynamoDb: slow,
    });
    const event = (receiveCount: number) =>
      sqsEvent(sourceRecord(env, 't-2', activity('t-2', 'z-2', { claim: 'tc-2', effectMs: 2000 }), { receiveCount }));
    const context1 = lambdaContext(4500);
    const first = a.handler(event(1), context1);
    // The first invocation's deadline passes (it is killed then, on Lambda); the message comes back.
    await sleep(context1.getRemainingTimeInMillis() + 100);
    const b = consumerEnvironment(env, consumer(downstream));
    const second = await b.handler(event(2), lambdaContext());
    await first;
    expect(second).toEqual({ batchItemFailures: [] });
    // Before the time was checked again after the gate: 2 starts, the first with ~1.2 s left (under the 2 s minimum), the second after the first lock expired.
    expect(downstream.starts.map((s) => s.remainingMs >= 2000)).toEqual([true]);
  });
});
