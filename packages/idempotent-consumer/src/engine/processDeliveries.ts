import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Classification, classify } from '../classifier.js';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { FailureReason, NotAttempted } from '../errors.js';
import type { AttemptLog } from '../inbox/AttemptLog.js';
import type { ParkedMessages, ParkedRecord, ParkRelease } from '../inbox/ParkedMessages.js';
import { sqsDeliveries } from '../batch/sqsDeliveries.js';
import { Outcome, type OutcomeObserver } from '../observability/outcomes.js';
import { invocationTraceHeader } from '../observability/traceHeader.js';
import { type SegmentTracer, TraceSegmentName, traced } from '../observability/traceSegments.js';
import type { BatchEngine } from './BatchEngine.js';
import { describeError } from './describeError.js';
import type { InvocationClock, Unit, UnitVerdict } from './Unit.js';
import type { ConsumerDefinition } from './ConsumerDefinition.js';
import { type DeadLetterCandidate, type DeadLetterOutcome, type DeadLetterSink, deadLetter } from './deadLetters.js';
import type { Delivery, DeliveryResult, Verdict } from './Delivery.js';
import { type ParsedDelivery, parseDelivery } from './parseDelivery.js';

export type { DeadLetterRequest, DeadLetterResult, DeadLetterSink } from './deadLetters.js';

/** What {@link processDeliveries} needs. */
export interface ProcessDeliveriesDeps<Event> {
  readonly definition: ConsumerDefinition<Event>;
  readonly config: RuntimeConfig;
  readonly client: DynamoDBDocumentClient;
  readonly engine: BatchEngine<Event>;
  readonly attempts: AttemptLog;
  /** Loaded at the first dead letter. */
  readonly deadLetters: () => Promise<DeadLetterSink>;
  readonly observer: OutcomeObserver;
  readonly logger?: Logger;
  readonly now: () => Date;
  /** Opens the batch's subsegments (`## batch` and its phases) when given and tracing. @default none: no subsegment */
  readonly tracer?: SegmentTracer;
  /**
   * The park of out-of-order messages (`retry.parkOutOfOrder`, standard queues): given, a delivery
   * that fails `PredecessorNotApplied` is parked, and the parked messages of the batch's ordering
   * keys are decided again once a message of their key is applied. @default none: nothing is parked
   */
  readonly parking?: ParkedMessages;
}

/** A delivery's verdict while the batch is being settled. */
interface Working {
  readonly delivery: Delivery;
  readonly index: number;
  readonly unit: Unit | undefined;
  readonly idempotencyKey: string | undefined;
  readonly payloadHash: string | undefined;
  readonly orderingKey: string | undefined;
  readonly fields: Readonly<Record<string, string | number | boolean>>;
  verdict: Verdict;
  /** The inbox already holds this message's dead-letter marker. */
  alreadyMarked: boolean;
  /** It is in the dead-letter queue already (sent before its successors committed). */
  sent: boolean;
  settledAt: number;
  /** Its record was parked in this batch. */
  parked?: boolean;
  /** It was read from the park (not part of the batch): what to release once it is settled. */
  park?: ParkedRecord;
  /** It was parked in this batch, then applied (or found a duplicate): its park entry's stored text, to remove. */
  leftPark?: string;
  /** Taken up from the park and found dead-letter-worthy: left to its own receive (its entry goes, the message is not deleted). */
  leaveToWakeUp?: boolean;
}

/**
 * Processes one batch of deliveries from any event source: parses them, lets the
 * {@link BatchEngine} decide and commit them, then carries out every verdict:
 *
 * - **attempt budgets count real attempts**: an SQS message's attempts are its receive count minus
 *   the receives in which it was not attempted (read from the attempt log only when the receive
 *   count reaches the budget); a Kafka record's failed attempts are counted in the attempt log.
 *   A retryable failure on the last attempt becomes `RetriesExhausted`;
 * - **a FIFO message group or a Kafka partition stops** at its first message that must come back:
 *   every later message of it comes back too, unrun (not counted as an attempt);
 * - **dead letters**: a message with an idempotency key first gets a dead-letter marker in the
 *   inbox (conditional: never over an applied row — a message that was applied is acknowledged as
 *   a duplicate instead, never dead-lettered), then goes to the DLQ with its reason; a failed send
 *   makes it come back;
 * - receives that were not attempts are counted (SQS), and each outcome is reported to the observer;
 * - **traces**: a delivery that came without an X-Ray trace header (a Kafka record) is given the
 *   invocation's (`_X_AMZN_TRACE_ID`), which its dead letter and outbox items carry on; with a
 *   tracer, the batch runs in a `## batch` subsegment annotated with the consumer, the source and the
 *   counts by outcome, its phases in subsegments of their own (see `traceSegments.ts`).
 *
 * @returns one result per delivery, in order; never rejects
 */
