/**
 * Attacks on parking (`retry.parkOutOfOrder`) and inbox marks on home items (`inboxHome`),
 * alone and together, on a consumer of its own (parcels through numbered steps, a ledger that
 * counts each event's applications with `ADD`), against DynamoDB Local and the SQS server.
 * Expected: every event applied exactly once (ledger n = 1), nothing applied is dead-lettered,
 * every message ends applied, a duplicate, or in the DLQ with its reason.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import {
  BusinessRuleViolation,
  type IdempotentConsumerOptions,
  type Item,
  PredecessorNotApplied,
  RetryableError,
  type SideEffectContext,
  type TableDefinition,
  type Write,
} from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import { consumerEnvironment, inboxRowOf, outcomeList, RecordingLogger, sourceRecord, storedItem } from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { parkedIds } from '../support/parkHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { awsClients, describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a consumer with tables of its own and parking on');

const id = z.string().min(1).max(128);
const ParcelEvent = z.object({
  eventId: id,
  parcelId: id,
  step: z.number().int().min(0),
  /** step (default): apply step n on step n − 1; reset: delete the parcel; poison: a business rule violation; move: delete this parcel, put `target` blindly at `step`. */
  op: z.enum(['step', 'reset', 'poison', 'move', 'wipe']).optional(),
  /** For wipe: how the decision tries to erase the marks. */
  how: z.enum(['literal', 'alias', 'path', 'put', 'stub']).optional(),
  /** Ordering key (default: the parcel). */
  group: z.string().optional(),
  /** Ask for the `notify` side effect. */
  effect: z.boolean().optional(),
  target: z.string().optional(),
});
type ParcelEvent = z.infer<typeof ParcelEvent>;
type Parcel = { pk: string; step: number };
const tables = {
  parcels: { partitionKey: 'pk' },
  ledger: { partitionKey: 'pk' },
} as const satisfies Record<string, TableDefinition>;
const parcelKey = (parcelId: string) => ({ pk: `parcel#${parcelId}` });

class Flaky extends RetryableError {
  override readonly name = 'Flaky';
}

interface Knobs {
  /** Event ids whose decision throws a retryable error now. */
  readonly flaky: Set<string>;
  /** Side effect starts, by event id. */
  readonly effects: string[];
}

type Mode = 'parcel' | 'event' | 'rows';
/** The home of an event: its parcel ('parcel'), an item of its own that nothing else writes ('event': always a stub), none ('rows'). */
const homeKey = (mode: Mode, event: ParcelEvent) => (mode === 'event' ? { pk: `ehome#${event.eventId}` } : parcelKey(event.parcelId));

function consumer(knobs: Knobs, mode: Mode, rowsUntil?: Date) {
  const sideEffects = {
    notify: async (input: { eventId: string }, _context: SideEffectContext<keyof typeof tables>) => {
      knobs.effects.push(input.eventId);
    },
  };
  const options: IdempotentConsumerOptions<ParcelEvent, keyof typeof tables, typeof sideEffects> = {
    schema: ParcelEvent,
    idempotencyKey: 'eventId',
    orderingKey: (event) => event.group ?? event.parcelId,
    tables,
    ...(mode !== 'rows'
      ? {
          inboxHome: {
            table: 'parcels' as const,
            key: (event: ParcelEvent) => homeKey(mode, event),
            ...(rowsUntil === undefined ? {} : { rowsUntil }),
          },
        }
      : {}),
    read: (event) => [{ table: 'parcels', key: parcelKey(event.parcelId) }],
    decide: (event, state) => {
      if (knobs.flaky.has(event.eventId)) throw new Flaky(`${event.eventId} fails for now`);
      const parcel = state.get<Parcel>('parcels', parcelKey(event.parcelId));
      const ledger: Write<keyof typeof tables> = {
        Update: {
          TableName: 'ledger',
          Key: { pk: `ledger#${event.eventId}` },
          UpdateExpression: 'ADD n :one',
          ExpressionAttributeValues: { ':one': 1 },
        },
      };
      const op = event.op ?? 'step';
      if (op === 'poison') throw new BusinessRuleViolation(`${event.eventId} is poison`);
      if (op === 'reset') return { writes: [{ Delete: { TableName: 'parcels', Key: parcelKey(event.parcelId) } }, ledger] };
      if (op === 'wipe') {
        const key = parcelKey(event.parcelId);
        const update = (expression: string, names?: Record<string, string>): Write<keyof typeof tables> => ({
          Update: {
            TableName: 'parcels',
            Key: key,
            UpdateExpression: expression,
            ...(names === undefined ? {} : { ExpressionAttributeNames: names }),
          },
        });
        const how = event.how ?? 'literal';
        const write: Write<keyof typeof tables> =
          how === 'literal'
            ? update('REMOVE _inbox')
            : how === 'alias'
              ? update('REMOVE #zz', { '#zz': '_inbox' })
              : how === 'path'
                ? update('REMOVE #a.#b', { '#a': '_inbox', '#b': `hatk#${event.parcelId}-1` })
                : how === 'stub'
                  ? update('SET #s = :t', { '#s': '_inboxStub' })
                  : { Put: { TableName: 'parcels', Item: { ...key, step: parcel?.step ?? 0, _inbox: {} } } };
        if (how === 'stub') (write as { Update: Record<string, unknown> }).Update.ExpressionAttributeValues = { ':t': true };
        return { writes: [write, ledger] };
      }
      if (op === 'move') {
        return {
          writes: [
            { Delete: { TableName: 'parcels', Key: parcelKey(event.parcelId) } },
            { Put: { TableName: 'parcels', Item: { ...parcelKey(event.target!), step: event.step } } },
            ledger,
          ],
        };
      }
      const at = parcel?.step ?? 0;
      if (event.step > at + 1) throw new PredecessorNotApplied(`parcel ${event.parcelId} at ${at}, ${event.step} waits`);
      if (event.step <= at) throw new BusinessRuleViolation(`parcel ${event.parcelId} is past step ${event.step}`);
      return {
        writes: [{ Put: { TableName: 'parcels', Item: { ...parcelKey(event.parcelId), step: event.step } } }, ledger],
        ...(event.effect === true ? { sideEffects: [{ name: 'notify' as const, input: { eventId: event.eventId } }] } : {}),
      };
    },
    sideEffects,
  };
  return options;
}

const ev = (parcelId: string, step: number, extra: Partial<ParcelEvent> = {}): ParcelEvent => ({
  eventId: `${parcelId}-${step}${extra.op !== undefined && extra.op !== 'step' ? `-${extra.op}` : ''}`,
  parcelId,
  step,
  ...extra,
});

/** How many times the event was applied (its ledger count). */
async function appliedTimes(env: TestResources, eventId: string): Promise<number> {
  const item = await storedItem(env, 'ledger', { pk: `ledger#${eventId}` });
  return Number(item?.n ?? 0);
}

/** A client that runs `before` once just before the `nth` (1-based) TransactWriteItems that is not a pure ConditionCheck preflight. */
function clientBeforeCommit(nth: number, before: () => Promise<void>): { dynamoDb: DynamoDBClient; ran: () => boolean; destroy(): void } {
  const clients = awsClients();
  let seen = 0;
  let ran = false;
  clients.dynamoDb.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand') {
        const items = ((args.input as { TransactItems?: Record<string, unknown>[] }).TransactItems ?? []) as Record<string, unknown>[];
        if (!items.every((item) => item.ConditionCheck !== undefined)) {
          seen += 1;
          if (seen === nth && !ran) {
            ran = true;
            await before();
          }
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'beforeCommit' },
  );
  return { dynamoDb: clients.dynamoDb, ran: () => ran, destroy: () => clients.destroy() };
}

