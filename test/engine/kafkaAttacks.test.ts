/**
 * Attacks on the Kafka path's guarantees, on a small ledger consumer of its own (not the café),
 * with MSK events handed straight to the handler and DynamoDB Local / the SQS server behind it.
 * Every record must be applied exactly once or dead-lettered with its reason (never both), a
 * partition must never skip past a record that must be retried, and the response must be a valid
 * Kafka partial batch response.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { Message } from '@aws-sdk/client-sqs';
import {
  type IdempotentConsumerOptions,
  NonRetryableError,
  PredecessorNotApplied,
  RetryableError,
  type TableDefinition,
} from 'idempotent-consumer';
import { type KafkaBatchResponse, type KafkaEvent, type KafkaRecord, readKafkaBatchResponse } from 'idempotent-consumer/kafka';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import { consumerEnvironment, type ExecutionEnvironment, inboxRowOf, storedItem } from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { lambdaContext } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a ledger consumer with a table of its own and assertions over its whole DLQ');

const id = z.string().min(1).max(128);
const LedgerEvent = z.object({
  eventId: id,
  account: id,
  amount: z.number().int(),
  /** The account's sequence number this event needs first (its predecessors applied). */
  after: z.number().int().min(0).optional(),
  effect: z.boolean().optional(),
  pad: z.string().optional(),
});
type LedgerEvent = z.infer<typeof LedgerEvent>;
type Account = { account: string; balance: number; seq: number; log: string[] };
const tables = { accounts: { partitionKey: 'account' } } as const satisfies Record<string, TableDefinition>;

class Flaky extends RetryableError {
  constructor(message: string) {
    super(message);
    this.name = 'Flaky';
  }
}
class NegativeAmount extends NonRetryableError {
  constructor(message: string) {
    super(message, { reason: 'NegativeAmount' });
  }
}

interface Knobs {
  /** Event ids whose decision fails retryably. */
  readonly failing: Set<string>;
  /** Event ids whose side effect fails retryably (once per entry: the id is removed). */
  readonly effectFailsOnce: Set<string>;
  /** Every call of the side effect (event id), and the completed ones. */
  readonly effectCalls: string[];
  readonly effectDone: string[];
}
const knobs = (): Knobs => ({ failing: new Set(), effectFailsOnce: new Set(), effectCalls: [], effectDone: [] });

function ledger(k: Knobs): IdempotentConsumerOptions<LedgerEvent> {
  return {
    schema: LedgerEvent,
    idempotencyKey: 'eventId',
    orderingKey: 'account',
    tables,
    read: (event) => [{ table: 'accounts', key: { account: event.account } }],
    decide: (event, state) => {
      if (k.failing.has(event.eventId)) throw new Flaky(`${event.eventId} fails`);
      if (event.amount < 0) throw new NegativeAmount(`${event.eventId}: ${event.amount}`);
      const account = state.get<Account>('accounts', { account: event.account });
      const seq = account?.seq ?? 0;
      if (event.after !== undefined && seq < event.after)
        throw new PredecessorNotApplied(`${event.account} at ${seq}, needs ${event.after}`);
      return {
        writes: [
          {
            Put: {
              TableName: 'accounts',
              Item: {
                account: event.account,
                balance: (account?.balance ?? 0) + event.amount,
                seq: seq + 1,
                log: [...(account?.log ?? []), event.eventId],
              },
            },
          },
        ],
        ...(event.effect ? { sideEffects: [{ name: 'notify', input: { eventId: event.eventId } }] } : {}),
      };
    },
    sideEffects: {
      notify: async (input: unknown) => {
        const { eventId } = input as { eventId: string };
        k.effectCalls.push(eventId);
        if (k.effectFailsOnce.delete(eventId)) throw new Flaky(`notify ${eventId} fails`);
        k.effectDone.push(eventId);
      },
    },
  };
}

const ev = (eventId: string, account: string, amount = 1, extra: Partial<LedgerEvent> = {}) => ({ eventId, account, amount, ...extra });
const rec = (topic: string, partition: number, offset: number, value: Parameters<typeof kafkaRecord>[3], options = {}) =>
  kafkaRecord(topic, partition, offset, value, { key: null, ...options });