export async function processDeliveries<Event>(
  deliveries: readonly Delivery[],
  deps: ProcessDeliveriesDeps<Event>,
  clock: InvocationClock,
): Promise<DeliveryResult[]> {
  return traced(deps.tracer, TraceSegmentName.Batch, async (annotate) => {
    const results = await processBatch(deliveries, deps, clock);
    const count = (kind: Verdict['kind']) => results.filter((result) => result.verdict.kind === kind).length;
    annotate({
      consumer: deps.config.consumerName,
      source: traceSourceOf(deliveries[0], deps.config.fifo),
      deliveries: deliveries.length,
      applied: count('applied'),
      duplicates: count('duplicate'),
      retried: count('retry'),
      deadLettered: count('dead-lettered'),
    });
    return results;
  });
}

/** A delivery with the invocation's trace header when it came without one. */
function withTraceHeader(delivery: Delivery, invocationHeader: string | undefined): Delivery {
  return delivery.traceHeader !== undefined || invocationHeader === undefined ? delivery : { ...delivery, traceHeader: invocationHeader };
}

async function processBatch<Event>(
  deliveries: readonly Delivery[],
  deps: ProcessDeliveriesDeps<Event>,
  clock: InvocationClock,
): Promise<DeliveryResult[]> {
  const started = performance.now();
  const { definition, config, engine, logger } = deps;
  const invocationHeader = invocationTraceHeader();
  const parsed = traced(deps.tracer, TraceSegmentName.Parse, (annotate) => {
    const all = deliveries.map((delivery) => parseDelivery(withTraceHeader(delivery, invocationHeader), definition, config.tables));
    const ok = all.filter((p) => p.ok).length;
    annotate({ deliveries: all.length, parsed: ok, rejected: all.length - ok });
    return all;
  });
  const units: Unit<Event>[] = [];
  const stops = new Map<string, number>();
  const working: Working[] = parsed.map((p, index) => {
    if (p.ok) {
      const work = workingOf(p, index, started);
      units.push(work.unit as Unit<Event>);
      return work;
    }
    const failure = classify(p.error, definition.classifyError);
    // Failed before it could be decided (parsing, keys, `read`): its FIFO group or Kafka partition stops here too (case C25).
    const scope = p.delivery.scope;
    if (failure.retryable && scope !== undefined && !stops.has(scope)) stops.set(scope, index);
    return {
      delivery: p.delivery,
      index,
      unit: undefined,
      idempotencyKey: p.idempotencyKey,
      payloadHash: p.payloadHash,
      orderingKey: undefined,
      fields: {},
      verdict: failure.retryable ? { kind: 'retry', failure, attempt: undefined } : { kind: 'dead-lettered', failure, attempt: undefined },
      alreadyMarked: false,
      sent: false,
      settledAt: performance.now(),
    };
  });

  const parking = parkingOf(deps, deliveries);
  // The park of the batch's ordering keys is read beside the batch's commit (no round trip on the
  // critical path); a message parked while this batch commits is left to its own read after
  // parking (see `parkWaiting`).
  const parkRead = parking === undefined ? undefined : parking.read(units.map((unit) => unit.orderingKey));
  const settleStarted = performance.now();
  await deadLetterBeforeSuccessors(working, stops, deps);
  try {
    await engine.settle(units, clock, stops, (settled) => deadLetter(settled.map(candidateOfUnit), deps));
  } catch (error) {
    logger?.error('the batch engine failed unexpectedly; its unsettled messages will be retried', { error: describeError(error) });
    for (const unit of units) {
      if (unit.verdict === undefined) unit.verdict = { kind: 'failed', failure: classify(error) };
    }
  }
  const settleMs = performance.now() - settleStarted;
  const parkedRead = new Map<string, ParkedRecord[]>();
  if (parkRead !== undefined) {
    const unblocked = appliedKeys(units);
    for (const [key, records] of await parkRead) parkedRead.set(key, records);
    working.push(...(await decideWaiting(units, parkedRead, deps, clock, working.length, { unblocked, batch: true })));
  }
  for (const work of working) carryVerdict(work);

  stopScopes(working, logger);
  await countAttempts(working, deps);
  if (parking !== undefined) {
    // Parked messages applied on their own read after parking: what waits behind them is taken up too.
    const unblocked = appliedKeys(await parkWaiting(working, parking, deps, clock, settleMs));
    if (unblocked.size > 0) {
      const more = await parking.read([...unblocked]);
      for (const [key, records] of more) parkedRead.set(key, records);
      // The messages still waiting (the batch's own, parked, and those taken up from the park) are
      // decided again with what is taken up now; one that ended otherwise (its attempts spent) is not.
      const stillWaiting = working.filter((work) => work.unit !== undefined && work.verdict.kind === 'retry').map((work) => work.unit!);
      const taken = await decideWaiting(stillWaiting as Unit<Event>[], more, deps, clock, working.length, {
        unblocked,
        batch: true,
        exclude: new Set(working.map((work) => work.delivery.messageId)),
      });
      for (const work of working) {
        const verdict = work.unit?.verdict;
        if (work.verdict.kind !== 'retry' || verdict === undefined || (verdict.kind === 'failed' && verdict.failure.retryable)) continue;
        carryVerdict(work);
        if (work.parked === true) {
          // Parked in this batch, settled now: it leaves the park (the event source mapping deletes it).
          work.parked = false;
          work.leftPark = JSON.stringify(work.delivery.sqsRecord);
        }
      }
      for (const work of taken) carryVerdict(work);
      await countAttempts(taken, deps);
      working.push(...taken);
    }
  }
  await sendDeadLetters(working, deps);

  // A dead letter that could not be sent is retried: its scope stops there too.
  stopScopes(working, logger);
  const received = working.filter((work) => work.park === undefined);
  const reported = reportedDeliveries(received);
  await countSkips(received, reported, deps);
  if (parking !== undefined) await parking.release(releasesOf(working, parkedRead));

  const toResult = (work: Working): DeliveryResult => ({
    delivery: work.delivery,
    verdict: work.verdict,
    reported: reported.has(work.index),
    idempotencyKey: work.idempotencyKey,
    orderingKey: work.orderingKey,
    fields: work.fields,
    durationMs: work.settledAt - started,
    ...(work.parked === true ? { parked: true as const } : {}),
  });
  const results: DeliveryResult[] = received.map(toResult);
  for (const result of results) observe(result, deps.observer);
  // Those taken up from the park and settled, in the order they were settled (a chain applies pass
  // after pass); one still waiting is no new outcome: its parked retry stands, its wake-up comes.
  const taken = working
    .filter((work) => work.park !== undefined && work.verdict.kind !== 'retry')
    .sort((a, b) => a.settledAt - b.settledAt);
  for (const work of taken) observe(toResult(work), deps.observer);
  return results;
}