/** A client whose BatchGetItem of park items fails (as a throttled park read would). */
function clientFailingParkReads(env: TestResources): { dynamoDb: DynamoDBClient; failed: () => number; destroy(): void } {
  const clients = awsClients();
  let failed = 0;
  clients.dynamoDb.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'BatchGetItemCommand' && JSON.stringify(args.input).includes('#park#')) {
        failed += 1;
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $retryable: {} });
      }
      return next(args);
    },
    { step: 'initialize', name: 'failParkReads' },
  );
  void env;
  return { dynamoDb: clients.dynamoDb, failed: () => failed, destroy: () => clients.destroy() };
}

for (const mode of ['parcel', 'event', 'rows'] as const) {
  const withHome = mode === 'parcel';
  describe(`attacks: parking with ${mode === 'rows' ? 'inbox rows' : `inboxHome on the ${mode}`}`, () => {
    let env: TestResources;
    const knobs: Knobs = { flaky: new Set(), effects: [] };
    const options = consumer(knobs, mode);
    const MAX = 3;
    beforeAll(async () => {
      env = await testResources(`hatk-${mode}`, tables, {
        consumerName: 'hatk',
        retry: { parkOutOfOrder: true, backoffBaseSeconds: 1, maxAttempts: MAX },
        idempotency: { sideEffectMinRemainingMs: 50 },
      });
    });
    afterAll(() => env?.dispose());

    const rec = (messageId: string, event: ParcelEvent, receiveCount = 1): SQSRecord =>
      sourceRecord(env, messageId, event, { receiveCount });
    const deliver = async (environment: ReturnType<typeof consumerEnvironment>, ...records: SQSRecord[]) =>
      (await environment.handler(sqsEvent(...records), lambdaContext())) as SQSBatchResponse;
    const dlqOf = async (...messageIds: string[]) =>
      (await deadLetters(env))
        .filter((m) => messageIds.includes(deadLetterAttribute(m, 'originalMessageId') ?? ''))
        .map((m) => `${deadLetterAttribute(m, 'originalMessageId')}:${deadLetterAttribute(m, 'failureReason')}`)
        .sort();
    const p = mode === 'parcel' ? 'H' : mode === 'event' ? 'E' : 'R';

    it('a chain of 4 parked in reverse order (one with a side effect), then the first: all applied once in its invocation; a batch of copies with a new successor, cold: duplicates, the successor applied', async () => {
      const parcel = `${p}chain`;
      const a = consumerEnvironment(env, options);
      for (const n of [4, 3, 2]) {
        const r = await deliver(a, rec(`m-${parcel}-${n}`, ev(parcel, n, n === 3 ? { effect: true } : {})));
        expect(r.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([`m-${parcel}-${n}`]);
      }
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`, `m-${parcel}-3`, `m-${parcel}-4`]);
      const b = consumerEnvironment(env, options);
      expect(await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)))).toEqual({ batchItemFailures: [] });
      expect(outcomeList(b.outcomes)).toEqual([1, 2, 3, 4].map((n) => `m-${parcel}-${n}:applied`));
      expect(await parkedIds(env, parcel)).toEqual([]);
      expect(knobs.effects.filter((e) => e === `${parcel}-3`)).toHaveLength(1);
      // Copies of all four (their wake-ups) and a fifth step, in one batch, cold.
      const c = consumerEnvironment(env, options);
      const r = await deliver(
        c,
        ...[4, 3, 2, 1].map((n) => rec(`m-${parcel}-${n}`, ev(parcel, n, n === 3 ? { effect: true } : {}), 2)),
        rec(`m-${parcel}-5`, ev(parcel, 5)),
      );
      console.info(
        `[${p}] chain copies: ${JSON.stringify(c.outcomes.map((o) => [o.messageId, o.outcome, o.reason, o.errorType, o.errorMessage]))} ledger1=${await appliedTimes(env, `${parcel}-1`)}`,
      );
      expect(r).toEqual({ batchItemFailures: [] });
      expect(outcomeList(c.outcomes).sort()).toEqual([...[1, 2, 3, 4].map((n) => `m-${parcel}-${n}:duplicate`), `m-${parcel}-5:applied`]);
      for (const n of [1, 2, 3, 4, 5]) expect(await appliedTimes(env, `${parcel}-${n}`)).toBe(1);
      expect(knobs.effects.filter((e) => e === `${parcel}-3`)).toHaveLength(1);
      if (withHome) {
        const stored = (await storedItem(env, 'parcels', parcelKey(parcel))) as Item;
        expect(Object.keys(stored._inbox as object).sort()).toEqual([1, 2, 3, 4, 5].map((n) => `hatk#${parcel}-${n}`));
        expect(await inboxRowOf(env, `${parcel}-2`)).toBeUndefined();
      }
      if (mode === 'event') {
        for (const n of [1, 2, 3, 4, 5]) {
          const stub = (await storedItem(env, 'parcels', { pk: `ehome#${parcel}-${n}` })) as Item;
          expect(stub._inboxStub).toBe(true);
          expect(Object.keys(stub._inbox as object)).toEqual([`hatk#${parcel}-${n}`]);
        }
      }
    });

    it('a copy of an applied step whose decision now throws BusinessRuleViolation (the parcel moved on), alone and beside a new step: a duplicate, not dead-lettered', async () => {
      const parcel = `${p}dupviol`;
      const a = consumerEnvironment(env, options);
      for (const n of [1, 2]) await deliver(a, rec(`m-${parcel}-${n}`, ev(parcel, n)));
      expect(outcomeList(a.outcomes)).toEqual([`m-${parcel}-1:applied`, `m-${parcel}-2:applied`]);
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1), 2));
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${parcel}-1`, ev(parcel, 1), 3), rec(`m-${parcel}-3`, ev(parcel, 3)));
      console.info(
        `[${p}] dupviol: alone ${JSON.stringify(b.outcomes.map((o) => [o.outcome, o.reason]))}, beside ${JSON.stringify(c.outcomes.map((o) => [o.messageId, o.outcome, o.reason]))}`,
      );
      expect(outcomeList(b.outcomes)).toEqual([`m-${parcel}-1:duplicate`]);
      expect(outcomeList(c.outcomes).sort()).toEqual([`m-${parcel}-1:duplicate`, `m-${parcel}-3:applied`]);
      expect(await appliedTimes(env, `${parcel}-1`)).toBe(1);
      expect(await dlqOf(`m-${parcel}-1`)).toEqual([]);
    });

    it('a duplicate that is now a successor (its parcel was reset): a duplicate, never parked into a re-application nor dead-lettered', async () => {
      const parcel = `${p}dupsucc`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-1`, ev(parcel, 1)));
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      await deliver(a, rec(`m-${parcel}-reset`, ev(parcel, 0, { op: 'reset' })));
      expect(outcomeList(a.outcomes)).toEqual([`m-${parcel}-1:applied`, `m-${parcel}-2:applied`, `m-${parcel}-reset:applied`]);
      // Step 2 again (a redelivery), cold: on the state it waits for step 1, but it was applied.
      const b = consumerEnvironment(env, options);
      const first = await deliver(b, rec(`m-${parcel}-2`, ev(parcel, 2), 2));
      const firstOutcome = b.outcomes.at(-1);
      // Then step 1 is re-created by a new event (another id, same body shape): what waits behind it is taken up.
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${parcel}-1b`, { ...ev(parcel, 1), eventId: `${parcel}-1b` }));
      // The copy's last receive, whatever happened.
      const d = consumerEnvironment(env, options);
      await deliver(d, rec(`m-${parcel}-2`, ev(parcel, 2), MAX));
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([]);
      expect(
        [...b.outcomes, ...c.outcomes, ...d.outcomes]
          .filter((o) => o.messageId === `m-${parcel}-2` && o.outcome !== 'retried')
          .map((o) => o.outcome),
      ).not.toContain('applied');
      // Recorded for the report: what the first redelivery saw.
      console.info(
        `[${p}] duplicate-now-successor: first redelivery ${firstOutcome?.outcome} (${firstOutcome?.errorType ?? ''}), failures ${JSON.stringify(first.batchItemFailures)}`,
      );
      expect(firstOutcome?.outcome, 'the copy of an applied event is a duplicate at once').toBe('duplicate');
    });

    it('RetriesExhausted on the parked message while its predecessor commits (before the predecessor commit): dead-lettered once, never applied', async () => {
      const parcel = `${p}exhaust1`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`]);
      const last = consumerEnvironment(env, options);
      const hook = clientBeforeCommit(1, async () => {
        await deliver(last, rec(`m-${parcel}-2`, ev(parcel, 2), MAX));
      });
      try {
        const b = consumerEnvironment(env, options, { dynamoDb: hook.dynamoDb });
        expect(await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)))).toEqual({ batchItemFailures: [] });
        expect(hook.ran()).toBe(true);
        expect(outcomeList(last.outcomes)).toEqual([`m-${parcel}-2:dead-lettered`]);
        expect(last.outcomes[0]?.reason).toBe('RetriesExhausted');
        expect(b.outcomes.filter((o) => o.messageId === `m-${parcel}-2` && o.outcome === 'applied')).toEqual([]);
      } finally {
        hook.destroy();
      }
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(0);
      expect(await appliedTimes(env, `${parcel}-1`)).toBe(1);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([`m-${parcel}-2:RetriesExhausted`]);
      expect(await parkedIds(env, parcel)).toEqual([]);
      expect(await storedItem(env, 'parcels', parcelKey(parcel))).toMatchObject({ step: 1 });
    });

    it('RetriesExhausted on a parked message that asks a side effect, written before its predecessor commits: dead-lettered once, never applied, its effect never run', async () => {
      const parcel = `${p}exhaustfx`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true })));
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`]);
      const last = consumerEnvironment(env, options);
      const hook = clientBeforeCommit(1, async () => {
        await deliver(last, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), MAX));
      });
      try {
        const b = consumerEnvironment(env, options, { dynamoDb: hook.dynamoDb });
        expect(await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)))).toEqual({ batchItemFailures: [] });
        expect(hook.ran()).toBe(true);
        expect(last.outcomes).toMatchObject([{ outcome: 'dead-lettered', reason: 'RetriesExhausted' }]);
      } finally {
        hook.destroy();
      }
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(0);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([`m-${parcel}-2:RetriesExhausted`]);
      expect(
        knobs.effects.filter((e) => e === `${parcel}-2`),
        'the side effect of a dead-lettered, never applied message',
      ).toEqual([]);
    });

    it('deterministic: a parked message’s last receive decides before its predecessor commits, its dead-letter marker lands while the take-up holds the effect lock: the effect runs once, and the delivery that ran it warns', async () => {
      const parcel = `${p}lockfx`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true })));
      let atMarker!: () => void;
      const lAtMarker = new Promise<void>((resolve) => (atMarker = resolve));
      let release!: () => void;
      const releaseL = new Promise<void>((resolve) => (release = resolve));
      const lClients = awsClients();
      let held = false;
      lClients.dynamoDb.middlewareStack.add(
        (next, context) => async (args) => {
          if (
            !held &&
            (context.commandName === 'PutItemCommand' || context.commandName === 'TransactWriteItemsCommand') &&
            JSON.stringify(args.input).includes('dead-lettered')
          ) {
            held = true;
            atMarker();
            await releaseL;
          }
          return next(args);
        },
        { step: 'initialize', name: 'holdMarker' },
      );
      const bClients = awsClients();
      let commits = 0;
      let lockHooked = false;
      let lDone: Promise<unknown> = Promise.resolve();
      bClients.dynamoDb.middlewareStack.add(
        (next, context) => async (args) => {
          const input = args.input as { TableName?: string };
          if (context.commandName === 'TransactWriteItemsCommand' && commits === 0) {
            commits += 1;
            await lAtMarker;
          }
          if (!lockHooked && context.commandName === 'PutItemCommand' && input.TableName === env.resources.idempotencyTable) {
            lockHooked = true;
            release();
            await lDone;
          }
          return next(args);
        },
        { step: 'initialize', name: 'orchestrate' },
      );
      const last = consumerEnvironment(env, options, { dynamoDb: lClients.dynamoDb });
      const bLogger = new RecordingLogger();
      const b = consumerEnvironment(env, options, { dynamoDb: bClients.dynamoDb, logger: bLogger });
      try {
        lDone = deliver(last, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), MAX));
        await Promise.all([deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1))), lDone]);
        console.info(
          `[${p}] lockfx: held ${held}, lock hooked ${lockHooked}; b ${JSON.stringify(outcomeList(b.outcomes))}, last ${JSON.stringify(last.outcomes.map((o) => [o.outcome, o.reason]))}, effects ${knobs.effects.filter((e) => e === `${parcel}-2`).length}`,
        );
        expect(held).toBe(true);
        expect(lockHooked).toBe(true);
      } finally {
        release();
        lClients.destroy();
        bClients.destroy();
      }
      expect(await appliedTimes(env, `${parcel}-1`)).toBe(1);
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(0);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([`m-${parcel}-2:RetriesExhausted`]);
      // The documented window (README, "Side effects"): another delivery dead-lettered the message
      // while this one ran its effect. The effect ran once, and the delivery that ran it says so.
      expect(knobs.effects.filter((e) => e === `${parcel}-2`)).toEqual([`${parcel}-2`]);
      expect(bLogger.warnings).toContainEqual(
        expect.objectContaining({
          message: 'side effects ran for a message that another delivery dead-lettered meanwhile',
          idempotencyKey: `${parcel}-2`,
          sideEffects: ['notify#0'],
        }),
      );
    });

    it('deterministic, without the park: a copy of a message in a batch after its predecessor, while another copy on its last receive dead-letters it (its marker landing at the effect lock): the effect runs once, and the delivery that ran it warns', async () => {
      const parcel = `${p}lockfx2`;
      let atMarker!: () => void;
      const lAtMarker = new Promise<void>((resolve) => (atMarker = resolve));
      let release!: () => void;
      const releaseL = new Promise<void>((resolve) => (release = resolve));
      const lClients = awsClients();
      let held = false;
      lClients.dynamoDb.middlewareStack.add(
        (next, context) => async (args) => {
          if (
            !held &&
            (context.commandName === 'PutItemCommand' || context.commandName === 'TransactWriteItemsCommand') &&
            JSON.stringify(args.input).includes('dead-lettered')
          ) {
            held = true;
            atMarker();
            await releaseL;
          }
          return next(args);
        },
        { step: 'initialize', name: 'holdMarker' },
      );
      const bClients = awsClients();
      let commits = 0;
      let lockHooked = false;
      let lDone: Promise<unknown> = Promise.resolve();
      bClients.dynamoDb.middlewareStack.add(
        (next, context) => async (args) => {
          const input = args.input as { TableName?: string };
          if (context.commandName === 'TransactWriteItemsCommand' && commits === 0) {
            commits += 1;
            await lAtMarker;
          }
          if (!lockHooked && context.commandName === 'PutItemCommand' && input.TableName === env.resources.idempotencyTable) {
            lockHooked = true;
            release();
            await lDone;
          }
          return next(args);
        },
        { step: 'initialize', name: 'orchestrate' },
      );
      const last = consumerEnvironment(env, options, { dynamoDb: lClients.dynamoDb });
      const bLogger = new RecordingLogger();
      const b = consumerEnvironment(env, options, { dynamoDb: bClients.dynamoDb, logger: bLogger });
      try {
        lDone = deliver(last, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), MAX));
        await Promise.all([
          deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)), rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), 1)),
          lDone,
        ]);
        console.info(
          `[${p}] lockfx2: held ${held}, lock hooked ${lockHooked}; b ${JSON.stringify(outcomeList(b.outcomes))}, last ${JSON.stringify(last.outcomes.map((o) => [o.outcome, o.reason]))}, effects ${knobs.effects.filter((e) => e === `${parcel}-2`).length}`,
        );
        expect(held).toBe(true);
        expect(lockHooked).toBe(true);
      } finally {
        release();
        lClients.destroy();
        bClients.destroy();
      }
      expect(await appliedTimes(env, `${parcel}-1`)).toBe(1);
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(0);
      // A dead letter may be sent more than once (docs/proof.md): the reasons, deduplicated.
      expect([...new Set(await dlqOf(`m-${parcel}-2`))]).toEqual([`m-${parcel}-2:RetriesExhausted`]);
      // The documented window (README, "Side effects"): another delivery dead-lettered the message
      // while this one ran its effect. The effect ran once, and the delivery that ran it says so.
      expect(knobs.effects.filter((e) => e === `${parcel}-2`)).toEqual([`${parcel}-2`]);
      expect(bLogger.warnings).toContainEqual(
        expect.objectContaining({
          message: 'side effects ran for a message that another delivery dead-lettered meanwhile',
          idempotencyKey: `${parcel}-2`,
          sideEffects: ['notify#0'],
        }),
      );
    });

    it('the parked message’s last receive lands between its predecessor’s commit and the take-up: applied once, not dead-lettered', async () => {
      const parcel = `${p}exhaust2`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true })));
      const last = consumerEnvironment(env, options);
      // The 2nd commit of b is the take-up of the parked message.
      const hook = clientBeforeCommit(2, async () => {
        await deliver(last, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), MAX));
      });
      try {
        const b = consumerEnvironment(env, options, { dynamoDb: hook.dynamoDb });
        await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
        expect(hook.ran()).toBe(true);
        const all = [...b.outcomes, ...last.outcomes].filter((o) => o.messageId === `m-${parcel}-2`).map((o) => o.outcome);
        expect(all.filter((o) => o === 'applied')).toHaveLength(1);
        expect(all).not.toContain('dead-lettered');
      } finally {
        hook.destroy();
      }
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(knobs.effects.filter((e) => e === `${parcel}-2`)).toHaveLength(1);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([]);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('a poison predecessor: dead-lettered with its reason; the parked successor is never applied, and ends RetriesExhausted, out of the park', async () => {
      const parcel = `${p}poison`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      await deliver(a, rec(`m-${parcel}-1p`, { ...ev(parcel, 1, { op: 'poison' }), eventId: `${parcel}-1p` }));
      expect(a.outcomes.at(-1)).toMatchObject({ outcome: 'dead-lettered', reason: 'BusinessRuleViolation' });
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`]);
      for (let n = 2; n <= MAX; n += 1) await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2), n));
      expect(a.outcomes.at(-1)).toMatchObject({ outcome: 'dead-lettered', reason: 'RetriesExhausted' });
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(0);
      expect(await parkedIds(env, parcel)).toEqual([]);
      expect(await dlqOf(`m-${parcel}-2`, `m-${parcel}-1p`)).toEqual([
        `m-${parcel}-1p:BusinessRuleViolation`,
        `m-${parcel}-2:RetriesExhausted`,
      ]);
      // Nothing applied on the parcel (with inboxHome a stub holds the two dead letters' marks).
      expect((await storedItem(env, 'parcels', parcelKey(parcel)))?.step).toBeUndefined();
    });

    it('the predecessor redelivered as a duplicate after its successor parked (its first take-up missed: park read failed): the successor applied once, by the duplicate or at its wake-up', async () => {
      const parcel = `${p}dupred`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      await deliver(a, rec(`m-${parcel}-3`, ev(parcel, 3)));
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`, `m-${parcel}-3`]);
      const failing = clientFailingParkReads(env);
      try {
        const b = consumerEnvironment(env, options, { dynamoDb: failing.dynamoDb });
        await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
        expect(failing.failed()).toBeGreaterThan(0);
        expect(b.outcomes.find((o) => o.messageId === `m-${parcel}-1`)?.outcome).toBe('applied');
      } finally {
        failing.destroy();
      }
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${parcel}-1`, ev(parcel, 1), 2));
      console.info(`[${p}] duplicate predecessor took up: ${JSON.stringify(outcomeList(c.outcomes))}`);
      // Wake-ups of the successors, in order.
      await deliver(c, rec(`m-${parcel}-2`, ev(parcel, 2), 2));
      await deliver(c, rec(`m-${parcel}-3`, ev(parcel, 3), 2));
      for (const n of [1, 2, 3]) expect(await appliedTimes(env, `${parcel}-${n}`)).toBe(1);
      expect(await storedItem(env, 'parcels', parcelKey(parcel))).toMatchObject({ step: 3 });
      expect(await parkedIds(env, parcel)).toEqual([]);
      expect(await dlqOf(`m-${parcel}-1`, `m-${parcel}-2`, `m-${parcel}-3`)).toEqual([]);
    });

    it('a parked successor whose decision throws a retryable error when taken up: left in the park, not deleted, applied once at its wake-up', async () => {
      const parcel = `${p}flaky`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      knobs.flaky.add(`${parcel}-2`);
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
      expect(outcomeList(b.outcomes)).toEqual([`m-${parcel}-1:applied`]);
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`]);
      knobs.flaky.delete(`${parcel}-2`);
      await deliver(b, rec(`m-${parcel}-2`, ev(parcel, 2), 2));
      expect(outcomeList(b.outcomes)).toEqual([`m-${parcel}-1:applied`, `m-${parcel}-2:applied`]);
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('a parked successor with a side effect, taken up in one environment while its wake-up runs in another: applied once, its effect once', async () => {
      const parcel = `${p}fx`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true })));
      const b = consumerEnvironment(env, options);
      const c = consumerEnvironment(env, options);
      await Promise.all([
        deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1))),
        (async () => {
          await new Promise((resolve) => setTimeout(resolve, 30));
          await deliver(c, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), 2));
        })(),
      ]);
      // Whatever the race, a last receive later.
      await deliver(c, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), MAX));
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(knobs.effects.filter((e) => e === `${parcel}-2`)).toHaveLength(1);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([]);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('a successor parked under another ordering key than its predecessor (the documented limit): not taken up, applied once at its wake-up, out of the park', async () => {
      const parcel = `${p}xgroup`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2, { group: `${parcel}-g2` })));
      expect(await parkedIds(env, `${parcel}-g2`)).toEqual([`m-${parcel}-2`]);
      await deliver(a, rec(`m-${parcel}-1`, ev(parcel, 1, { group: `${parcel}-g1` })));
      expect(outcomeList(a.outcomes).at(-1)).toBe(`m-${parcel}-1:applied`);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2, { group: `${parcel}-g2` }), 2));
      expect(outcomeList(a.outcomes).at(-1)).toBe(`m-${parcel}-2:applied`);
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await parkedIds(env, `${parcel}-g2`)).toEqual([]);
    });

    it('a batch: a copy of an applied step, a new step, and one that waits, all of one parcel (one home); then the step it waits for: each applied once', async () => {
      const parcel = `${p}mix`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-1`, ev(parcel, 1)));
      const b = consumerEnvironment(env, options);
      const r = await deliver(
        b,
        rec(`m-${parcel}-4`, ev(parcel, 4)),
        rec(`m-${parcel}-1`, ev(parcel, 1), 2),
        rec(`m-${parcel}-2`, ev(parcel, 2)),
      );
      expect(r.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([`m-${parcel}-4`]);
      expect(outcomeList(b.outcomes).sort()).toEqual([`m-${parcel}-1:duplicate`, `m-${parcel}-2:applied`, `m-${parcel}-4:retried`]);
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-4`]);
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${parcel}-3`, ev(parcel, 3)), rec(`m-${parcel}-2`, ev(parcel, 2), 2));
      expect(outcomeList(c.outcomes).sort()).toEqual([`m-${parcel}-2:duplicate`, `m-${parcel}-3:applied`, `m-${parcel}-4:applied`]);
      for (const n of [1, 2, 3, 4]) expect(await appliedTimes(env, `${parcel}-${n}`)).toBe(1);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('a parked successor whose home is deleted (reset) and re-created before the take-up: applied once on the new parcel; its earlier mark/row not lost', async () => {
      const parcel = `${p}recreate`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-1`, ev(parcel, 1)));
      await deliver(a, rec(`m-${parcel}-3`, ev(parcel, 3)));
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-3`]);
      // Reset and a new step 1 and step 2 in one batch, in another environment: takes step 3 up.
      const b = consumerEnvironment(env, options);
      await deliver(
        b,
        rec(`m-${parcel}-reset`, ev(parcel, 0, { op: 'reset' })),
        rec(`m-${parcel}-1b`, { ...ev(parcel, 1), eventId: `${parcel}-1b` }),
        rec(`m-${parcel}-2`, ev(parcel, 2)),
      );
      const applied = b.outcomes.filter((o) => o.outcome === 'applied').map((o) => o.messageId);
      // The batch order lets the engine apply reset, 1b, 2, then 3 from the park (or retry some): never twice.
      for (const id of [`${parcel}-1`, `${parcel}-1b`, `${parcel}-2`, `${parcel}-3`, `${parcel}-reset`])
        expect(await appliedTimes(env, id)).toBeLessThanOrEqual(1);
      // Copies of everything, cold.
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${parcel}-1`, ev(parcel, 1), 2), rec(`m-${parcel}-3`, ev(parcel, 3), 2));
      expect(outcomeList(c.outcomes).find((o) => o.startsWith(`m-${parcel}-1:`))).toBe(`m-${parcel}-1:duplicate`);
      console.info(`[${p}] recreate: b applied ${JSON.stringify(applied)}, c ${JSON.stringify(outcomeList(c.outcomes))}`);
      expect(await appliedTimes(env, `${parcel}-1`)).toBe(1);
      expect(await appliedTimes(env, `${parcel}-3`)).toBe(1);
    });

    it('a chain of 11 parked successors (more than the 8 take-up passes): each applied once, in order, by the take-up or its wake-up; the park emptied', async () => {
      const parcel = `${p}long`;
      const a = consumerEnvironment(env, options);
      const steps = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
      for (const n of [...steps].reverse()) await deliver(a, rec(`m-${parcel}-${n}`, ev(parcel, n)));
      expect(await parkedIds(env, parcel)).toHaveLength(steps.length);
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
      const takenUp = b.outcomes.filter((o) => o.outcome === 'applied').length;
      console.info(`[${p}] long chain: applied in the predecessor's invocation ${takenUp}`);
      // Wake-ups of those left.
      for (let round = 0; round < 2; round += 1) {
        const left = (await parkedIds(env, parcel)).map((m) => Number(m.split('-').at(-1))).sort((x, y) => x - y);
        for (const n of left) await deliver(b, rec(`m-${parcel}-${n}`, ev(parcel, n), 2 + round));
      }
      for (const n of [1, ...steps]) expect(await appliedTimes(env, `${parcel}-${n}`), `step ${n}`).toBe(1);
      expect(await storedItem(env, 'parcels', parcelKey(parcel))).toMatchObject({ step: 12 });
      expect(await parkedIds(env, parcel)).toEqual([]);
      const applied = b.outcomes.filter((o) => o.outcome === 'applied').map((o) => o.idempotencyKey);
      expect(applied).toEqual([1, ...steps].map((n) => `${parcel}-${n}`));
    });

    it('two producer copies of one successor (two message ids, one event) both parked: the predecessor applies one, the other is a duplicate; both leave the park', async () => {
      const parcel = `${p}twin`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2a`, ev(parcel, 2)));
      await deliver(a, rec(`m-${parcel}-2b`, ev(parcel, 2)));
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2a`, `m-${parcel}-2b`]);
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
      expect(outcomeList(b.outcomes).sort()).toEqual([`m-${parcel}-1:applied`, `m-${parcel}-2a:applied`, `m-${parcel}-2b:duplicate`]);
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('two parked messages with one idempotency key and different payloads: one applied, the other dead-lettered IdempotencyConflict by its own receive, never both applied', async () => {
      const parcel = `${p}conf`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2a`, ev(parcel, 2)));
      await deliver(a, rec(`m-${parcel}-2b`, ev(parcel, 2, { effect: true })));
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
      const appliedIds = b.outcomes.filter((o) => o.outcome === 'applied').map((o) => o.messageId);
      expect(appliedIds).toHaveLength(2);
      const other = appliedIds.includes(`m-${parcel}-2a`) ? `m-${parcel}-2b` : `m-${parcel}-2a`;
      expect(await parkedIds(env, parcel)).toEqual([]);
      await deliver(b, rec(other, ev(parcel, 2, other.endsWith('b') ? { effect: true } : {}), 2));
      expect(b.outcomes.at(-1)).toMatchObject({ messageId: other, outcome: 'dead-lettered', reason: 'IdempotencyConflict' });
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await dlqOf(`m-${parcel}-2a`, `m-${parcel}-2b`)).toEqual([`${other}:IdempotencyConflict`]);
    });

    it('one batch: a copy of an applied step that now waits (its parcel reset), then a new step 1: the copy is a duplicate, never applied again', async () => {
      const parcel = `${p}dupsucc2`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-1`, ev(parcel, 1)));
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      await deliver(a, rec(`m-${parcel}-reset`, ev(parcel, 0, { op: 'reset' })));
      for (const environment of [a, consumerEnvironment(env, options)]) {
        await deliver(
          environment,
          rec(`m-${parcel}-2`, ev(parcel, 2), 2),
          rec(`m-${parcel}-1b${environment === a ? 'w' : 'c'}`, {
            ...ev(parcel, 1),
            eventId: `${parcel}-1b${environment === a ? 'w' : 'c'}`,
          }),
        );
        await deliver(
          environment,
          rec(`m-${parcel}-reset2${environment === a ? 'w' : 'c'}`, {
            ...ev(parcel, 0, { op: 'reset' }),
            eventId: `${parcel}-reset2${environment === a ? 'w' : 'c'}`,
          }),
        );
      }
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await appliedTimes(env, `${parcel}-1bw`)).toBe(1);
      expect(await appliedTimes(env, `${parcel}-1bc`)).toBe(1);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('two parcels of one ordering key parked behind different predecessors: one predecessor wakes only its own successor; the other stays parked, then applied once', async () => {
      const g = `${p}grp`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${g}x-2`, ev(`${g}x`, 2, { group: g })), rec(`m-${g}y-2`, ev(`${g}y`, 2, { group: g })));
      expect(await parkedIds(env, g)).toEqual([`m-${g}x-2`, `m-${g}y-2`]);
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${g}x-1`, ev(`${g}x`, 1, { group: g })));
      expect(outcomeList(b.outcomes)).toEqual([`m-${g}x-1:applied`, `m-${g}x-2:applied`]);
      expect(await parkedIds(env, g)).toEqual([`m-${g}y-2`]);
      await deliver(b, rec(`m-${g}y-1`, ev(`${g}y`, 1, { group: g })));
      expect(outcomeList(b.outcomes).slice(2)).toEqual([`m-${g}y-1:applied`, `m-${g}y-2:applied`]);
      for (const id of [`${g}x-1`, `${g}x-2`, `${g}y-1`, `${g}y-2`]) expect(await appliedTimes(env, id)).toBe(1);
      expect(await parkedIds(env, g)).toEqual([]);
    });

    it('a successor on its last receive in one batch with its predecessor after it: applied, not dead-lettered RetriesExhausted', async () => {
      const parcel = `${p}lastbatch`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      const b = consumerEnvironment(env, options);
      const r = await deliver(b, rec(`m-${parcel}-2`, ev(parcel, 2), MAX), rec(`m-${parcel}-1`, ev(parcel, 1)));
      expect(r).toEqual({ batchItemFailures: [] });
      expect(outcomeList(b.outcomes).sort()).toEqual([`m-${parcel}-1:applied`, `m-${parcel}-2:applied`]);
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([]);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('another environment resets the parcel between the predecessor commit and the take-up: the taken-up successor is not applied on the stale state', async () => {
      const parcel = `${p}racereset`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      const x = consumerEnvironment(env, options);
      const hook = clientBeforeCommit(2, async () => {
        await deliver(x, rec(`m-${parcel}-reset`, ev(parcel, 0, { op: 'reset', group: `${parcel}-other` })));
      });
      try {
        const b = consumerEnvironment(env, options, { dynamoDb: hook.dynamoDb });
        await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
        expect(hook.ran()).toBe(true);
        console.info(`[${p}] racereset: ${JSON.stringify(outcomeList(b.outcomes))} ${JSON.stringify(outcomeList(x.outcomes))}`);
        expect(outcomeList(x.outcomes)).toEqual([`m-${parcel}-reset:applied`]);
        expect(b.outcomes.filter((o) => o.messageId === `m-${parcel}-2` && o.outcome === 'applied')).toEqual([]);
      } finally {
        hook.destroy();
      }
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(0);
      expect((await storedItem(env, 'parcels', parcelKey(parcel)))?.step).toBeUndefined();
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`]);
    });

    it('stress: a parked message’s last receive and its predecessor in two environments at once (8 parcels): each successor applied xor dead-lettered, never both; its effect at most once, warned about when it ran for a dead letter', async () => {
      const parcels = Array.from({ length: 8 }, (_, i) => `${p}stress${i}`);
      const parking = consumerEnvironment(env, options);
      for (const parcel of parcels) await deliver(parking, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true })));
      const outcomes: string[] = [];
      const logger = new RecordingLogger();
      await Promise.all(
        parcels.map(async (parcel, i) => {
          const b = consumerEnvironment(env, options, { logger });
          const last = consumerEnvironment(env, options, { logger });
          await Promise.all([
            deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1))),
            (async () => {
              await new Promise((resolve) => setTimeout(resolve, (i % 4) * 15));
              await deliver(last, rec(`m-${parcel}-2`, ev(parcel, 2, { effect: true }), MAX));
            })(),
          ]);
          outcomes.push(
            ...[...b.outcomes.map((o) => ({ ...o, env: 'pred' })), ...last.outcomes.map((o) => ({ ...o, env: 'last' }))].map(
              (o) => `${o.env}:${o.messageId}:${o.outcome}:${o.reason ?? ''}:${o.errorType ?? ''}:${o.fromPark === true ? 'fromPark' : ''}`,
            ),
          );
        }),
      );
      const dlq = await dlqOf(...parcels.map((parcel) => `m-${parcel}-2`));
      const tally: Record<string, number> = {};
      for (const parcel of parcels) {
        const applied = await appliedTimes(env, `${parcel}-2`);
        const dead = dlq.filter((d) => d.startsWith(`m-${parcel}-2:`));
        const step = (await storedItem(env, 'parcels', parcelKey(parcel)))?.step;
        expect(applied + dead.length, `${parcel}: applied ${applied}, dead ${JSON.stringify(dead)}`).toBe(1);
        expect(step, parcel).toBe(applied === 1 ? 2 : 1);
        if (knobs.effects.filter((e) => e === `${parcel}-2`).length !== applied)
          console.info(
            `[${p}] stress ${parcel}: effects ${knobs.effects.filter((e) => e === `${parcel}-2`).length}, applied ${applied}, dlq ${JSON.stringify(dead)}, outcomes ${JSON.stringify(outcomes.filter((o) => o.includes(`${parcel}-`)))}`,
          );
        const key = applied === 1 ? 'applied' : 'dead';
        tally[key] = (tally[key] ?? 0) + 1;
        if (applied === 0) expect(dead).toEqual([`m-${parcel}-2:RetriesExhausted`]);
      }
      console.info(`[${p}] stress: ${JSON.stringify(tally)}`);
      for (const parcel of parcels) {
        const applied = await appliedTimes(env, `${parcel}-2`);
        const ran = knobs.effects.filter((e) => e === `${parcel}-2`).length;
        // At most once; once for an applied message; for a dead-lettered one only in the documented
        // window (another delivery dead-lettered it while this one ran it), and then with a warning.
        expect(ran, `${parcel}: effects`).toBe(applied === 1 ? 1 : ran === 0 ? 0 : 1);
        if (applied === 0 && ran === 1)
          expect(logger.warnings.map((w) => `${w.message}:${String(w.idempotencyKey)}`)).toContain(
            `side effects ran for a message that another delivery dead-lettered meanwhile:${parcel}-2`,
          );
      }
    });

    it('stress: a chain of two parked successors, then the predecessor and both wake-ups in three environments at once (4 parcels): each applied once, nothing dead-lettered', async () => {
      const parcels = Array.from({ length: 4 }, (_, i) => `${p}storm${i}`);
      const parking = consumerEnvironment(env, options);
      for (const parcel of parcels) {
        await deliver(parking, rec(`m-${parcel}-3`, ev(parcel, 3)));
        await deliver(parking, rec(`m-${parcel}-2`, ev(parcel, 2)));
      }
      await Promise.all(
        parcels.flatMap((parcel) => [
          deliver(consumerEnvironment(env, options), rec(`m-${parcel}-1`, ev(parcel, 1))),
          deliver(consumerEnvironment(env, options), rec(`m-${parcel}-2`, ev(parcel, 2), 2)),
          deliver(consumerEnvironment(env, options), rec(`m-${parcel}-3`, ev(parcel, 3), 2)),
        ]),
      );
      // What is left in the park comes back at its wake-up.
      const late = consumerEnvironment(env, options);
      for (const parcel of parcels) {
        for (const id of await parkedIds(env, parcel)) {
          const n = Number(id.split('-').at(-1));
          await deliver(late, rec(id, ev(parcel, n), MAX));
        }
      }
      for (const parcel of parcels) {
        for (const n of [1, 2, 3]) expect(await appliedTimes(env, `${parcel}-${n}`), `${parcel}-${n}`).toBe(1);
        expect(await storedItem(env, 'parcels', parcelKey(parcel))).toMatchObject({ step: 3 });
        expect(await parkedIds(env, parcel)).toEqual([]);
      }
      expect(await dlqOf(...parcels.flatMap((parcel) => [1, 2, 3].map((n) => `m-${parcel}-${n}`)))).toEqual([]);
    });

    it('the take-up applies a parked successor but its park release fails: the entry stays; the wake-up copy is a duplicate and empties the park', async () => {
      const parcel = `${p}norelease`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      const clients = awsClients();
      let refused = 0;
      clients.dynamoDb.middlewareStack.add(
        (next, context) => async (args) => {
          const input = args.input as { UpdateExpression?: string };
          if (context.commandName === 'UpdateItemCommand' && input.UpdateExpression === 'REMOVE #entry') {
            refused += 1;
            throw Object.assign(new Error('throttled'), { name: 'ThrottlingException', $retryable: {} });
          }
          return next(args);
        },
        { step: 'initialize', name: 'refuseRelease' },
      );
      try {
        const b = consumerEnvironment(env, options, { dynamoDb: clients.dynamoDb });
        await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
        expect(outcomeList(b.outcomes)).toEqual([`m-${parcel}-1:applied`, `m-${parcel}-2:applied`]);
        expect(refused).toBeGreaterThan(0);
      } finally {
        clients.destroy();
      }
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2`]);
      // Another predecessor-like message of the key (step 3) takes the stale entry up: a duplicate, not applied again.
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${parcel}-3`, ev(parcel, 3)));
      await deliver(c, rec(`m-${parcel}-2`, ev(parcel, 2), 2));
      expect(c.outcomes.filter((o) => o.messageId === `m-${parcel}-2`).map((o) => o.outcome)).not.toContain('applied');
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await appliedTimes(env, `${parcel}-3`)).toBe(1);
      expect(await parkedIds(env, parcel)).toEqual([]);
      expect(await dlqOf(`m-${parcel}-2`)).toEqual([]);
    });

    it('a batch with a message whose ordering key is too long (2,000 characters) beside a predecessor whose successor is parked: nothing lost, each applied once', async () => {
      const parcel = `${p}longkey`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-2`, ev(parcel, 2)));
      const b = consumerEnvironment(env, options);
      const r = await deliver(
        b,
        rec(`m-${parcel}-1`, ev(parcel, 1)),
        rec(`m-${parcel}L-2`, ev(`${parcel}L`, 2, { group: 'g'.repeat(2000) })),
      );
      console.info(
        `[${p}] longkey: ${JSON.stringify(b.outcomes.map((o) => [o.messageId, o.outcome, o.reason, o.errorType, o.errorMessage?.slice(0, 200)]))} ${JSON.stringify(r.batchItemFailures)}`,
      );
      expect(b.outcomes.find((o) => o.messageId === `m-${parcel}-1`)?.outcome).toBe('applied');
      // An ordering key over 1,024 bytes is the message's own fault: dead-lettered ValidationError; the rest of the batch unharmed.
      expect(r.batchItemFailures).toEqual([]);
      expect(b.outcomes.find((o) => o.messageId === `m-${parcel}L-2`)).toMatchObject({
        outcome: 'dead-lettered',
        reason: 'ValidationError',
      });
      if ((await appliedTimes(env, `${parcel}-2`)) === 0) await deliver(b, rec(`m-${parcel}-2`, ev(parcel, 2), 2));
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(await parkedIds(env, parcel)).toEqual([]);
      expect(
        b.outcomes.find((o) => o.messageId === `m-${parcel}-2`)?.fromPark,
        'taken up in the predecessor invocation despite the long key',
      ).toBe(true);
    });

    it('a blind Put onto a reset home (a stub holding marks): the marks kept, the item real again; copies of the reset home’s events duplicates; the next step applies', async () => {
      const from = `${p}bpA`;
      const to = `${p}bpB`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${to}-1`, ev(to, 1)));
      await deliver(a, rec(`m-${to}-reset`, ev(to, 0, { op: 'reset' })));
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${from}-move`, { ...ev(from, 5, { op: 'move', target: to }), eventId: `${from}-move` }));
      expect(outcomeList(b.outcomes)).toEqual([`m-${from}-move:applied`]);
      const stored = (await storedItem(env, 'parcels', parcelKey(to))) as Item;
      expect(stored.step).toBe(5);
      if (withHome) {
        expect(stored._inboxStub).toBeUndefined();
        expect(Object.keys(stored._inbox as object).sort()).toEqual([`hatk#${to}-0-reset`, `hatk#${to}-1`]);
      }
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${to}-1`, ev(to, 1), 2), rec(`m-${to}-reset`, ev(to, 0, { op: 'reset' }), 2), rec(`m-${to}-6`, ev(to, 6)));
      expect(outcomeList(c.outcomes).sort()).toEqual([`m-${to}-1:duplicate`, `m-${to}-6:applied`, `m-${to}-reset:duplicate`]);
      // And a warm environment that remembers the stub (a) sees the copies as duplicates too.
      await deliver(a, rec(`m-${to}-1`, ev(to, 1), 3), rec(`m-${to}-reset`, ev(to, 0, { op: 'reset' }), 3));
      expect(outcomeList(a.outcomes).slice(2)).toEqual([`m-${to}-1:duplicate`, `m-${to}-reset:duplicate`]);
      for (const id of [`${to}-1`, `${to}-0-reset`, `${from}-move`, `${to}-6`]) expect(await appliedTimes(env, id)).toBe(1);
    });

    it('a decision that tries to erase the marks of its home table (REMOVE literal, alias, path, a Put of _inbox, SET _inboxStub): refused (ConsumerDefinitionError), never applied, the earlier events still duplicates', async () => {
      if (mode === 'rows') return;
      const parcel = `${p}wipe`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${parcel}-1`, ev(parcel, 1)));
      for (const how of ['literal', 'alias', 'path', 'put', 'stub'] as const) {
        await deliver(a, rec(`m-${parcel}-w-${how}`, { ...ev(parcel, 0, { op: 'wipe', how }), eventId: `${parcel}-w-${how}` }));
      }
      const wipes = a.outcomes.slice(1).map((o) => [o.messageId, o.outcome, o.reason, o.errorType]);
      console.info(`[${p}] wipe: ${JSON.stringify(wipes)}`);
      // A ConsumerDefinitionError is the consumer's bug: retried (a deploy fixes it), never applied.
      for (const o of a.outcomes.slice(1))
        expect(`${o.messageId}:${o.outcome}:${o.errorType}`).toBe(`${o.messageId}:retried:ConsumerDefinitionError`);
      for (const how of ['literal', 'alias', 'path', 'put', 'stub']) expect(await appliedTimes(env, `${parcel}-w-${how}`)).toBe(0);
      const cold = consumerEnvironment(env, options);
      await deliver(cold, rec(`m-${parcel}-1`, ev(parcel, 1), 2));
      expect(outcomeList(cold.outcomes)).toEqual([`m-${parcel}-1:duplicate`]);
      expect(await appliedTimes(env, `${parcel}-1`)).toBe(1);
    });

    it('a dead-lettered successor redriven, the redrive parked, then taken up by its predecessor (with a side effect): applied once; the original copy and a second redrive duplicates; one dead letter', async () => {
      const parcel = `${p}redrive`;
      const a = consumerEnvironment(env, options);
      const s2 = ev(parcel, 2, { effect: true });
      for (let n = 1; n <= MAX; n += 1) await deliver(a, rec(`m-${parcel}-2`, s2, n));
      expect(a.outcomes.at(-1)).toMatchObject({ outcome: 'dead-lettered', reason: 'RetriesExhausted' });
      const redrive = (id: string) => sourceRecord(env, id, s2, { stringAttributes: { 'ic.redrive': `m-${parcel}-2` } });
      const r = await deliver(a, redrive(`m-${parcel}-2-rd1`));
      expect(r.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([`m-${parcel}-2-rd1`]);
      expect(await parkedIds(env, parcel)).toEqual([`m-${parcel}-2-rd1`]);
      const b = consumerEnvironment(env, options);
      await deliver(b, rec(`m-${parcel}-1`, ev(parcel, 1)));
      expect(outcomeList(b.outcomes)).toEqual([`m-${parcel}-1:applied`, `m-${parcel}-2-rd1:applied`]);
      const c = consumerEnvironment(env, options);
      await deliver(c, rec(`m-${parcel}-2`, s2, MAX + 1));
      await deliver(c, redrive(`m-${parcel}-2-rd2`));
      await deliver(a, rec(`m-${parcel}-2`, s2, MAX + 2));
      console.info(
        `[${p}] redrive: c ${JSON.stringify(c.outcomes.map((o) => [o.messageId, o.outcome, o.reason]))} a(last) ${JSON.stringify([a.outcomes.at(-1)?.outcome, a.outcomes.at(-1)?.reason])}`,
      );
      for (const o of [...c.outcomes, a.outcomes.at(-1)!]) expect(`${o.messageId}:${o.outcome}`).toBe(`${o.messageId}:duplicate`);
      expect(await appliedTimes(env, `${parcel}-2`)).toBe(1);
      expect(knobs.effects.filter((e) => e === `${parcel}-2`)).toHaveLength(1);
      expect(await dlqOf(`m-${parcel}-2`, `m-${parcel}-2-rd1`, `m-${parcel}-2-rd2`)).toEqual([`m-${parcel}-2:RetriesExhausted`]);
      expect(await parkedIds(env, parcel)).toEqual([]);
    });

    it('a move: an event deletes its own home and blindly puts another event’s home (in one batch with that home’s own events); cold copies: duplicates, marks kept', async () => {
      const from = `${p}movA`;
      const to = `${p}movB`;
      const a = consumerEnvironment(env, options);
      await deliver(a, rec(`m-${to}-1`, ev(to, 1)));
      const b = consumerEnvironment(env, options);
      const r = await deliver(
        b,
        rec(`m-${from}-1`, ev(from, 1)),
        rec(`m-${to}-2`, ev(to, 2)),
        rec(`m-${from}-move`, { ...ev(from, 7, { op: 'move', target: to }), eventId: `${from}-move`, group: to }),
        rec(`m-${to}-8`, ev(to, 8)),
      );
      console.info(`[${p}] move: ${JSON.stringify(outcomeList(b.outcomes))} ${JSON.stringify(r.batchItemFailures)}`);
      const c = consumerEnvironment(env, options);
      await deliver(
        c,
        rec(`m-${to}-1`, ev(to, 1), 2),
        rec(`m-${from}-1`, ev(from, 1), 2),
        rec(`m-${to}-2`, ev(to, 2), 2),
        rec(`m-${from}-move`, { ...ev(from, 7, { op: 'move', target: to }), eventId: `${from}-move`, group: to }, 2),
        rec(`m-${to}-8`, ev(to, 8), 2),
      );
      for (const eventId of [`${to}-1`, `${from}-1`, `${to}-2`, `${from}-move`, `${to}-8`]) {
        expect(await appliedTimes(env, eventId), eventId).toBeLessThanOrEqual(1);
      }
      const settledBefore = new Set(b.outcomes.filter((o) => o.outcome === 'applied').map((o) => o.messageId));
      for (const o of c.outcomes)
        if (settledBefore.has(o.messageId)) expect(`${o.messageId}:${o.outcome}`).toBe(`${o.messageId}:duplicate`);
      expect(await appliedTimes(env, `${to}-1`)).toBe(1);
      expect(await appliedTimes(env, `${from}-move`)).toBe(1);
      if (withHome) {
        const home = (await storedItem(env, 'parcels', parcelKey(to))) as Item;
        expect(Object.keys((home._inbox as object) ?? {})).toEqual(expect.arrayContaining([`hatk#${to}-1`]));
      }
    });
  });
}