/** Asserts the response is valid for the event (as the mapping reads it) and reports, per partition, a suffix of its offsets. */
function expectValidResponse(event: KafkaEvent, response: unknown): KafkaBatchResponse {
  const verdict = readKafkaBatchResponse(response, event.records);
  expect(verdict.kind, JSON.stringify(verdict)).not.toBe('failure');
  const r = response as KafkaBatchResponse;
  for (const failure of r.batchItemFailures) {
    expect(Object.keys(failure)).toEqual(['itemIdentifier']);
    expect(Object.keys(failure.itemIdentifier).sort()).toEqual(['offset', 'partition']);
    expect(typeof failure.itemIdentifier.partition).toBe('string');
    expect(Number.isInteger(failure.itemIdentifier.offset)).toBe(true);
  }
  // Every later record of a reported partition is reported too.
  const reported = reportedByPartition(r);
  for (const [partition, offsets] of reported) {
    const min = Math.min(...offsets);
    const later = (event.records[partition] ?? []).map((x) => x.offset).filter((o) => o >= min);
    expect(
      [...offsets].sort((a, b) => a - b),
      partition,
    ).toEqual([...new Set(later)].sort((a, b) => a - b));
  }
  return r;
}

function reportedByPartition(response: KafkaBatchResponse): Map<string, number[]> {
  const map = new Map<string, number[]>();
  for (const { itemIdentifier } of response.batchItemFailures)
    map.set(itemIdentifier.partition, [...(map.get(itemIdentifier.partition) ?? []), itemIdentifier.offset]);
  return map;
}
const reportedList = (response: KafkaBatchResponse) =>
  response.batchItemFailures.map(({ itemIdentifier: i }) => `${i.partition}@${i.offset}`).sort();

/** The event with each reported partition resumed from its lowest reported offset. */
function resumed(event: KafkaEvent, response: KafkaBatchResponse): KafkaEvent {
  const lowest = new Map<string, number>();
  for (const [p, offsets] of reportedByPartition(response)) lowest.set(p, Math.min(...offsets));
  return {
    ...event,
    records: Object.fromEntries([...lowest].map(([p, o]) => [p, (event.records[p] ?? []).filter((r) => r.offset >= o)])),
  };
}

/** Runs the event, then the mapping's retries (resumed), until nothing is reported (at most `max` invocations). */
async function runToCompletion(env: ExecutionEnvironment, event: KafkaEvent, max = 8): Promise<KafkaBatchResponse[]> {
  const responses: KafkaBatchResponse[] = [];
  let current = event;
  for (let i = 0; i < max; i += 1) {
    const response = expectValidResponse(current, await env.handler(current, lambdaContext()));
    responses.push(response);
    if (response.batchItemFailures.length === 0) break;
    current = resumed(current, response);
  }
  return responses;
}

/** Every record of the batch is reported exactly when its outcome is `retried` (none settled and reported, none unsettled and unreported). */
function expectEveryRecordAccounted(
  event: KafkaEvent,
  response: KafkaBatchResponse,
  outcomes: readonly { messageId: string; outcome: string }[],
) {
  const reported = new Set(reportedList(response));
  const byId = new Map(outcomes.map((o) => [o.messageId, o.outcome]));
  for (const [partition, records] of Object.entries(event.records))
    for (const r of records) {
      const idOf = `${partition}@${r.offset}`;
      expect(byId.has(idOf), `${idOf} has an outcome`).toBe(true);
      expect(reported.has(idOf), `${idOf} (${byId.get(idOf)}) reported`).toBe(byId.get(idOf) === 'retried');
    }
}

/** Every dead letter seen so far (the DLQ receive hides them for 30 s, so they are kept). */
function dlqReader(env: () => TestResources) {
  const seen: Message[] = [];
  return async (): Promise<Message[]> => {
    seen.push(...(await deadLetters(env())));
    return seen;
  };
}
const coordinatesOf = (m: Message | undefined) => {
  const text = deadLetterAttribute(m, 'coordinates');
  return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
};
const deadAt = (messages: Message[], topic: string, partition: number, offset: number) =>
  messages.filter((m) => {
    const c = coordinatesOf(m);
    return c?.topic === topic && c?.partition === partition && c?.offset === offset;
  });