/** A parsed delivery as a new unit of the engine and its working delivery (its verdict a placeholder until the unit settles). */
function workingOf<Event>(p: ParsedDelivery<Event>, index: number, settledAt: number): Working {
  const unit: Unit<Event> = {
    ...p,
    index,
    verified: false,
    snapshot: false,
    losses: 0,
    solo: false,
    verdict: undefined,
    settledAt: undefined,
  };
  return {
    delivery: p.delivery,
    index,
    unit,
    idempotencyKey: p.idempotencyKey,
    payloadHash: p.payloadHash,
    orderingKey: p.orderingKey,
    fields: p.fields,
    verdict: { kind: 'applied' },
    alreadyMarked: false,
    sent: false,
    settledAt,
  };
}

/** Carries a unit's verdict over to its working delivery (the source's view: applied, duplicate, retry, or dead-lettered). */
function carryVerdict(work: Working): void {
  const unit = work.unit;
  if (unit === undefined) return;
  const verdict = unit.verdict ?? { kind: 'failed' as const, failure: classify(new NotAttempted('not settled')) };
  work.settledAt = unit.settledAt ?? performance.now();
  if (verdict.kind === 'applied') work.verdict = { kind: 'applied' };
  else if (verdict.kind === 'duplicate') work.verdict = { kind: 'duplicate' };
  else {
    work.alreadyMarked = verdict.alreadyMarked === true;
    work.sent = verdict.sent === true;
    if (work.park !== undefined && !verdict.failure.retryable) {
      // Taken up from the park and found dead-letter-worthy (on the new state, or dead-lettered by
      // an earlier delivery of its own): it is not dead-lettered from here. Its parked receipt handle
      // may be stale (a newer receive under way would dead-letter it a second time); its own receive
      // decides it, dead-letters it once, and the event source mapping deletes it. It leaves the park.
      work.leaveToWakeUp = true;
      work.verdict = { kind: 'retry', failure: { ...verdict.failure, retryable: true, countsAsAttempt: false }, attempt: undefined };
      return;
    }
    work.verdict = verdict.failure.retryable
      ? {
          kind: 'retry',
          failure: verdict.failure,
          attempt: undefined,
          ...(verdict.failure.retryAt === undefined ? {} : { retryAt: verdict.failure.retryAt }),
        }
      : { kind: 'dead-lettered', failure: verdict.failure, attempt: undefined };
  }
}

