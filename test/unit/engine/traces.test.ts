/**
 * The engine's traces (no server: the fake DynamoDB, a recording tracer): the subsegments of a
 * batch and their annotations, that no annotation or metadata holds anything of a body, and that
 * the dead letters and outbox items carry the source message's trace header (the invocation's for
 * a Kafka record).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RuntimeConfig } from '../../../packages/idempotent-consumer/src/config/runtimeConfig.js';
import { BatchEngine } from '../../../packages/idempotent-consumer/src/engine/BatchEngine.js';
import type { ConsumerDefinition } from '../../../packages/idempotent-consumer/src/engine/ConsumerDefinition.js';
import type { Delivery } from '../../../packages/idempotent-consumer/src/engine/Delivery.js';
import { ItemCache } from '../../../packages/idempotent-consumer/src/engine/ItemCache.js';
import { type DeadLetterRequest, processDeliveries } from '../../../packages/idempotent-consumer/src/engine/processDeliveries.js';
import { BusinessRuleViolation } from '../../../packages/idempotent-consumer/src/errors.js';
import type { AttemptLog } from '../../../packages/idempotent-consumer/src/inbox/AttemptLog.js';
import type { Decision, State } from '../../../packages/idempotent-consumer/src/types.js';
import { FakeTracer, INVOCATION_TRACE_HEADER } from '../../support/fakeTracer.js';
import { FakeDynamoDb, recordingLogger } from './fakeDynamoDb.js';
import { definitionOf, delivery, putAccount, type TestEvent } from './fixtures.js';

const SOURCE_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=557abcec3ee5a047;Sampled=1';

const config: RuntimeConfig = {
  consumerName: 'c',
  inboxTable: 'inbox',
  idempotencyTable: 'idempotency',
  deadLetterQueueUrl: 'http://sqs.local/000000000000/dlq',
  payloadBucket: undefined,
  fifo: false,
  maxAttempts: 3,
  inboxTtlSeconds: 3600,
  sideEffectTtlSeconds: 3600,
  sideEffectMinRemainingMs: 1000,
  retryBackoffBaseSeconds: 0,
  retryBackoffMaxSeconds: 0,
  deadLetterMaxMessageSizeBytes: 262_144,
  tables: { accounts: 'phys-accounts', lines: 'phys-lines' },
};

/** Applies with an outbox message and a side effect; `rule` dead-letters it. */
const consumer = definitionOf((event: TestEvent, state: State): Decision => {
  if (event.rule !== undefined) throw new BusinessRuleViolation(`refused (${String(state.get('accounts', { id: event.account })?.n)})`);
  return {
    writes: [putAccount(event.account, { n: 1, note: event.note })],
    outbox: [{ body: { account: event.account, note: event.note }, attributes: { kind: 'note' } }],
    sideEffects: [{ name: 'notify', input: { note: event.note } }],
  };
});

function harness(definition: ConsumerDefinition<TestEvent> = consumer) {
  const fake = new FakeDynamoDb()
    .always('TransactWriteCommand', {})
    .always('PutCommand', {})
    .always('TransactGetCommand', { Responses: [] })
    .always('BatchGetCommand', { Responses: {} });
  const tracer = new FakeTracer();
  const sent: DeadLetterRequest[] = [];
  const effects: unknown[] = [];
  const { logger } = recordingLogger();
  const engine = new BatchEngine<TestEvent>({
    definition,
    config,
    client: fake.client,
    cache: new ItemCache(),
    sideEffects: async () => ({ run: async (request) => void effects.push(request) }),
    logger,
    now: () => new Date(0),
    sleep: async () => undefined,
    tracer,
  });
  const attempts = { recordSkip: async () => undefined, skipsOf: async () => new Map(), recordFailure: async () => 1 };
  const run = (deliveries: readonly Delivery[]) =>
    processDeliveries(
      deliveries,
      {
        definition,
        config,
        client: fake.client,
        engine,
        attempts: attempts as unknown as AttemptLog,
        deadLetters: async () => ({
          sendBatch: async (requests) => {
            sent.push(...requests);
            return requests.map(() => ({ ok: true as const }));
          },
        }),
        observer: { onOutcome: () => undefined },
        logger,
        now: () => new Date(0),
        tracer,
      },
      { remainingTimeMs: () => 60_000 },
    );
  return { fake, tracer, sent, effects, run };
}