describe('attacks: the home function changed by a deploy (keys moved between homes)', () => {
  let env: TestResources;
  const knobs: Knobs = { flaky: new Set(), effects: [] };
  beforeAll(async () => {
    env = await testResources('hatk-move-home', tables, {
      consumerName: 'hatk',
      retry: { parkOutOfOrder: true, backoffBaseSeconds: 1, maxAttempts: 3 },
    });
  });
  afterAll(() => env?.dispose());

  /** Applies MV-1, MV-0-reset and MV-1b under `before`, then delivers copies of the last two under `after`. */
  async function moveHomes(prefix: string, before: ReturnType<typeof consumer>, after: ReturnType<typeof consumer>) {
    const first = consumerEnvironment(env, before);
    const reset = ev(prefix, 0, { op: 'reset' });
    const again = { ...ev(prefix, 1), eventId: `${prefix}-1b` };
    await first.handler(
      sqsEvent(sourceRecord(env, `m-${prefix}-1`, ev(prefix, 1)), sourceRecord(env, `m-${prefix}-reset`, reset)),
      lambdaContext(),
    );
    await first.handler(sqsEvent(sourceRecord(env, `m-${prefix}-1b`, again)), lambdaContext());
    expect(outcomeList(first.outcomes)).toEqual([`m-${prefix}-1:applied`, `m-${prefix}-reset:applied`, `m-${prefix}-1b:applied`]);
    const second = consumerEnvironment(env, after);
    await second.handler(
      sqsEvent(
        sourceRecord(env, `m-${prefix}-reset`, reset, { receiveCount: 2 }),
        sourceRecord(env, `m-${prefix}-1b`, again, { receiveCount: 2 }),
      ),
      lambdaContext(),
    );
    return {
      outcomes: outcomeList(second.outcomes).sort(),
      reset: await appliedTimes(env, `${prefix}-0-reset`),
      again: await appliedTimes(env, `${prefix}-1b`),
    };
  }

  it('the documented way: both deploys with rowsUntil one inbox window ahead; copies of events applied on the old home are duplicates', async () => {
    const windowAhead = new Date(Date.now() + env.settings.idempotency.inboxTtlSeconds * 1000);
    const after = await moveHomes('MW', consumer(knobs, 'parcel', windowAhead), consumer(knobs, 'event', windowAhead));
    expect(after).toEqual({ outcomes: ['m-MW-1b:duplicate', 'm-MW-reset:duplicate'], reset: 1, again: 1 });
  });
});