/**
 * Opens settled units to be decided again: no verdict, nothing read in this batch's view (the
 * engine reads what it must again).
 *
 * @returns each unit's verdict before, to restore where the new decision is not an attempt
 */
function reopen<Event>(units: readonly Unit<Event>[]): Map<Unit<Event>, UnitVerdict | undefined> {
  const before = new Map(units.map((unit) => [unit, unit.verdict]));
  for (const unit of units) {
    unit.verdict = undefined;
    unit.settledAt = undefined;
    unit.verified = false;
    unit.snapshot = false;
    unit.inboxRead = false;
  }
  return before;
}

/** The ordering keys of the units applied. */
function appliedKeys(units: readonly Unit[]): Set<string> {
  return new Set(units.filter((unit) => unit.verdict?.kind === 'applied').map((unit) => unit.orderingKey));
}

/** The park, when the batch can use it: given, and every delivery an SQS record of a standard queue. */
function parkingOf(deps: ProcessDeliveriesDeps<unknown>, deliveries: readonly Delivery[]): ParkedMessages | undefined {
  if (deps.parking === undefined || deliveries.length === 0) return undefined;
  return deliveries.every((delivery) => delivery.sqsRecord !== undefined && delivery.scope === undefined) ? deps.parking : undefined;
}

/** Bounds of the wait before a parked message is decided again on its own read, in milliseconds (see `parkWaiting`). */
const PARK_SETTLE_WAIT_MIN_MS = 20;
const PARK_SETTLE_WAIT_MAX_MS = 250;

/** Decisions of waiting messages again: rounds a batch may add after its own (each one settles what a message of its key unblocked). */
const MAX_WAKE_PASSES = 8;

/** Whether a unit's verdict is a wait for its predecessor (a retryable `PredecessorNotApplied`). */
function waitsForPredecessor(unit: Unit): boolean {
  const verdict = unit.verdict;
  return verdict?.kind === 'failed' && verdict.failure.retryable && verdict.failure.waitsForPredecessor === true;
}

/**
 * Decides again, after the batch settled, the messages that wait for a predecessor whose ordering
 * key had a message applied: the batch's own (they are not parked then, nor retried) and those
 * read from the park for those keys (taken up from the park: decided here, deleted from the queue
 * once settled). Pass after pass, while a pass applies something (a parked third event of a key waits for
 * the second parked beside it), at most {@link MAX_WAKE_PASSES}; the engine's clock stops it
 * in time.
 *
 * A batch message decided again keeps its first verdict when the new one is a retry that was not
 * an attempt (too little time left): it was attempted.
 *
 * @returns the working entries of the messages taken up from the park (their `index` after the batch's)
 */
async function decideWaiting<Event>(
  units: readonly Unit<Event>[],
  parked: ReadonlyMap<string, readonly ParkedRecord[]>,
  deps: ProcessDeliveriesDeps<Event>,
  clock: InvocationClock,
  firstIndex: number,
  options: {
    /** The ordering keys a message was applied of: those whose waiting messages are decided again. */
    readonly unblocked: ReadonlySet<string>;
    /** Whether the batch's own waiting messages are decided again (else only those taken up from the park). */
    readonly batch: boolean;
    /** Message ids not to take up from the park (already taken up in this batch). @default none */
    readonly exclude?: ReadonlySet<string>;
  },
): Promise<Working[]> {
  const { definition, config, engine, logger } = deps;
  const taken: Working[] = [];
  const takenUnits: Unit<Event>[] = [];
  const seen = new Set([...units.map((unit) => unit.delivery.messageId), ...(options.exclude ?? [])]);
  let unblocked: ReadonlySet<string> = options.unblocked;
  for (let pass = 0; pass < MAX_WAKE_PASSES && unblocked.size > 0; pass += 1) {
    const again: Unit<Event>[] = [...(options.batch ? units : []), ...takenUnits].filter(
      (unit) => unblocked.has(unit.orderingKey) && waitsForPredecessor(unit),
    );
    for (const key of unblocked) {
      for (const entry of parked.get(key) ?? []) {
        if (seen.has(entry.record.messageId)) continue;
        seen.add(entry.record.messageId);
        const delivery: Delivery = { ...sqsDeliveries([entry.record], false)[0]!, fromPark: true };
        const p = parseDelivery(delivery, definition, config.tables);
        // It parsed when it was parked; if it no longer does (the consumer changed), its wake-up decides it.
        if (!p.ok) continue;
        const work: Working = { ...workingOf(p, firstIndex + taken.length, performance.now()), park: entry };
        const unit = work.unit as Unit<Event>;
        takenUnits.push(unit);
        again.push(unit);
        taken.push(work);
      }
    }
    if (again.length === 0) return taken;
    const before = reopen(again);
    // Batch order: the batch's own first, then the parked ones by the time they were sent.
    again.sort((a, b) => a.index - b.index);
    try {
      await engine.settle(again, clock);
    } catch (error) {
      logger?.error('deciding the waiting messages again failed unexpectedly; they wait for their wake-up', {
        error: describeError(error),
      });
    }
    for (const unit of again) {
      const previous = before.get(unit);
      const verdict = unit.verdict;
      const notAttempted =
        verdict === undefined || (verdict.kind === 'failed' && verdict.failure.retryable && !verdict.failure.countsAsAttempt);
      if (notAttempted && previous !== undefined) unit.verdict = previous;
      else if (verdict === undefined) unit.verdict = { kind: 'failed', failure: classify(new NotAttempted('not settled')) };
    }
    unblocked = new Set(again.filter((unit) => unit.verdict?.kind === 'applied').map((unit) => unit.orderingKey));
  }
  return taken;
}

