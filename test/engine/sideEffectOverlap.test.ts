/**
 * The side-effect guard's round trips overlapped with the engine's (issue 19, round trips): the
 * lock is taken while the commit's conditions are checked (the `gate`), and the completion record
 * is written while the commit is sent. Against DynamoDB Local, on Powertools' own records: what the
 * effect saw, and what the idempotency table holds after each outcome of the gate.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CompletionDeferringStore, SideEffectRunner } from '../../packages/idempotent-consumer/src/sideEffects/SideEffectRunner.js';
import { idempotencyRecords } from '../support/consumerHarness.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('the runner is given its own idempotency table');

describe('SideEffectRunner: the lock beside the check, the completion beside the commit', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('overlap');
  });
  afterAll(async () => env?.dispose());

  /** A runner over the test's idempotency table, whose effect `notify` records what it was asked and can be held. */
  let runners = 0;
  const setUp = (keyPrefix = `${env.prefix}consumer${(runners += 1)}`) => {
    const ran: string[] = [];
    const runner = new SideEffectRunner({
      handlers: {
        notify: async (input, context) => {
          ran.push(`${context.effectKey}:${JSON.stringify(input)}`);
        },
      },
      persistenceStore: new CompletionDeferringStore({ tableName: env.resources.idempotencyTable, awsSdkV3Client: env.dynamoDb }),
      keyPrefix,
      expiresAfterSeconds: 3600,
      minRemainingMs: 1000,
      documentClient: env.documentClient,
      tables: {},
    });
    const context = { getRemainingTimeInMillis: () => 60_000, awsRequestId: 'r1' } as unknown as Context;
    const clock = { remainingTimeMs: () => 60_000, lambdaContext: context };
    /** The runner's Powertools record (its id is `<prefix>#<hash of the effect key>`: one per runner's test). */
    const record = async () => (await idempotencyRecords(env)).find((item) => String(item.id).startsWith(`${keyPrefix}#`));
    return { ran, runner, clock, record, keyPrefix };
  };

  it('takes the lock before the gate opens, runs the effect only once it opens true, and returns the completion write in flight', async () => {
    const { ran, runner, clock, record } = setUp();
    let open!: (value: boolean) => void;
    const gate = new Promise<boolean>((resolve) => {
      open = resolve;
    });
    const run = runner.run({ name: 'notify', input: { to: 'a' } }, { idempotencyKey: 'k1', effectKey: 'k1#notify#0' }, clock, gate);
    // The lock is written while the gate is still shut; the effect has not started.
    await expect.poll(async () => (await record())?.status, { timeout: 10_000 }).toBe('INPROGRESS');
    expect(ran).toEqual([]);
    open(true);
    const result = await run;
    expect(ran).toEqual(['k1#notify#0:{"to":"a"}']);
    expect(result?.completionRecorded).toBeInstanceOf(Promise);
    await result?.completionRecorded;
    expect((await record())?.status).toBe('COMPLETED');
  });

  it('a gate that opens false releases the lock and never starts the effect; the next run with an open gate runs it', async () => {
    const { ran, runner, clock, record } = setUp();
    const refused = await runner.run(
      { name: 'notify', input: { to: 'b' } },
      { idempotencyKey: 'k2', effectKey: 'k2#notify#0' },
      clock,
      Promise.resolve(false),
    );
    expect(refused).toBeUndefined();
    expect(ran).toEqual([]);
    expect(await record()).toBeUndefined();
    // A rejected gate is a refusal too.
    await runner.run(
      { name: 'notify', input: { to: 'b' } },
      { idempotencyKey: 'k2', effectKey: 'k2#notify#0' },
      clock,
      Promise.reject(new Error('check failed')),
    );
    expect(ran).toEqual([]);
    expect(await record()).toBeUndefined();
    const result = await runner.run(
      { name: 'notify', input: { to: 'b' } },
      { idempotencyKey: 'k2', effectKey: 'k2#notify#0' },
      clock,
      Promise.resolve(true),
    );
    await result?.completionRecorded;
    expect(ran).toEqual(['k2#notify#0:{"to":"b"}']);
  });

  it('resolves before the completion record is written; a completed effect is not run again and leaves no write to wait for', async () => {
    const { ran, runner, clock, record } = setUp();
    const result = await runner.run({ name: 'notify', input: { to: 'c' } }, { idempotencyKey: 'k3', effectKey: 'k3#notify#0' }, clock);
    expect(ran).toHaveLength(1);
    expect(result?.completionRecorded).toBeDefined();
    await result?.completionRecorded;
    const stored = await env.documentClient.send(
      new GetCommand({ TableName: env.resources.idempotencyTable, Key: { id: (await record())?.id }, ConsistentRead: true }),
    );
    expect(stored.Item?.status).toBe('COMPLETED');
    const again = await runner.run(
      { name: 'notify', input: { to: 'c' } },
      { idempotencyKey: 'k3', effectKey: 'k3#notify#0' },
      clock,
      Promise.resolve(true),
    );
    expect(again).toBeUndefined();
    expect(ran).toHaveLength(1);
  });

  it('another invocation meets the lock taken behind a shut gate as in progress, and runs nothing', async () => {
    const first = setUp();
    // Another execution environment of the same consumer: the same records.
    const second = setUp(first.keyPrefix);
    const { record } = first;
    let open!: (value: boolean) => void;
    const gate = new Promise<boolean>((resolve) => {
      open = resolve;
    });
    const run = first.runner.run({ name: 'notify', input: {} }, { idempotencyKey: 'k4', effectKey: 'k4#notify#0' }, first.clock, gate);
    await expect.poll(async () => (await record())?.status, { timeout: 10_000 }).toBe('INPROGRESS');
    await expect(
      second.runner.run(
        { name: 'notify', input: {} },
        { idempotencyKey: 'k4', effectKey: 'k4#notify#0' },
        second.clock,
        Promise.resolve(true),
      ),
    ).rejects.toMatchObject({ name: 'NotAttempted' });
    open(false);
    expect(await run).toBeUndefined();
    expect([...first.ran, ...second.ran]).toEqual([]);
    expect(await record()).toBeUndefined();
  });
});
