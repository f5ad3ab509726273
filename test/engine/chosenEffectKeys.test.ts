/**
 * Side effects with a chosen key (`{ name, input, key }`, issue 17), on a consumer of their own
 * built with the public API, against the real DynamoDB Local and SQS server: a daily bonus granted
 * once per `userId:day`, whichever of the user's activity events asks first. Assertions are made
 * on what is stored (items, inbox rows, the guard's records, attempt records, the DLQ) and on what
 * the downstream saw, not only on the outcomes the handlers report.
 */
import {
  createIdempotentConsumer,
  type IdempotentConsumerOptions,
  type SideEffectContext,
  type TableDefinition,
  type Write,
} from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import {
  attemptRecordOf,
  consumerEnvironment,
  idempotencyRecords,
  inboxRowOf,
  outcomeList,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';
import { waitFor } from '../support/waitFor.js';

const describe = describeUnlessDeployedStack('a consumer with a table of its own (users) and assertions over the guard and the DLQ');

const id = z.string().min(1).max(128);
const ActivityEvent = z.object({
  eventId: id,
  userId: id,
  at: z.iso.datetime(),
  /** The key to ask for instead of `<userId>:<day>` (to try keys the engine refuses). */
  key: z.string().optional(),
  /** Adds a write DynamoDB refuses at the commit, after the effect ran. */
  broken: z.boolean().optional(),
});
type ActivityEvent = z.infer<typeof ActivityEvent>;
const userTables = { users: { partitionKey: 'userId' } } as const satisfies Record<string, TableDefinition>;

/** The bonus service downstream: what each effect key was granted, and for which message. */
class BonusService {
  readonly grants = new Map<string, string[]>();
  /** Resolved by the test to let a grant in progress finish; `undefined` lets it finish at once. */
  gate: Promise<void> | undefined;
  started = 0;

  async grant(input: { userId: string; day: string }, context: SideEffectContext<'users'>): Promise<void> {
    this.started += 1;
    await this.gate;
    this.grants.set(context.effectKey, [...(this.grants.get(context.effectKey) ?? []), `${context.idempotencyKey}:${input.userId}`]);
  }

  count(effectKey: string): number {
    return this.grants.get(effectKey)?.length ?? 0;
  }
}

/** Counts each user's activity and grants a daily bonus once per user and day (the event's own date: decide stays pure). */
function bonusConsumer(bonus: BonusService) {
  const sideEffects = {
    grantDailyBonus: (input: { userId: string; day: string }, context: SideEffectContext<'users'>) => bonus.grant(input, context),
  };
  const options: IdempotentConsumerOptions<ActivityEvent, keyof typeof userTables, typeof sideEffects> = {
    schema: ActivityEvent,
    idempotencyKey: 'eventId',
    orderingKey: 'eventId',
    tables: userTables,
    read: (event) => [{ table: 'users', key: { userId: event.userId } }],
    decide: (event, state) => {
      const user = state.get<{ userId: string; active: number }>('users', { userId: event.userId });
      const day = event.at.slice(0, 10);
      const writes: Write<'users'>[] = [{ Put: { TableName: 'users', Item: { userId: event.userId, active: (user?.active ?? 0) + 1 } } }];
      // A placeholder it does not define: DynamoDB refuses the commit, known only after the effect ran.
      if (event.broken === true)
        writes.push({
          Update: {
            TableName: 'users',
            Key: { userId: `${event.userId}-note` },
            UpdateExpression: 'SET #undefined = :v',
            ExpressionAttributeValues: { ':v': 1 },
          },
        });
      return {
        writes,
        sideEffects: [{ name: 'grantDailyBonus', input: { userId: event.userId, day }, key: event.key ?? `${event.userId}:${day}` }],
      };
    },
    sideEffects,
  };
  return options;
}

const activity = (eventId: string, userId: string, at = '2026-03-01T09:00:00Z', extra: Partial<ActivityEvent> = {}) => ({
  eventId,
  userId,
  at,
  ...extra,
});

describe('side effects with a chosen key: once per key, whichever message asks', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('chosen-effect-keys', userTables, { consumerName: 'activity' });
  });
  afterAll(() => env?.dispose());

  it('grants once per user and day in one batch, then not again in a later batch of another environment; a new day grants again', async () => {
    // Arrange
    const bonus = new BonusService();
    const first = consumerEnvironment(env, bonusConsumer(bonus));

    // Act: two events of u-1 on one day and one of u-2, in one batch.
    const response = await first.handler(
      sqsEvent(
        sourceRecord(env, 'm-a1', activity('a-1', 'u-1')),
        sourceRecord(env, 'm-a2', activity('a-2', 'u-1', '2026-03-01T17:30:00Z')),
        sourceRecord(env, 'm-a3', activity('a-3', 'u-2')),
      ),
      lambdaContext(),
    );

    // Assert: all applied, one grant per key, one completed guard record per key.
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomeList(first.outcomes)).toEqual(['m-a1:applied', 'm-a2:applied', 'm-a3:applied']);
    expect(await storedItem(env, 'users', { userId: 'u-1' })).toMatchObject({ active: 2 });
    expect(bonus.count('grantDailyBonus#u-1:2026-03-01')).toBe(1);
    expect(bonus.count('grantDailyBonus#u-2:2026-03-01')).toBe(1);
    expect(['a-1:u-1', 'a-2:u-1']).toContain(bonus.grants.get('grantDailyBonus#u-1:2026-03-01')?.[0]);
    expect((await idempotencyRecords(env)).map((record) => record.status)).toEqual(['COMPLETED', 'COMPLETED']);

    // Act: another execution environment (a cold start), u-1 again that day, and the next day.
    const second = consumerEnvironment(env, bonusConsumer(bonus));
    const later = await second.handler(
      sqsEvent(
        sourceRecord(env, 'm-a4', activity('a-4', 'u-1', '2026-03-01T22:00:00Z')),
        sourceRecord(env, 'm-a5', activity('a-5', 'u-1', '2026-03-02T08:00:00Z')),
      ),
      lambdaContext(),
    );

    // Assert: both applied; the day already granted is not granted again, the new day is.
    expect(later).toEqual({ batchItemFailures: [] });
    expect(outcomeList(second.outcomes)).toEqual(['m-a4:applied', 'm-a5:applied']);
    expect(await storedItem(env, 'users', { userId: 'u-1' })).toMatchObject({ active: 4 });
    expect(bonus.count('grantDailyBonus#u-1:2026-03-01')).toBe(1);
    expect(bonus.grants.get('grantDailyBonus#u-1:2026-03-02')).toEqual(['a-5:u-1']);
    expect(await deadLetters(env)).toEqual([]);
  });

  it('retries a message that asks for a key another invocation is granting (not counted as an attempt); its redelivery finds it granted', async () => {
    // Arrange: environment A starts the grant of u-3's day and holds it.
    const bonus = new BonusService();
    let release = () => {};
    bonus.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const a = consumerEnvironment(env, bonusConsumer(bonus));
    const b = consumerEnvironment(env, bonusConsumer(bonus));
    const holding = a.handler(sqsEvent(sourceRecord(env, 'm-c1', activity('c-1', 'u-3'))), lambdaContext());
    await waitFor(async () => (bonus.started === 1 ? true : undefined), { timeoutMs: 10_000, what: 'the first grant to start' });

    // Act: environment B gets another event of u-3 that day while the grant is in progress.
    const meanwhile = await b.handler(sqsEvent(sourceRecord(env, 'm-c2', activity('c-2', 'u-3'))), lambdaContext());

    // Assert: B retries it without counting an attempt (a skip in the attempt log), and runs nothing.
    expect(meanwhile).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-c2' }] });
    expect(b.outcomes).toMatchObject([{ messageId: 'm-c2', outcome: 'retried', errorType: 'NotAttempted', countsAsAttempt: false }]);
    expect(b.outcomes[0]?.errorMessage).toMatch(/side effect grantDailyBonus is in progress in another invocation/);
    expect(bonus.started).toBe(1);
    expect(await attemptRecordOf(env, 'sqs:m-c2')).toMatchObject({ skips: 1 });
    expect(await inboxRowOf(env, 'c-2')).toBeUndefined();

    // Act: A's grant finishes; then the queue delivers m-c2 again.
    release();
    expect(await holding).toEqual({ batchItemFailures: [] });
    const again = await b.handler(sqsEvent(sourceRecord(env, 'm-c2', activity('c-2', 'u-3'), { receiveCount: 2 })), lambdaContext());

    // Assert: applied, the grant not run again.
    expect(again).toEqual({ batchItemFailures: [] });
    expect(outcomeList([...a.outcomes, ...b.outcomes])).toEqual(['m-c1:applied', 'm-c2:retried', 'm-c2:applied']);
    expect(bonus.grants.get('grantDailyBonus#u-3:2026-03-01')).toEqual(['c-1:u-3']);
    expect(await storedItem(env, 'users', { userId: 'u-3' })).toMatchObject({ active: 2 });
  });

  it('says in the dead letter of a message refused at its commit that its chosen-key effect was done; a later message does not run it again', async () => {
    // Arrange
    const bonus = new BonusService();
    const { handler, outcomes } = consumerEnvironment(env, bonusConsumer(bonus));

    // Act: the grant runs, then DynamoDB refuses the commit.
    await handler(sqsEvent(sourceRecord(env, 'm-d1', activity('d-1', 'u-9', undefined, { broken: true }))), lambdaContext());

    // Assert: dead-lettered with its reason and what was done; the effect's key is complete.
    expect(outcomes.map((o) => `${o.outcome}:${o.reason}`)).toEqual(['dead-lettered:InvalidWrite']);
    const dead = (await deadLetters(env)).filter((m) => deadLetterAttribute(m, 'originalMessageId') === 'm-d1');
    expect(dead).toHaveLength(1);
    expect(deadLetterAttribute(dead[0], 'errorMessage')).toMatch(
      /\(its side effects done before for their chosen key, by it or another message: grantDailyBonus#u-9:2026-03-01\)$/,
    );
    expect(bonus.count('grantDailyBonus#u-9:2026-03-01')).toBe(1);
    expect(await storedItem(env, 'users', { userId: 'u-9' })).toBeUndefined();

    // Act: another event of u-9 that day.
    const response = await handler(sqsEvent(sourceRecord(env, 'm-d2', activity('d-2', 'u-9'))), lambdaContext());

    // Assert: applied; the day's grant is not run a second time.
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomes.at(-1)).toMatchObject({ messageId: 'm-d2', outcome: 'applied' });
    expect(bonus.grants.get('grantDailyBonus#u-9:2026-03-01')).toEqual(['d-1:u-9']);
  });

  it("dead-letters a message whose decision asks for a key that cannot be one (ValidationError: the message's), running nothing", async () => {
    // Arrange
    const bonus = new BonusService();
    const { handler, outcomes } = consumerEnvironment(env, bonusConsumer(bonus));

    // Act
    const response = await handler(
      sqsEvent(
        sourceRecord(env, 'm-e1', activity('e-1', 'u-5', undefined, { key: 'u-5#2026-03-01' })),
        sourceRecord(env, 'm-e2', activity('e-2', 'u-6')),
      ),
      lambdaContext(),
    );

    // Assert: the bad key is the message's own fault, dead-lettered at once; the rest of the batch applies.
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => `${o.messageId}:${o.outcome}:${o.reason ?? ''}`)).toEqual([
      'm-e1:dead-lettered:ValidationError',
      'm-e2:applied:',
    ]);
    const dead = (await deadLetters(env)).filter((m) => deadLetterAttribute(m, 'originalMessageId') === 'm-e1');
    expect(deadLetterAttribute(dead[0], 'errorMessage')).toMatch(/side effect 0 \(grantDailyBonus\): its key holds '#'/);
    expect(bonus.started).toBe(1);
    expect([...bonus.grants.keys()]).toEqual(['grantDailyBonus#u-6:2026-03-01']);
  });

  it('keeps a chosen key apart from the default effect keys of other messages, and of another effect with the same key', async () => {
    // Arrange: a consumer whose second effect is keyed per message (the default) beside the shared one.
    const runs: string[] = [];
    const handler = createIdempotentConsumer(
      {
        schema: ActivityEvent,
        idempotencyKey: 'eventId',
        tables: userTables,
        decide: (event) => ({
          sideEffects: [
            { name: 'welcome', input: event.userId, key: event.userId },
            { name: 'audit', input: event.userId, key: event.userId },
            { name: 'audit', input: event.userId },
          ],
        }),
        sideEffects: {
          welcome: async (userId: string, context) => void runs.push(`welcome ${userId} ${context.effectKey}`),
          audit: async (userId: string, context) => void runs.push(`audit ${userId} ${context.effectKey}`),
        },
      },
      { environment: env.environment, clients: { dynamoDb: env.dynamoDb, sqs: env.sqs, s3: env.s3 } },
    );

    // Act: message `welcome` whose idempotency key looks like another's effect key, and two of u-7.
    const response = await handler(
      sqsEvent(sourceRecord(env, 'm-f1', activity('welcome', 'u-7')), sourceRecord(env, 'm-f2', activity('f-2', 'u-7'))),
      lambdaContext(),
    );

    // Assert
    expect(response).toEqual({ batchItemFailures: [] });
    expect(runs.sort()).toEqual(['audit u-7 audit#u-7', 'audit u-7 f-2#audit#2', 'audit u-7 welcome#audit#2', 'welcome u-7 welcome#u-7']);
  });
});