/**
 * Parks each delivery of the batch that still waits for its predecessor and has attempts left
 * (its verdict a counted retry of `PredecessorNotApplied`): its SQS record goes to the park; a
 * delivery that could not be parked is retried as without parking.
 *
 * Then each parked one is decided again on a strongly consistent read of its items: a predecessor
 * that committed while it was being parked is seen here: the invocation that applies a message
 * reads the park beside its commit, so it can miss a park written at the same moment; this read
 * comes after a wait of twice this batch's settle time (20 to 250 ms), by which a commit running
 * at that moment has ended, and sees it (a slower one leaves the message to its wake-up: later,
 * never lost; docs/parking.md, "The race"). A parked message applied here leaves the park at once.
 *
 * @returns the units applied here (what waits behind them in the park is taken up next)
 */
async function parkWaiting<Event>(
  working: Working[],
  parking: ParkedMessages,
  deps: ProcessDeliveriesDeps<Event>,
  clock: InvocationClock,
  settleMs: number,
): Promise<Unit[]> {
  await Promise.all(
    working.map(async (work) => {
      const { verdict, delivery } = work;
      if (work.park !== undefined || delivery.sqsRecord === undefined || work.orderingKey === undefined) return;
      if (verdict.kind !== 'retry' || verdict.failure.waitsForPredecessor !== true || !verdict.failure.countsAsAttempt) return;
      work.parked = await parking.park(work.orderingKey, delivery.sqsRecord);
    }),
  );
  const parked = working.filter((work) => work.parked === true && work.unit !== undefined);
  if (parked.length === 0) return [];
  // A predecessor whose batch read the park before this park was written committed at about the
  // same time, and its commit may still be in flight: wait as long as this batch's own decisions
  // and commit took, twice (the commit latency this environment sees now), so that the read below
  // sees it. A commit slower still leaves the message to its wake-up: later, never lost.
  const waitMs = Math.min(PARK_SETTLE_WAIT_MAX_MS, Math.max(PARK_SETTLE_WAIT_MIN_MS, 2 * settleMs), clock.remainingTimeMs() / 4);
  if (waitMs > 0) await deps.engine.sleep(waitMs);
  const units = parked.map((work) => work.unit!) as Unit<Event>[];
  // Not verified: its failure on what the engine believes makes the engine read its items again.
  const before = reopen(units);
  try {
    await deps.engine.settle(units, clock);
  } catch (error) {
    deps.logger?.error('deciding parked messages again failed unexpectedly; they wait in the park', { error: describeError(error) });
  }
  for (const work of parked) {
    const unit = work.unit!;
    const verdict = unit.verdict;
    if (verdict?.kind === 'applied' || verdict?.kind === 'duplicate') {
      work.verdict = { kind: verdict.kind };
      work.settledAt = unit.settledAt ?? performance.now();
      work.parked = false;
      work.leftPark = JSON.stringify(work.delivery.sqsRecord);
    } else unit.verdict = before.get(unit as Unit<Event>);
  }
  return units.filter((unit) => unit.verdict?.kind === 'applied');
}

/**
 * What leaves the park: a message taken up from it and settled (applied, a duplicate, or sent to
 * the dead-letter queue) is removed and deleted from the queue; a batch message that was parked
 * before (its wake-up) and is settled now is removed (the event source mapping deletes it).
 */