const sqs = (messageId: string, body: Record<string, unknown> | string, traceHeader?: string): Delivery => ({
  ...delivery(messageId),
  body: typeof body === 'string' ? body : JSON.stringify(body),
  ...(traceHeader === undefined ? {} : { traceHeader }),
});
const kafka = (offset: number, body: Record<string, unknown>): Delivery => ({
  messageId: `t-0@${offset}`,
  body: JSON.stringify(body),
  scope: 't-0',
  attempts: { kind: 'log', sourceId: `kafka:t-0@${offset}`, recordIdentity: `r${offset}`, source: 'msk' },
  deadLetter: { source: 'msk', coordinates: { topic: 't', partition: 0, offset } },
});

/** The outbox items in the transactions the engine sent. */
const outboxItemsOf = (fake: FakeDynamoDb) =>
  fake
    .inputs('TransactWriteCommand')
    .flatMap((input) => input.TransactItems as { Put?: { Item: Record<string, unknown> } }[])
    .map((action) => action.Put?.Item)
    .filter((item): item is Record<string, unknown> => item?.kind === 'outbox');

describe('the engine with a tracer', () => {
  beforeEach(() => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('opens ## batch with its phases under it, annotated with counts, every one closed', async () => {
    const h = harness();
    const results = await h.run([
      sqs('m0', { key: 'k0', account: 'A', note: 'x' }),
      sqs('m1', 'not json {'),
      sqs('m2', { key: 'k2', account: 'B', rule: 0 }),
    ]);
    expect(results.map((result) => result.verdict.kind)).toEqual(['applied', 'dead-lettered', 'dead-lettered']);
    expect(h.tracer.root.tree()).toEqual([
      'facade',
      '  ## batch',
      '    ## parse',
      '    ## decide',
      '    ## read',
      '    ## decide',
      '    ## read',
      '    ## decide',
      '    ## sideEffects',
      '    ## commit',
      '    ## deadLetter',
    ]);
    const one = (name: string) => h.tracer.named(name)[0]!.annotations;
    expect(one('## batch')).toEqual({
      consumer: 'c',
      source: 'sqs',
      deliveries: 3,
      applied: 1,
      duplicates: 0,
      retried: 0,
      deadLettered: 2,
    });
    expect(one('## parse')).toEqual({ deliveries: 3, parsed: 2, rejected: 1 });
    expect(one('## decide')).toEqual({ round: 0, units: 2, planned: 0, toRead: 2 });
    // m2's inbox row alone first (read with m0's consistent read), then its snapshot.
    expect(h.tracer.named('## read').map((segment) => segment.annotations)).toEqual([
      { round: 0, units: 2, inbox: 1, snapshot: 0, consistent: 1 },
      { round: 1, units: 1, inbox: 0, snapshot: 1, consistent: 0 },
    ]);
    expect(one('## sideEffects')).toEqual({ round: 2, units: 1, effects: 1 });
    expect(one('## commit')).toEqual({ round: 2, transactions: 1, units: 1, actions: 3 });
    expect(one('## deadLetter')).toEqual({ messages: 2, sent: 2, duplicates: 0, retried: 0 });
    expect(h.tracer.subsegments().every((segment) => segment.closed && segment.errors.length === 0)).toBe(true);
    expect(h.tracer.current).toBe(h.tracer.root);
    expect(h.effects).toHaveLength(1);
  });

  it('names a Kafka batch as such', async () => {
    const h = harness();
    await h.run([kafka(0, { key: 'k0', account: 'A', note: 'x' })]);
    expect(h.tracer.named('## batch')[0]!.annotations).toMatchObject({ source: 'kafka', deliveries: 1, applied: 1 });
  });

  it('names a Kinesis or DynamoDB Streams batch by its attempt log, not as Kafka', async () => {
    for (const [prefix, source] of [
      ['kinesis:orders/', 'kinesis'],
      ['dynamodb:', 'dynamodb-streams'],
    ] as const) {
      const h = harness();
      const record = kafka(0, { key: `k-${source}`, account: 'A', note: 'x' });
      await h.run([{ ...record, attempts: { ...record.attempts, kind: 'log', sourceId: `${prefix}e-0` } as Delivery['attempts'] }]);
      expect(h.tracer.named('## batch')[0]!.annotations).toMatchObject({ source, deliveries: 1, applied: 1 });
    }
  });

  it('puts nothing of a body in an annotation or metadata: no key, no field, no text', async () => {
    const secret = 'S3CR3T';
    const h = harness();
    await h.run([
      sqs('m0', { key: `${secret}-k0`, account: `${secret}-A`, note: `${secret}-note` }),
      sqs('m1', `${secret} is not json {`),
      sqs('m2', { key: `${secret}-k2`, account: `${secret}-B`, note: `${secret}-note`, rule: 0 }),
      sqs('m3', { account: `${secret}-C` }),
    ]);
    const segments = h.tracer.subsegments();
    const values = segments.flatMap((segment) => Object.values(segment.annotations).map(String));
    expect(values.length).toBeGreaterThan(20);
    expect(values.filter((value) => value.includes(secret))).toEqual([]);
    expect(segments.flatMap((segment) => segment.metadata)).toEqual([]);
    expect(segments.flatMap((segment) => segment.errors)).toEqual([]);
  });
});

describe('the trace header of dead letters and outbox items', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("carries an SQS message's own header, else the invocation's, to its dead letter and its outbox item", async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    const h = harness();
    await h.run([
      sqs('m0', { key: 'k0', account: 'A', note: 'x' }, SOURCE_HEADER),
      sqs('m1', { key: 'k1', account: 'B', note: 'y' }),
      sqs('m2', 'not json {', SOURCE_HEADER),
      sqs('m3', 'not json either {'),
    ]);
    const byKey = Object.fromEntries(outboxItemsOf(h.fake).map((item) => [item.idempotencyKey, item.traceHeader]));
    expect(byKey).toEqual({ k0: SOURCE_HEADER, k1: INVOCATION_TRACE_HEADER });
    expect(h.sent.map((request) => [request.originalMessageId, request.traceHeader, request.body])).toEqual([
      ['m2', SOURCE_HEADER, 'not json {'],
      ['m3', INVOCATION_TRACE_HEADER, 'not json either {'],
    ]);
  });

  it("gives a Kafka record the invocation's header", async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    const h = harness();
    const results = await h.run([kafka(0, { key: 'k0', account: 'A', note: 'x' }), kafka(1, { key: 'k1', account: 'A', rule: 0 })]);
    expect(results.map((result) => result.verdict.kind)).toEqual(['applied', 'dead-lettered']);
    expect(outboxItemsOf(h.fake).map((item) => item.traceHeader)).toEqual([INVOCATION_TRACE_HEADER]);
    expect(h.sent.map((request) => request.traceHeader)).toEqual([INVOCATION_TRACE_HEADER]);
  });

  it('carries none outside Lambda (no trace data), and changes nothing else', async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', '');
    const h = harness();
    const input = kafka(0, { key: 'k0', account: 'A', note: 'x' });
    const [result] = await h.run([input]);
    expect(result!.delivery).toBe(input);
    expect(outboxItemsOf(h.fake)[0]).not.toHaveProperty('traceHeader');
    expect(h.tracer.subsegments()).toEqual([]);
  });
});