describe('Kafka attacks on a ledger consumer', () => {
  let env: TestResources;
  const dlq = dlqReader(() => env);
  beforeAll(async () => {
    env = await testResources('kafka-attacks', tables, { consumerName: 'ledger' });
  });
  afterAll(() => env?.dispose());

  const account = (name: string) => storedItem<Account>(env, 'accounts', { account: name });

  it('several topics and partitions, a retryable and a poison record: exactly the failed partitions suffixes are reported; all applied once after the retry', async () => {
    const k = knobs();
    k.failing.add('a5');
    k.failing.add('d0');
    const e = consumerEnvironment(env, ledger(k));
    const event = mskEvent(
      ...[3, 4, 5, 6, 7].map((o) => rec('alpha', 0, o, ev(`a${o}`, 'T1-a'))),
      ...[0, 1, 2, 3].map((o) => rec('alpha', 1, o, ev(`b${o}`, 'T1-b', o === 1 ? -1 : 1))),
      ...[10, 11].map((o) => rec('beta.x', 2, o, ev(`c${o}`, 'T1-c'))),
      // topic "alpha-1", partition 0: key "alpha-1-0", not to be confused with alpha partition 1.
      ...[0, 1].map((o) => rec('alpha-1', 0, o, ev(`d${o}`, 'T1-d'))),
    );
    const first = expectValidResponse(event, await e.handler(event, lambdaContext()));
    expect(reportedList(first)).toEqual(['alpha-0@5', 'alpha-0@6', 'alpha-0@7', 'alpha-1-0@0', 'alpha-1-0@1']);
    expect((await account('T1-a'))?.log).toEqual(['a3', 'a4']);
    expect((await account('T1-b'))?.log).toEqual(['b0', 'b2', 'b3']);
    expect((await account('T1-c'))?.log).toEqual(['c10', 'c11']);
    expect(await account('T1-d')).toBeUndefined();

    k.failing.clear();
    const rest = await runToCompletion(e, resumed(event, first));
    expect(rest.at(-1)).toEqual({ batchItemFailures: [] });
    expect((await account('T1-a'))?.log).toEqual(['a3', 'a4', 'a5', 'a6', 'a7']);
    expect((await account('T1-b'))?.log).toEqual(['b0', 'b2', 'b3']);
    expect((await account('T1-d'))?.log).toEqual(['d0', 'd1']);
    const poison = deadAt(await dlq(), 'alpha', 1, 1);
    expect(poison).toHaveLength(1);
    expect(deadLetterAttribute(poison[0], 'failureReason')).toBe('NegativeAmount');
    expect(poison[0]?.Body).toBe(JSON.stringify(ev('b1', 'T1-b', -1)));
    expect(await inboxRowOf(env, 'b1')).toMatchObject({ status: 'dead-lettered' });
  });

  it('the same whole batch invoked again (a retry after a timeout) with some records committed: each applied once, the poison only ever dead-lettered (with its reason)', async () => {
    const k = knobs();
    k.failing.add('r2');
    const event = mskEvent(
      ...[0, 1, 2, 3].map((o) => rec('replay', 0, o, ev(`r${o}`, 'T2'))),
      rec('replay', 1, 0, ev('rn', 'T2n', -5)),
      rec('replay', 1, 1, ev('rm', 'T2n', 3)),
    );
    const first = expectValidResponse(event, await consumerEnvironment(env, ledger(k)).handler(event, lambdaContext()));
    expect(reportedList(first)).toEqual(['replay-0@2', 'replay-0@3']);
    k.failing.clear();
    // The mapping never saw the response (timeout): the whole batch again, in another environment, twice.
    for (let i = 0; i < 2; i += 1) {
      const envx = consumerEnvironment(env, ledger(k));
      const again = await envx.handler(event, lambdaContext());
      expect(envx.outcomes.find((o) => o.messageId === 'replay-1@0')).toMatchObject({ outcome: 'dead-lettered', reason: 'NegativeAmount' });
      expect(expectValidResponse(event, again)).toEqual({ batchItemFailures: [] });
    }
    expect(await account('T2')).toMatchObject({ balance: 4, log: ['r0', 'r1', 'r2', 'r3'] });
    expect(await account('T2n')).toMatchObject({ balance: 3, log: ['rm'] });
    // The DLQ is written at least once (docs/proof.md, "a dead letter sent more than once"): each
    // replay of the batch sends the poison again, always with its reason, never applied.
    const copies = deadAt(await dlq(), 'replay', 1, 0);
    expect(copies.length).toBeGreaterThanOrEqual(1);
    for (const copy of copies) expect(deadLetterAttribute(copy, 'failureReason')).toBe('NegativeAmount');
    expect(await inboxRowOf(env, 'rn')).toMatchObject({ status: 'dead-lettered', reason: 'NegativeAmount' });
  });

  it('values that cannot be events (tombstone, absent, empty, not JSON, not UTF-8, NUL, huge) are dead-lettered as ValidationError byte for byte; the partition goes on', async () => {
    const k = knobs();
    const e = consumerEnvironment(env, ledger(k));
    const absent = rec('odd', 0, 1, ev('x', 'x'));
    delete (absent as { value?: unknown }).value;
    const raw = (offset: number, bytes: Buffer, options: Partial<KafkaRecord> = {}): KafkaRecord => ({
      ...rec('odd', 0, offset, 'x'),
      value: bytes.toString('base64'),
      ...options,
    });
    const hugeText = `not json ${'z'.repeat(1_100_000)}`;
    const binaryKey = Buffer.from([0x00, 0xff, 0x10, 0x80]);
    const headers: Record<string, number[]>[] = [
      { 'trace-id': [...Buffer.from('abc-123')] },
      { bin: [0, 255, 1] },
      { 'trace-id': [...Buffer.from('second')] },
    ];
    const event = mskEvent(
      rec('odd', 0, 0, null),
      absent,
      raw(2, Buffer.alloc(0)),
      rec('odd', 0, 3, 'not json {'),
      raw(4, Buffer.from([0xff, 0xfe, 0x41])),
      raw(5, Buffer.from('{"eventId":"nul\u0000","account":"T3","amount":1}', 'utf8')),
      { ...rec('odd', 0, 6, ev('o6', 'T3', 1, { pad: 'é✓'.repeat(50_000) })), key: binaryKey.toString('base64'), headers },
      rec('odd', 0, 7, hugeText, { headers }),
      rec('odd', 0, 8, ev('o8', 'T3')),
    );
    const response = expectValidResponse(event, await e.handler(event, lambdaContext()));
    expect(response).toEqual({ batchItemFailures: [] });
    expect((await account('T3'))?.log).toEqual(['o6', 'o8']);
    const dead = await dlq();
    for (const offset of [0, 1, 2, 3, 4, 5, 7]) {
      const at = deadAt(dead, 'odd', 0, offset);
      expect(at, `odd-0@${offset}`).toHaveLength(1);
      expect(deadLetterAttribute(at[0], 'failureReason'), `odd-0@${offset}`).toBe('ValidationError');
    }
    expect(deadAt(dead, 'odd', 0, 6)).toHaveLength(0);
    expect(deadAt(dead, 'odd', 0, 8)).toHaveLength(0);
    expect(deadAt(dead, 'odd', 0, 3)[0]?.Body).toBe('not json {');
    const notUtf8 = deadAt(dead, 'odd', 0, 4)[0];
    expect(notUtf8?.Body).toBe(Buffer.from([0xff, 0xfe, 0x41]).toString('base64'));
    expect(deadLetterAttribute(notUtf8, 'bodyEncoding')).toBe('base64');
    expect(Buffer.from(String(deadAt(dead, 'odd', 0, 5)[0]?.Body), 'base64').toString('utf8')).toContain('nul\u0000');
    // The huge one: offloaded to S3, the object holds the value's text exactly, and the headers are kept.
    const huge = deadAt(dead, 'odd', 0, 7)[0];
    expect(String(huge?.Body).startsWith('["software.amazon.payloadoffloading.PayloadS3Pointer"')).toBe(true);
    const pointer = JSON.parse(String(huge?.Body)) as [string, { s3BucketName: string; s3Key: string }];
    const object = await env.s3.send(new GetObjectCommand({ Bucket: pointer[1].s3BucketName, Key: pointer[1].s3Key }));
    expect(await object.Body?.transformToString('utf8')).toBe(hugeText);
    expect(huge?.MessageAttributes?.['trace-id']?.StringValue).toBe('abc-123');
    expect(huge?.MessageAttributes?.bin?.BinaryValue ? [...huge.MessageAttributes.bin.BinaryValue] : undefined).toEqual([0, 255, 1]);
    expect(await inboxRowOf(env, 'o6')).toMatchObject({ status: 'applied', messageId: 'odd-0@6' });
  });

  it('replaying a batch of undecodable values dead-letters them again (at least once), each copy ValidationError, the valid one applied once', async () => {
    const k = knobs();
    const event = mskEvent(rec('odd2', 0, 0, null), rec('odd2', 0, 1, 'not json'), rec('odd2', 0, 2, ev('q2', 'T3b')));
    for (let i = 0; i < 2; i += 1)
      expect(expectValidResponse(event, await consumerEnvironment(env, ledger(k)).handler(event, lambdaContext()))).toEqual({
        batchItemFailures: [],
      });
    const dead = await dlq();
    for (const offset of [0, 1]) {
      const copies = deadAt(dead, 'odd2', 0, offset);
      expect(copies.length, `odd2-0@${offset}`).toBeGreaterThanOrEqual(1);
      for (const copy of copies) expect(deadLetterAttribute(copy, 'failureReason')).toBe('ValidationError');
    }
    expect((await account('T3b'))?.log).toEqual(['q2']);
  });

  it('the same idempotency key in two partitions of one batch: applied once; a different payload under it is a conflict, dead-lettered once', async () => {
    const k = knobs();
    const e = consumerEnvironment(env, ledger(k));
    const event = mskEvent(
      rec('dup', 0, 0, ev('same-1', 'T4', 5)),
      rec('dup', 1, 0, ev('same-1', 'T4', 5)),
      rec('dup', 0, 1, ev('same-2', 'T4', 7)),
      rec('dup', 1, 1, ev('same-2', 'T4', 8)),
      rec('dup', 1, 2, ev('same-3', 'T4b', 1, { effect: true })),
      rec('dup', 0, 2, ev('same-3', 'T4b', 1, { effect: true })),
    );
    const responses = await runToCompletion(e, event);
    expect(responses.at(-1)).toEqual({ batchItemFailures: [] });
    const t4 = await account('T4');
    expect(t4?.log.filter((x) => x === 'same-1')).toHaveLength(1);
    expect(t4?.log.filter((x) => x === 'same-2')).toHaveLength(1);
    expect([12, 13]).toContain(t4?.balance);
    expect((await account('T4b'))?.log).toEqual(['same-3']);
    expect(k.effectDone).toEqual(['same-3']);
    const dead = await dlq();
    const conflicts = [...deadAt(dead, 'dup', 0, 1), ...deadAt(dead, 'dup', 1, 1)];
    expect(conflicts).toHaveLength(1);
    expect(deadLetterAttribute(conflicts[0], 'failureReason')).toBe('IdempotencyConflict');
    expect([
      ...deadAt(dead, 'dup', 0, 0),
      ...deadAt(dead, 'dup', 1, 0),
      ...deadAt(dead, 'dup', 0, 2),
      ...deadAt(dead, 'dup', 1, 2),
    ]).toEqual([]);
  });

  it('offsets out of order within a partition: applied in offset order; a failure reports that record and the later offsets only', async () => {
    const k = knobs();
    const e = consumerEnvironment(env, ledger(k));
    const event = mskEvent(
      rec('ooo', 0, 12, ev('o12', 'T5', 1, { after: 2 })),
      rec('ooo', 0, 10, ev('o10', 'T5')),
      rec('ooo', 0, 11, ev('o11', 'T5', 1, { after: 1 })),
    );
    expect(expectValidResponse(event, await e.handler(event, lambdaContext()))).toEqual({ batchItemFailures: [] });
    expect((await account('T5'))?.log).toEqual(['o10', 'o11', 'o12']);

    k.failing.add('p21');
    const second = mskEvent(
      rec('ooo', 1, 22, ev('p22', 'T5b')),
      rec('ooo', 1, 20, ev('p20', 'T5b')),
      rec('ooo', 1, 23, ev('p23', 'T5c')),
      rec('ooo', 1, 21, ev('p21', 'T5b')),
    );
    const response = expectValidResponse(second, await e.handler(second, lambdaContext()));
    expect(reportedList(response)).toEqual(['ooo-1@21', 'ooo-1@22', 'ooo-1@23']);
    expect((await account('T5b'))?.log).toEqual(['p20']);
    expect(await account('T5c')).toBeUndefined();
  });

  it('a record failing past its attempt budget is dead-lettered RetriesExhausted with its coordinates and body byte for byte, never applied afterwards', async () => {
    const k = knobs();
    k.failing.add('rx-1');
    const body = '{ "eventId" : "rx-1",\n  "account":"T6", "amount": 4, "note": "é✓ \\u00e9" }  ';
    const event = mskEvent(rec('rx', 0, 40, body, { key: 'T6' }), rec('rx', 0, 41, ev('rx-2', 'T6', 1)));
    const responses: KafkaBatchResponse[] = [];
    let current = event;
    for (let i = 0; i < 7 && (i === 0 || responses.at(-1)!.batchItemFailures.length > 0); i += 1) {
      const response = expectValidResponse(current, await consumerEnvironment(env, ledger(k)).handler(current, lambdaContext()));
      responses.push(response);
      current = resumed(current, response);
    }
    expect(responses.at(-1)).toEqual({ batchItemFailures: [] });
    expect(responses.slice(0, 4).map(reportedList)).toEqual(Array(4).fill(['rx-0@40', 'rx-0@41']));
    const exhausted = deadAt(await dlq(), 'rx', 0, 40);
    expect(exhausted).toHaveLength(1);
    expect(exhausted[0]?.Body).toBe(body);
    expect(deadLetterAttribute(exhausted[0], 'failureReason')).toBe('RetriesExhausted');
    expect(deadLetterAttribute(exhausted[0], 'attempts')).toBe('5');
    expect(coordinatesOf(exhausted[0])).toMatchObject({ topic: 'rx', partition: 0, offset: 40, key: 'T6' });
    expect((await account('T6'))?.log).toEqual(['rx-2']);
    // The mapping sends the batch again (a timeout), now the failure is gone: still never applied.
    k.failing.clear();
    expect(expectValidResponse(event, await consumerEnvironment(env, ledger(k)).handler(event, lambdaContext()))).toEqual({
      batchItemFailures: [],
    });
    expect((await account('T6'))?.log).toEqual(['rx-2']);
    for (const copy of deadAt(await dlq(), 'rx', 0, 40)) expect(deadLetterAttribute(copy, 'failureReason')).toBe('RetriesExhausted');
    expect(await inboxRowOf(env, 'rx-1')).toMatchObject({ status: 'dead-lettered', reason: 'RetriesExhausted' });
  });

  it('PredecessorNotApplied stops its partition (later records of other keys included) while another partition applies the predecessor', async () => {
    const k = knobs();
    const e = consumerEnvironment(env, ledger(k));
    const event = mskEvent(
      rec('pna', 0, 0, ev('p-2', 'T7', 1, { after: 1 })),
      rec('pna', 0, 1, ev('p-x', 'T7x')),
      rec('pna', 0, 2, ev('p-3', 'T7', 1, { after: 2 })),
      rec('pna', 1, 5, ev('p-1', 'T7')),
      rec('pna', 2, 0, ev('p-9', 'T7y', 1, { after: 1 })),
      rec('pna', 2, 1, ev('p-8', 'T7y')),
    );
    const first = expectValidResponse(event, await e.handler(event, lambdaContext()));
    const reported = reportedList(first);
    // pna-2@0 waits for a predecessor that comes after it in its own partition: it and 1 are reported.
    expect(reported).toEqual(expect.arrayContaining(['pna-2@0', 'pna-2@1']));
    expect(reported.filter((r) => r.startsWith('pna-1'))).toEqual([]);
    if (reported.some((r) => r.startsWith('pna-0'))) {
      expect(reported.filter((r) => r.startsWith('pna-0'))).toEqual(['pna-0@0', 'pna-0@1', 'pna-0@2']);
      expect(await account('T7x')).toBeUndefined();
    }
    expect(await account('T7y')).toBeUndefined();
    const rest = await runToCompletion(e, resumed(event, first), 3);
    expect(
      rest
        .at(-1)
        ?.batchItemFailures.map((f) => f.itemIdentifier.partition)
        .filter((p) => p !== 'pna-2'),
    ).toEqual([]);
    expect((await account('T7'))?.log).toEqual(['p-1', 'p-2', 'p-3']);
    expect((await account('T7x'))?.log).toEqual(['p-x']);
    // pna-2 is stuck behind p-9 (its predecessor is behind it): never skipped, never applied out of order.
    expect(await account('T7y')).toBeUndefined();
  });

  it('side effects requested by Kafka records run at most once across replays, environments and a retried effect', async () => {
    const k = knobs();
    k.failing.add('fx-2');
    k.effectFailsOnce.add('fx-3');
    const event = mskEvent(
      rec('fx', 0, 0, ev('fx-1', 'T8', 1, { effect: true })),
      rec('fx', 0, 1, ev('fx-2', 'T8', 1, { effect: true })),
      rec('fx', 1, 0, ev('fx-3', 'T8b', 1, { effect: true })),
      rec('fx', 1, 1, ev('fx-4', 'T8b', 1, { effect: true })),
    );
    const first = expectValidResponse(event, await consumerEnvironment(env, ledger(k)).handler(event, lambdaContext()));
    expect(reportedList(first)).toContain('fx-0@1');
    expect(reportedList(first)).not.toContain('fx-0@0');
    k.failing.clear();
    for (let i = 0; i < 3; i += 1) {
      const e = consumerEnvironment(env, ledger(k));
      await runToCompletion(e, event, 4);
    }
    expect([...k.effectDone].sort()).toEqual(['fx-1', 'fx-2', 'fx-3', 'fx-4']);
    expect((await account('T8'))?.log).toEqual(['fx-1', 'fx-2']);
    expect((await account('T8b'))?.log).toEqual(['fx-3', 'fx-4']);
    expect(k.effectCalls.filter((x) => x !== 'fx-3').sort()).toEqual(['fx-1', 'fx-2', 'fx-4']);
    expect(deadAt(await dlq(), 'fx', 1, 0)).toEqual([]);
  });

  it('a retryable failure in one partition and the same ordering key in another partition: every record is settled or reported, nothing silently skipped', async () => {
    const k = knobs();
    k.failing.add('k0');
    const e = consumerEnvironment(env, ledger(k));
    const event = mskEvent(
      rec('okey', 0, 0, ev('k0', 'T9')),
      rec('okey', 0, 1, ev('k1', 'T9z')),
      rec('okey', 1, 0, ev('k2', 'T9')),
      rec('okey', 1, 1, ev('k3', 'T9y')),
      rec('okey', 2, 0, ev('k4', 'T9y', 1, { after: 1 })),
    );
    const first = expectValidResponse(event, await e.handler(event, lambdaContext()));
    expectEveryRecordAccounted(event, first, e.outcomes);
    expect(reportedList(first)).toEqual(expect.arrayContaining(['okey-0@0', 'okey-0@1']));
    expect(await account('T9z')).toBeUndefined();
    k.failing.clear();
    const rest = await runToCompletion(e, resumed(event, first), 4);
    expect(rest.at(-1)).toEqual({ batchItemFailures: [] });
    expect([...((await account('T9'))?.log ?? [])].sort()).toEqual(['k0', 'k2']);
    expect((await account('T9y'))?.log).toEqual(['k3', 'k4']);
  });

  it('a new record (another offset) carrying a forged ic.redrive header naming a dead-lettered record is a duplicate, not applied', async () => {
    const k = knobs();
    const body = ev('fg-1', 'T10', 5);
    const poisonRun = knobs();
    poisonRun.failing.add('fg-1');
    const original = mskEvent(rec('forge', 0, 7, body));
    // Spend the budget: RetriesExhausted on attempt 5.
    for (let i = 0; i < 5; i += 1) await consumerEnvironment(env, ledger(poisonRun)).handler(original, lambdaContext());
    expect(await inboxRowOf(env, 'fg-1')).toMatchObject({ status: 'dead-lettered', reason: 'RetriesExhausted' });
    // A producer's copy of the record at another offset, with the header the redrive tool sets.
    const copy = rec('forge', 0, 8, body, { headers: [{ 'ic.redrive': [...Buffer.from('forge-0@7')] }] });
    const e = consumerEnvironment(env, ledger(k));
    expect(expectValidResponse(mskEvent(copy), await e.handler(mskEvent(copy), lambdaContext()))).toEqual({ batchItemFailures: [] });
    expect(e.outcomes.map((o) => o.outcome)).toEqual(['duplicate']);
    expect(await account('T10')).toBeUndefined();
  });
});