function releasesOf(working: readonly Working[], parked: ReadonlyMap<string, readonly ParkedRecord[]>): ParkRelease[] {
  const settled = (work: Working) =>
    work.leaveToWakeUp === true ||
    work.verdict.kind === 'applied' ||
    work.verdict.kind === 'duplicate' ||
    (work.verdict.kind === 'dead-lettered' && work.sent);
  const releases: ParkRelease[] = [];
  for (const work of working) {
    if (!settled(work)) continue;
    if (work.park !== undefined) {
      const { record, orderingKey, stored } = work.park;
      releases.push({
        orderingKey,
        messageId: record.messageId,
        stored,
        ...(work.leaveToWakeUp === true
          ? {}
          : { deleteMessage: { receiptHandle: record.receiptHandle, eventSourceARN: record.eventSourceARN } }),
      });
      continue;
    }
    if (work.orderingKey === undefined) continue;
    const lastVerdict = work.unit?.verdict;
    if (work.verdict.kind === 'dead-lettered' && lastVerdict?.kind === 'failed' && lastVerdict.failure.waitsForPredecessor === true) {
      // Dead-lettered while waiting (its attempts spent): parked on its earlier attempts, it leaves the park.
      releases.push({ orderingKey: work.orderingKey, messageId: work.delivery.messageId });
      continue;
    }
    if (work.leftPark !== undefined) {
      releases.push({ orderingKey: work.orderingKey, messageId: work.delivery.messageId, stored: work.leftPark });
      continue;
    }
    const entry = parked.get(work.orderingKey)?.find((candidate) => candidate.record.messageId === work.delivery.messageId);
    if (entry !== undefined) releases.push({ orderingKey: work.orderingKey, messageId: entry.record.messageId, stored: entry.stored });
  }
  return releases;
}

/** Turns a retryable failure on the last real attempt into `RetriesExhausted`. */
async function countAttempts(working: Working[], deps: ProcessDeliveriesDeps<unknown>): Promise<void> {
  const { config, attempts, logger } = deps;
  const max = config.maxAttempts;
  const needSkips: Working[] = [];
  await Promise.all(
    working.map(async (work) => {
      const { verdict, delivery } = work;
      const source = delivery.attempts;
      if (source.kind === 'receive-count') {
        // Until the budget could be spent, the receive count bounds the attempts: no read needed.
        work.verdict = withAttempt(verdict, source.receiveCount);
        if (verdict.kind === 'retry' && verdict.failure.countsAsAttempt && source.receiveCount >= max) needSkips.push(work);
        return;
      }
      if (verdict.kind !== 'retry' || !verdict.failure.countsAsAttempt) return;
      try {
        const count = await attempts.recordFailure(source.sourceId, source.recordIdentity, {
          source: source.source,
          errorType: verdict.failure.errorType,
          errorMessage: verdict.failure.errorMessage,
        });
        work.verdict = count >= max ? exhausted(verdict.failure, count) : { ...verdict, attempt: count };
      } catch (error) {
        logger?.warn('could not count a failed attempt; the event source mapping retry limit applies', {
          messageId: delivery.messageId,
          error: describeError(error),
        });
      }
    }),
  );
  if (needSkips.length === 0) return;
  try {
    const skips = await attempts.skipsOf(needSkips.map((work) => work.delivery.attempts.sourceId));
    for (const work of needSkips) {
      const source = work.delivery.attempts;
      if (source.kind !== 'receive-count' || work.verdict.kind !== 'retry') continue;
      const attempt = Math.max(1, source.receiveCount - (skips.get(source.sourceId) ?? 0));
      work.verdict = attempt >= max ? exhausted(work.verdict.failure, attempt) : { ...work.verdict, attempt };
    }
  } catch (error) {
    // Without the skips, dead-lettering could cut a message's budget short: retry it; the
    // queue's redrive policy (which leaves room for skipped receives) remains the safety net.
    logger?.warn('could not read the attempt records; the messages are retried', { error: describeError(error) });
  }
}

function withAttempt(verdict: Verdict, attempt: number): Verdict {
  if (verdict.kind === 'retry' || verdict.kind === 'dead-lettered') return { ...verdict, attempt };
  return verdict;
}

function exhausted(last: Classification, attempt: number): Verdict {
  return {
    kind: 'dead-lettered',
    attempt,
    failure: {
      retryable: false,
      reason: FailureReason.RetriesExhausted,
      errorType: last.errorType,
      errorMessage: last.errorMessage,
      countsAsAttempt: true,
    },
  };
}

