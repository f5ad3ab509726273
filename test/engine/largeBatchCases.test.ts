/**
 * Field cases C29 and C30 with their expected values: batches whose units cannot all share one
 * transaction, and a batch of 100 inline side effects, each on a small consumer of its own built
 * with the public API, against the real DynamoDB Local and SQS server and, for C30, an HTTP
 * downstream on 127.0.0.1 that counts every call. All applied in one invocation, no
 * `TransactionConflict`, no `RetriesExhausted`, each effect run once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSRecord } from 'aws-lambda';
import type { IdempotentConsumerOptions, OutcomeRecord, TableDefinition } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import {
  consumerEnvironment,
  idempotencyRecords,
  inboxRows,
  outboxItems,
  scanAll,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "consumers with tables of their own (streams, users) and assertions over whole tables and the DLQ: a deployed stack has the café's",
);

const id = z.string().min(1).max(128);

/** What no message of these batches may end with: contention or rounds are not a message's own fault. */
function libraryFaults(outcomes: readonly OutcomeRecord[]): string[] {
  return outcomes
    .filter((o) => o.errorType === 'TransactionConflict' || o.reason === 'RetriesExhausted' || o.outcome !== 'applied')
    .map((o) => `${o.messageId}:${o.outcome}:${o.reason ?? o.errorType ?? ''}`);
}

// ---------------------------------------------------------------------------------------------
// C29: ten units of 100 actions each
// ---------------------------------------------------------------------------------------------

const StreamEvent = z.object({ eventId: id, type: z.literal('Append'), streamId: id, seq: z.number().int().positive() });
type StreamEvent = z.infer<typeof StreamEvent>;
const streamTables = { streams: { partitionKey: 'streamId' } } as const satisfies Record<string, TableDefinition>;
/** Outbox items per decision: with its inbox row and its item, 100 actions per message (a whole transaction). */
const OUTBOX_PER_MESSAGE = 98;

const streamConsumer: IdempotentConsumerOptions<StreamEvent> = {
  schema: StreamEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'streamId',
  tables: streamTables,
  read: (event) => [{ table: 'streams', key: { streamId: event.streamId } }],
  decide: (event, state) => {
    const stream = state.get<{ streamId: string; log: number[] }>('streams', { streamId: event.streamId });
    return {
      writes: [{ Put: { TableName: 'streams', Item: { streamId: event.streamId, log: [...(stream?.log ?? []), event.seq] } } }],
      outbox: Array.from({ length: OUTBOX_PER_MESSAGE }, (_, part) => ({
        body: { type: 'Appended', streamId: event.streamId, seq: event.seq, part },
      })),
    };
  },
};