/**
 * After the first message of a FIFO group or Kafka partition that must come back, nothing of its
 * scope is acted on: a later message comes back too, unrun and not counted, and its outcome says
 * so (a duplicate or a dead letter behind it is decided again next time). An applied message can
 * never be behind one: the engine stops the scope before it commits, and a dead letter whose
 * successors commit is sent first.
 */
function stopScopes(working: Working[], logger: Logger | undefined): void {
  const stopped = new Set<string>();
  for (const work of working) {
    const scope = work.delivery.scope;
    if (scope === undefined) continue;
    if (stopped.has(scope)) {
      if (work.verdict.kind === 'applied') {
        logger?.error('an applied message follows one that must be retried in its message group or partition', {
          messageId: work.delivery.messageId,
        });
      } else if (work.verdict.kind !== 'retry' || work.verdict.failure.countsAsAttempt) {
        work.verdict = {
          kind: 'retry',
          attempt: undefined,
          failure: classify(new NotAttempted('an earlier message of its message group or partition must be retried first')),
        };
      }
      continue;
    }
    if (work.verdict.kind === 'retry') stopped.add(scope);
  }
}

/** A working delivery as a dead-letter candidate. */
function candidateOf(work: Working): DeadLetterCandidate {
  const verdict = work.verdict as Extract<Verdict, { kind: 'dead-lettered' }>;
  return {
    delivery: work.delivery,
    idempotencyKey: work.idempotencyKey,
    payloadHash: work.payloadHash,
    failure: verdict.failure,
    attempt: verdict.attempt ?? receiveAttempt(work.delivery),
    alreadyMarked: work.alreadyMarked,
    home: work.unit?.home,
  };
}

/** A unit the engine dead-letters before its successors commit, as a candidate. */
function candidateOfUnit(unit: Unit): DeadLetterCandidate {
  const verdict = unit.verdict as Extract<UnitVerdict, { kind: 'failed' }>;
  return {
    delivery: unit.delivery,
    idempotencyKey: unit.idempotencyKey,
    payloadHash: unit.payloadHash,
    failure: verdict.failure,
    attempt: receiveAttempt(unit.delivery),
    alreadyMarked: verdict.alreadyMarked === true,
    home: unit.home,
  };
}

/** An SQS message's receive count (an upper bound of its attempts); `undefined` on Kafka. */
function receiveAttempt(delivery: Delivery): number | undefined {
  return delivery.attempts.kind === 'receive-count' ? delivery.attempts.receiveCount : undefined;
}

/** Carries out a dead-letter outcome on a working delivery. */
function applyOutcome(work: Working, outcome: DeadLetterOutcome): void {
  const attempt = work.verdict.kind === 'dead-lettered' ? work.verdict.attempt : undefined;
  if (outcome.kind === 'sent') {
    work.sent = true;
    work.verdict = { kind: 'dead-lettered', failure: outcome.failure, attempt };
  } else if (outcome.kind === 'duplicate') {
    work.verdict = { kind: 'duplicate' };
  } else {
    work.verdict = { kind: 'retry', attempt, failure: outcome.failure };
  }
}

/**
 * Dead-letters, before the engine runs, a delivery that failed before it could be decided and has
 * successors in its FIFO group or Kafka partition in the batch: they are about to commit, and a
 * dead letter that could not be sent afterwards would stop the group behind applied messages. If
 * it cannot be sent, its scope stops there (retried, not counted).
 */
async function deadLetterBeforeSuccessors(
  working: Working[],
  stops: Map<string, number>,
  deps: ProcessDeliveriesDeps<unknown>,
): Promise<void> {
  const lastOfScope = new Map<string, number>();
  for (const work of working) if (work.delivery.scope !== undefined) lastOfScope.set(work.delivery.scope, work.index);
  const early = working.filter(
    (work) =>
      work.unit === undefined &&
      work.verdict.kind === 'dead-lettered' &&
      work.delivery.scope !== undefined &&
      (lastOfScope.get(work.delivery.scope) ?? -1) > work.index,
  );
  if (early.length === 0) return;
  const outcomes = await deadLetter(early.map(candidateOf), deps);
  early.forEach((work, i) => {
    applyOutcome(work, outcomes[i]!);
    const scope = work.delivery.scope!;
    if (work.verdict.kind === 'retry' && (stops.get(scope) ?? Number.POSITIVE_INFINITY) > work.index) stops.set(scope, work.index);
  });
}

/**
 * Marks, then sends, every dead letter not sent yet; a marker that finds the message applied makes
 * it a duplicate. The dead letters of one FIFO group or Kafka partition go one after another: a
 * later one is sent only once the earlier one is, so that none is both in the dead-letter queue
 * and reported for retry behind one that could not be sent (it is decided again next time).
 */