describe('case C29: units too large to share a transaction still all commit', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c29', streamTables, { consumerName: 'streams', queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  it('applies a FIFO group of ten messages of 100 actions each, in order, in one invocation of a 30 s function', async () => {
    // Arrange
    const { handler, outcomes } = consumerEnvironment(env, streamConsumer);
    const seqs = Array.from({ length: 10 }, (_, i) => i + 1);
    const records = seqs.map((seq) =>
      sourceRecord(env, `m-${seq}`, { eventId: `s-${seq}`, type: 'Append', streamId: 'S-1', seq }, { groupId: 'S-1' }),
    );

    // Act
    const response = await handler(sqsEvent(...records), lambdaContext(30_000));

    // Assert: the response, what is stored, and the outcomes.
    expect(response).toEqual({ batchItemFailures: [] });
    expect((await storedItem<{ streamId: string; log: number[] }>(env, 'streams', { streamId: 'S-1' }))?.log).toEqual(seqs);
    const rows = await inboxRows(env);
    expect(rows.map((row) => [row.idempotencyKey, row.status]).sort()).toEqual(seqs.map((seq) => [`s-${seq}`, 'applied']).sort());
    const outbox = await outboxItems(env);
    expect(outbox).toHaveLength(10 * OUTBOX_PER_MESSAGE);
    for (const seq of seqs)
      expect(
        outbox.filter((item) => item.idempotencyKey === `s-${seq}`),
        `s-${seq}`,
      ).toHaveLength(OUTBOX_PER_MESSAGE);
    expect(outcomes.map((o) => o.messageId)).toEqual(records.map((r) => r.messageId));
    expect(libraryFaults(outcomes)).toEqual([]);
    expect(outcomes.filter((o) => o.countsAsAttempt === true).map((o) => o.messageId)).toEqual([]);
    expect(await deadLetters(env)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// C30: 100 inline side effects
// ---------------------------------------------------------------------------------------------

const LoginEvent = z.object({ eventId: id, type: z.literal('UserLoggedIn'), userId: id, tenant: id, at: z.iso.datetime() });
type LoginEvent = z.infer<typeof LoginEvent>;
const userTables = { users: { partitionKey: 'userId' } } as const satisfies Record<string, TableDefinition>;

/** An HTTP downstream on 127.0.0.1 that always succeeds and counts each call by its effect key. */
class CountingDownstream {
  readonly calls = new Map<string, number>();
  #server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        const { effectKey } = JSON.parse(body) as { effectKey: string };
        this.calls.set(effectKey, (this.calls.get(effectKey) ?? 0) + 1);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/logins`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server === undefined ? resolve() : this.#server.close(() => resolve())));
  }
}

/** The login consumer: each login writes the user's item and asks for one HTTP call; `orderingKey` per source. */
function loginConsumer(downstream: CountingDownstream, orderingKey: 'userId' | 'tenant'): IdempotentConsumerOptions<LoginEvent> {
  return {
    schema: LoginEvent,
    idempotencyKey: 'eventId',
    orderingKey,
    tables: userTables,
    read: (event) => [{ table: 'users', key: { userId: event.userId } }],
    decide: (event, state) => {
      const user = state.get<{ userId: string; logins: number }>('users', { userId: event.userId });
      return {
        writes: [{ Put: { TableName: 'users', Item: { userId: event.userId, lastLoginAt: event.at, logins: (user?.logins ?? 0) + 1 } } }],
        sideEffects: [{ name: 'recordLogin', input: { userId: event.userId } }],
      };
    },
    sideEffects: {
      recordLogin: async (input, context) => {
        const response = await fetch(downstream.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ effectKey: context.effectKey, input }),
        });
        if (!response.ok) throw new Error(`the downstream answered ${response.status}`);
        return response.json();
      },
    },
  };
}

describe('case C30: a batch full of side effects applies', () => {
  const downstream = new CountingDownstream();
  const envs: TestResources[] = [];
  beforeAll(() => downstream.start());
  afterAll(async () => {
    await downstream.stop();
    await Promise.all(envs.map((env) => env.dispose()));
  });

  const users = (prefix: string) => Array.from({ length: 100 }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  const login = (userId: string) => ({
    eventId: `login-${userId}`,
    type: 'UserLoggedIn',
    userId,
    tenant: 'T-1',
    at: '2026-03-01T10:00:00Z',
  });

  /** Asserts what one batch of 100 logins left: every user once, every effect once, nothing dead-lettered. */
  async function expectAllApplied(
    env: TestResources,
    userIds: readonly string[],
    outcomes: readonly OutcomeRecord[],
    messageIds: readonly string[],
  ) {
    expect(outcomes.map((o) => o.messageId)).toEqual(messageIds);
    expect(libraryFaults(outcomes)).toEqual([]);
    expect(outcomes.filter((o) => o.countsAsAttempt === true).map((o) => o.messageId)).toEqual([]);
    const stored = await scanAll(env, env.resources.tables.users!);
    expect(stored.map((item) => [item.userId, item.logins]).sort()).toEqual(userIds.map((userId) => [userId, 1]).sort());
    expect((await inboxRows(env)).filter((row) => row.status === 'applied')).toHaveLength(userIds.length);
    // Each effect run once: one call per effect key downstream, one completed guard record each.
    const effectKeys = userIds.map((userId) => `login-${userId}#recordLogin#0`);
    expect(effectKeys.map((key) => downstream.calls.get(key) ?? 0)).toEqual(userIds.map(() => 1));
    const records = await idempotencyRecords(env);
    expect(records.map((record) => record.status)).toEqual(userIds.map(() => 'COMPLETED'));
    expect(await deadLetters(env)).toEqual([]);
  }

  it('Kafka topic logins, one partition, a batch of 100 different users: all applied in one invocation of a 60 s function, each effect once', async () => {
    // Arrange
    const env = await testResources('c30-kafka', userTables, { consumerName: 'logins' });
    envs.push(env);
    const { handler, outcomes } = consumerEnvironment(env, loginConsumer(downstream, 'userId'));
    const userIds = users('k');
    const event = mskEvent(...userIds.map((userId, offset) => kafkaRecord('logins', 0, offset, login(userId), { key: userId })));

    // Act
    const response = await handler(event, lambdaContext(60_000));

    // Assert
    expect(response).toEqual({ batchItemFailures: [] });
    await expectAllApplied(
      env,
      userIds,
      outcomes,
      userIds.map((_, offset) => `logins-0@${offset}`),
    );
  });

  it('a standard queue, a batch of 100 sharing one ordering key: all applied in one invocation of a 60 s function, each effect once', async () => {
    // Arrange
    const env = await testResources('c30-sqs', userTables, { consumerName: 'logins', function: { batchSize: 100 } });
    envs.push(env);
    const { handler, outcomes } = consumerEnvironment(env, loginConsumer(downstream, 'tenant'));
    const userIds = users('q');
    const records: SQSRecord[] = userIds.map((userId) => sourceRecord(env, `m-${userId}`, login(userId)));

    // Act
    const response = await handler(sqsEvent(...records), lambdaContext(60_000));

    // Assert
    expect(response).toEqual({ batchItemFailures: [] });
    await expectAllApplied(
      env,
      userIds,
      outcomes,
      records.map((r) => r.messageId),
    );
  });
});