async function sendDeadLetters(working: Working[], deps: ProcessDeliveriesDeps<unknown>): Promise<void> {
  let pending = working.filter((work) => work.verdict.kind === 'dead-lettered' && !work.sent);
  const failedScopes = new Set<string>();
  while (pending.length > 0) {
    const wave: Working[] = [];
    const later: Working[] = [];
    const inWave = new Set<string>();
    for (const work of pending) {
      const scope = work.delivery.scope;
      if (scope !== undefined && failedScopes.has(scope)) continue;
      if (scope !== undefined && inWave.has(scope)) later.push(work);
      else {
        if (scope !== undefined) inWave.add(scope);
        wave.push(work);
      }
    }
    if (wave.length === 0) return;
    const outcomes = await deadLetter(wave.map(candidateOf), deps);
    wave.forEach((work, i) => {
      applyOutcome(work, outcomes[i]!);
      if (work.verdict.kind === 'retry' && work.delivery.scope !== undefined) failedScopes.add(work.delivery.scope);
    });
    pending = later;
  }
}

/** Indexes of the deliveries to report as batch item failures: every retry, and in a scope everything after the first one. */
function reportedDeliveries(working: readonly Working[]): Set<number> {
  const reported = new Set<number>();
  const stopped = new Set<string>();
  for (const work of working) {
    const scope = work.delivery.scope;
    if (work.verdict.kind === 'retry' || (scope !== undefined && stopped.has(scope))) {
      reported.add(work.index);
      if (scope !== undefined) stopped.add(scope);
    }
  }
  return reported;
}

/** Counts, for SQS, the receives in which a reported message was not attempted. */
async function countSkips(working: readonly Working[], reported: ReadonlySet<number>, deps: ProcessDeliveriesDeps<unknown>): Promise<void> {
  const skipped = working.filter(
    (work) =>
      reported.has(work.index) &&
      work.delivery.attempts.kind === 'receive-count' &&
      work.verdict.kind === 'retry' &&
      !work.verdict.failure.countsAsAttempt,
  );
  await Promise.all(
    skipped.map(async (work) => {
      try {
        await deps.attempts.recordSkip(
          work.delivery.attempts.sourceId,
          work.verdict.kind === 'retry' ? work.verdict.failure.errorMessage : '',
        );
      } catch (error) {
        deps.logger?.warn('could not count a receive that was not an attempt', {
          messageId: work.delivery.messageId,
          error: describeError(error),
        });
      }
    }),
  );
}

function observe(result: DeliveryResult, observer: OutcomeObserver): void {
  const { verdict } = result;
  const outcome =
    verdict.kind === 'applied'
      ? Outcome.Applied
      : verdict.kind === 'duplicate'
        ? Outcome.Duplicate
        : verdict.kind === 'dead-lettered'
          ? Outcome.DeadLettered
          : Outcome.Retried;
  const failure = verdict.kind === 'retry' || verdict.kind === 'dead-lettered' ? verdict.failure : undefined;
  observer.onOutcome({
    outcome,
    messageId: result.delivery.messageId,
    idempotencyKey: result.idempotencyKey,
    orderingKey: result.orderingKey,
    fields: result.fields,
    attempt: verdict.kind === 'retry' || verdict.kind === 'dead-lettered' ? verdict.attempt : attemptOf(result.delivery),
    reason: verdict.kind === 'dead-lettered' ? (failure?.reason ?? 'Unknown') : undefined,
    errorType: failure?.errorType,
    errorMessage: failure?.errorMessage,
    countsAsAttempt: verdict.kind === 'retry' ? verdict.failure.countsAsAttempt : undefined,
    durationMs: result.durationMs,
    ...(result.parked === true ? { parked: true as const } : {}),
    ...(result.delivery.fromPark === true ? { fromPark: true as const } : {}),
  });
}

function attemptOf(delivery: Delivery): number | undefined {
  return delivery.attempts.kind === 'receive-count' ? delivery.attempts.receiveCount : undefined;
}

/**
 * The event source a batch is annotated with: a source without a receive count is named by its
 * attempt log's prefix (`kafka:`, `kinesis:`, `dynamodb:` → `dynamodb-streams`), else SQS.
 */
function traceSourceOf(first: Delivery | undefined, fifo: boolean | undefined): string {
  if (first?.attempts.kind === 'log') {
    const prefix = first.attempts.sourceId.split(':', 1)[0];
    return prefix === 'dynamodb' ? 'dynamodb-streams' : prefix === 'kinesis' ? 'kinesis' : 'kafka';
  }
  return fifo === true ? 'sqs-fifo' : 'sqs';
}
