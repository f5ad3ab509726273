import { Outcome, type OutcomeRecord } from 'idempotent-consumer/observability';
import {
  type DeadLetterJudgement,
  declaredKinds,
  type ForeignCause,
  type InjectedFaults,
  type InjectedKind,
  judgeDeadLetter,
} from './deadLetterCause.js';
import type { FaultKind } from './faultInjection.js';
import type { MetricTotals } from './metricsCapture.js';

/** A message the local run sent to the event source. */
export interface SentMessage {
  /** The source's id: SQS `messageId`, `<topic>-<partition>@<offset>` for Kafka, the record's `eventID` for Kinesis and DynamoDB Streams. */
  readonly messageId: string;
  /** Its line in the input file. */
  readonly line: number;
  readonly body: string;
  /**
   * When the run sent it to the source (`Date.now()`, milliseconds since the epoch): after its
   * `SendMessageBatch` request returned (SQS), when it was appended to the log (Kafka, Kinesis,
   * DynamoDB Streams). The start of its `endToEndMs`; `undefined`: left out of it.
   */
  readonly sentAtMs?: number;
}

/**
 * Deliveries of messages that came again from the source (see {@link RunReport.redeliveries}).
 */
export interface Redeliveries {
  /** Redeliveries in the run: deliveries from a receive that were not their message's first. */
  readonly total: number;
  /**
   * `total` by the reason the message came back: the `errorType` of its latest retried delivery
   * (a parked one too), `Unknown` when it had none or had ended since (at-least-once delivery).
   */
  readonly byReason: Readonly<Record<string, number>>;
  /** `total / messagesIn`, rounded to 3 decimals (0 without messages). */
  readonly perMessage: number;
  /** Each reason's count divided by `messagesIn`, rounded to 3 decimals. */
  readonly perMessageByReason: Readonly<Record<string, number>>;
}

/** Out-of-order deliveries parked in the inbox table (`retry.parkOutOfOrder`), and what became of them. */
export interface Parking {
  /** Retried deliveries whose record was parked (`OutcomeRecord.parked`). */
  readonly parked: number;
  /** Applied outcomes decided from the park (`fromPark`): messages that needed no redelivery. */
  readonly appliedFromPark: number;
  /** Every outcome settled from the park (`fromPark`): applied, a duplicate, or dead-lettered (one still waiting gives none). */
  readonly settledFromPark: number;
}

/** A message found in the dead-letter queue after the run. */
export interface DeadLetterSnapshot {
  /** The dead-letter message's own id. */
  readonly messageId: string;
  readonly body: string;
  /** The consumer's `failureReason`; `undefined` when the queue's redrive policy moved it. */
  readonly failureReason: string | undefined;
  /** The consumer's `ic.errorType`: the name of the error that decided it; `undefined` when not known. */
  readonly errorType?: string | undefined;
  /** The consumer's `ic.errorMessage`. */
  readonly errorMessage?: string | undefined;
  /** The `originalMessageId` attribute, or the message's own id when the redrive policy moved it. */
  readonly originalMessageId: string;
}

/**
 * Dead letters judged alike (see `deadLetterCause.ts`): one reason, one last error, one verdict.
 * The report lists them largest group first.
 */
export interface DeadLetterCauseGroup {
  /** `own`: the message's own (passes); `excused`: produced by a fault the run injects on purpose (passes, with a note); `not-own`: fails the check. */
  readonly verdict: DeadLetterJudgement['verdict'];
  /** The failure reason; `RedrivePolicy` for a message the queue's redrive policy moved without one. */
  readonly reason: string;
  /** The last error's name, when known. */
  readonly errorType?: string;
  /** `message`, `consumer-code` (own) or the foreign cause (`contention`, `throttling`, …). */
  readonly cause: 'message' | 'consumer-code' | ForeignCause;
  /** Why, in a sentence. */
  readonly explanation: string;
  /** With `excused`: the injected kinds the run declared that produce it. */
  readonly excusedBy?: readonly InjectedKind[];
  /** Messages in the group. */
  readonly count: number;
  /** Their lines in the input file (the first 10). */
  readonly lines: readonly number[];
}

/** What `npm start` reports; `--json` prints it as one line. */
export interface RunReport {
  /** The event source of the run: an SQS queue (see `fifo`) or a Kafka topic. */
  readonly source: 'sqs' | 'kafka' | 'kinesis' | 'dynamodb-streams';
  /** `true` when the SQS queue is a FIFO queue (left out otherwise). */
  readonly fifo?: true;
  /** Messages the run sent to the source (one per input line that holds a body). */
  readonly messagesIn: number;
  /**
   * Messages applied (each message once, however often it was delivered). With `duplicates`,
   * `deadLettered` and `unaccounted` it adds up to `messagesIn` (`countsAddUp`).
   */
  readonly applied: number;
  /** Messages that only ever ended as a duplicate of an applied idempotency key (producer duplicates). */
  readonly duplicates: number;
  /** Deliveries that failed and were retried (one message may count several times). */
  readonly retried: number;
  /** Messages dead-lettered: by the consumer with a reason, or moved by the queue's redrive policy. */
  readonly deadLettered: number;
  /** `deadLettered` by reason (`RedrivePolicy`: moved by the queue's redrive policy, without one). */
  readonly deadLetteredByReason: Readonly<Record<string, number>>;
  /** Messages with no final outcome at the end: still in the source (in flight), or lost. Any fails the check. */
  readonly unaccounted: number;
  /** Messages the mapping's filter criteria dropped, never invoked (0 without filters). */
  readonly filteredOut?: number;
  /** `messagesIn = applied + duplicates + deadLettered + filteredOut + unaccounted`. A message that ended in two ways counts twice, and breaks it. */
  readonly countsAddUp: boolean;
  /** Every dead letter, judged: the message's own, excused (an injected fault), or not its own. */
  readonly deadLetterCauses: readonly DeadLetterCauseGroup[];
  /** What the run injects on purpose: `--fault` rates above 0, and `--transient-failure-rate` (left out when nothing). */
  readonly injected?: { readonly faults?: Readonly<Partial<Record<FaultKind, number>>>; readonly transientFailureRate?: number };
  /** Present when the run hit its time limit before the source drained: the limit, in milliseconds, and what was left. */
  readonly timedOut?: { readonly limitMs: number; readonly detail: string };
  /**
   * Processing time percentiles, in milliseconds: per delivery, from the start of its batch's
   * invocation to its outcome (the consumer's latency metric). It leaves out the time a message
   * waited in the source and between its retries: see `endToEndMs` for the time a user sees.
   */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number };
  /**
   * End-to-end latency percentiles, in milliseconds: per message, from when the run sent it to the
   * source (`SentMessage.sentAtMs`) to when its last final outcome (applied, duplicate,
   * dead-lettered) was observed: the wait in the source, every retry, redelivery and visibility
   * backoff included, the latency a user sees. `latencyMs` is only the processing time within a
   * batch. Messages without a final outcome (or a stamp) are left out; all 0 when none is left.
   * All sources: SQS stamps each message when its `SendMessageBatch` returned, the logs (Kafka,
   * Kinesis, DynamoDB Streams) when it was appended; the run sends everything before it consumes.
   */
  readonly endToEndMs: { readonly p50: number; readonly p90: number; readonly p99: number };
  /**
   * Redeliveries: deliveries of a message (by `messageId`) that came from a receive of the source
   * (not decided from the park, `fromPark`) and were not its first delivery, by the reason it came
   * back. A parked message that comes back at its wake-up (its visibility backoff) is one; one
   * applied from the park is not.
   */
  readonly redeliveries: Redeliveries;
  /** Parked out-of-order deliveries (`retry.parkOutOfOrder`); left out when all are 0. */
  readonly parking?: Parking;
  /** Invocations of the consumer that completed, counted from its `BatchSize` metric. */
  readonly invocations: number;
  /** The run's wall-clock duration, in milliseconds (whole), from its start to the report. */
  readonly durationMs: number;
  /** The exactly-once check's verdict: `ok`, and every problem found, one sentence each (none when `ok`). */
  readonly check: {
    /**
     * Every message ended in exactly one of applied, duplicate, dead-lettered for a reason of its
     * own (or excused); the counts add up; nothing applied twice; the source drained in time.
     */
    readonly ok: boolean;
    readonly problems: readonly string[];
  };
  /** Things worth knowing that are not failures of the check. */
  readonly notes: readonly string[];
  /** Outbox items the run's decisions wrote, and how many of them the relay published. */
  readonly outbox?: { readonly written: number; readonly published: number };
}

/** Inputs of {@link buildReport}. */
export interface ReportInputs {
  readonly source: 'sqs' | 'kafka' | 'kinesis' | 'dynamodb-streams';
  /** The SQS queue is a FIFO queue. @default false */
  readonly fifo?: boolean;
  readonly sent: readonly SentMessage[];
  /** Every outcome the consumer reported, in the order they were observed. */
  readonly outcomes: readonly OutcomeRecord[];
  /**
   * When each of `outcomes` was observed (`Date.now()`, milliseconds since the epoch), index for
   * index: the end of `endToEndMs`. @default none: `endToEndMs` is all 0
   * @throws RangeError (from {@link buildReport}) when given with another length than `outcomes`
   */
  readonly outcomesObservedAtMs?: readonly number[];
  /** The dead-letter queue's content after the run. */
  readonly deadLetters: readonly DeadLetterSnapshot[];
  /**
   * Message ids the event source mapping's filter criteria dropped (never invoked, as on AWS):
   * they end there, counted as filtered out, not lost. @default none
   */
  readonly filteredOut?: ReadonlySet<string>;
  /** What the consumer's own invariants found wrong (its `--check` module). */
  readonly domainProblems?: readonly string[];
  /** Outbox items written and published, when the run had a relay. */
  readonly outbox?: { readonly written: number; readonly published: number };
  /** The figures read from the metric output. */
  readonly metrics: MetricTotals;
  /** Messages still in the source (queue or log) at the end. */
  readonly remainingInSource: number;
  /** What the run injects on purpose (`--fault`, `--transient-failure-rate`): excuses the dead letters those produce. @default nothing */
  readonly injected?: InjectedFaults;
  /** Set when the run stopped consuming at its time limit (`--timeout`) before the source drained. */
  readonly timedOut?: { readonly limitMs: number; readonly detail: string };
  readonly durationMs: number;
}

const finalOutcomes: ReadonlySet<string> = new Set([Outcome.Applied, Outcome.Duplicate, Outcome.DeadLettered]);

/** The reason of a redelivery whose message had no retried delivery to explain it. */
const UNKNOWN = 'Unknown';

/** The reason under which messages the queue's redrive policy moved (without a reason) are counted. */
const REDRIVE_POLICY = 'RedrivePolicy';

/**
 * Builds the run's report and checks exactly-once against what is really there, not only
 * against what the consumer said:
 *
 * 1. every sent message has a final outcome: applied, duplicate, or dead-lettered (by the
 *    consumer with a reason, or by the queue's redrive policy: found in the DLQ); a message
 *    delivered again after it ended may end again only as it did or as a duplicate, never applied
 *    twice or both applied and dead-lettered (a note counts those redeliveries);
 * 2. the counts add up: messages in = applied + duplicates + dead-lettered + unaccounted (each
 *    message counted once in the bucket of how it ended; one that ended in two ways counts in
 *    both and breaks the equation), and nothing is unaccounted (still in the source, or lost);
 * 3. every dead letter is the message's own, or excused by a fault the run injects on purpose
 *    (`judgeDeadLetter`, judged on the DLQ copy's `ic.failureReason` and `ic.errorType`, else the
 *    outcome's); a valid message dead-lettered for a reason not its own (contention, rounds,
 *    throttling, the library's errors, `NotAttempted`, no reason) fails the check;
 * 4. every message the consumer dead-lettered is in the dead-letter queue, body byte for byte,
 *    and the DLQ holds nothing that was not sent;
 * 5. no idempotency key was applied twice;
 * 6. the consumer's own invariants hold (the problems its `--check` module found);
 * 7. the run did not stop at its time limit, and the source is empty;
 * 8. the figures of the metric output agree with the outcomes (per delivery);
 * 9. with an outbox relay, every outbox item written was published.
 *
 * Besides the check, it counts redeliveries by reason (`countRedeliveries`), parked deliveries, and
 * the end-to-end latency per message (from `sentAtMs` and `outcomesObservedAtMs`). An outcome
 * decided from the park (`fromPark`) counts as any other: a message parked, then applied from the
 * park, is applied once.
 *
 * @throws RangeError when `outcomesObservedAtMs` is given with another length than `outcomes`
 */
export function buildReport(inputs: ReportInputs): RunReport {
  if (inputs.outcomesObservedAtMs !== undefined && inputs.outcomesObservedAtMs.length !== inputs.outcomes.length) {
    throw new RangeError(
      `outcomesObservedAtMs has ${inputs.outcomesObservedAtMs.length} stamps for ${inputs.outcomes.length} outcomes: one per outcome`,
    );
  }
  const problems: string[] = [];
  // First, as it explains the rest: what was still in flight is unaccounted for.
  if (inputs.timedOut !== undefined) {
    problems.push(
      `the run hit its time limit (${formatSeconds(inputs.timedOut.limitMs)}, --timeout) before the source drained: ${inputs.timedOut.detail}`,
    );
  }
  const injected = inputs.injected ?? {};
  const sentById = new Map(inputs.sent.map((m) => [m.messageId, m]));
  const finals = new Map<string, OutcomeRecord[]>();
  for (const record of inputs.outcomes) {
    if (!finalOutcomes.has(record.outcome)) continue;
    finals.set(record.messageId, [...(finals.get(record.messageId) ?? []), record]);
  }
  const inDeadLetterQueue = new Map<string, DeadLetterSnapshot[]>();
  for (const message of inputs.deadLetters) {
    inDeadLetterQueue.set(message.originalMessageId, [...(inDeadLetterQueue.get(message.originalMessageId) ?? []), message]);
  }

  const lost: SentMessage[] = [];
  let filteredOut = 0;
  const finalizedTwice: SentMessage[] = [];
  const movedByPolicy: SentMessage[] = [];
  const copies: SentMessage[] = [];
  const redelivered: SentMessage[] = [];
  // Per message, the buckets it ended in: normally one; two for a message that ended in two ways.
  let applied = 0;
  let duplicates = 0;
  let deadLettered = 0;
  const deadLetteredByReason: Record<string, number> = {};
  const judged: {
    readonly message: SentMessage;
    readonly reason: string;
    readonly errorType: string | undefined;
    readonly judgement: DeadLetterJudgement;
  }[] = [];
  const judge = (message: SentMessage, reason: string | undefined, errorType: string | undefined) => {
    const key = reason ?? REDRIVE_POLICY;
    deadLetteredByReason[key] = (deadLetteredByReason[key] ?? 0) + 1;
    judged.push({ message, reason: key, errorType, judgement: judgeDeadLetter({ reason, errorType }, injected) });
  };
  for (const message of inputs.sent) {
    const outcomes = finals.get(message.messageId) ?? [];
    const dead = inDeadLetterQueue.get(message.messageId) ?? [];
    if (outcomes.length === 0 && dead.length === 1 && dead[0]?.failureReason === undefined) {
      movedByPolicy.push(message);
      deadLettered += 1;
      judge(message, undefined, undefined);
      continue;
    }
    if (outcomes.length === 0 && dead.length === 0 && inputs.filteredOut?.has(message.messageId) === true) {
      filteredOut += 1;
      continue;
    }
    if (outcomes.length === 0) {
      lost.push(message);
      continue;
    }
    // Delivered again after it ended (at least once: a batch retried after its commit) is fine when
    // the later deliveries only acknowledge it; applied twice, or applied and dead-lettered, is not.
    const appliedCount = outcomes.filter((o) => o.outcome === Outcome.Applied).length;
    const deadLetterOutcome = outcomes.find((o) => o.outcome === Outcome.DeadLettered);
    if (appliedCount > 1 || (appliedCount === 1 && deadLetterOutcome !== undefined)) finalizedTwice.push(message);
    else if (outcomes.length > 1) redelivered.push(message);
    if (appliedCount > 0) applied += 1;
    if (deadLetterOutcome !== undefined) {
      deadLettered += 1;
      // What is stored decides: the DLQ copy's reason and last error, else what the consumer said.
      const stored = dead.find((copy) => copy.failureReason !== undefined);
      judge(message, stored?.failureReason ?? deadLetterOutcome.reason, stored?.errorType ?? deadLetterOutcome.errorType);
    }
    if (appliedCount === 0 && deadLetterOutcome === undefined) duplicates += 1;
    if (deadLetterOutcome !== undefined && dead.length === 0)
      problems.push(`line ${message.line}: dead-lettered, but it is not in the DLQ`);
    if (deadLetterOutcome !== undefined && dead.length > 1) copies.push(message);
    for (const copy of deadLetterOutcome !== undefined ? dead : []) {
      if (copy.body !== message.body) problems.push(`line ${message.line}: the DLQ copy's body differs from the body sent`);
    }
  }
  const unaccounted = lost.length;
  const messagesIn = inputs.sent.length;
  const countsAddUp = messagesIn === applied + duplicates + deadLettered + filteredOut + unaccounted;
  if (!countsAddUp) {
    const filtered = filteredOut > 0 ? ` + ${filteredOut} filtered out` : '';
    problems.push(
      `the counts do not add up: ${messagesIn} messages in, but ${applied} applied + ${duplicates} duplicates + ${deadLettered} dead-lettered${filtered} + ${unaccounted} unaccounted = ` +
        `${applied + duplicates + deadLettered + filteredOut + unaccounted} (a message that ended in two ways counts twice)`,
    );
  }
  if (lost.length > 0) {
    const where = inputs.remainingInSource > 0 || inputs.timedOut !== undefined ? 'still in flight in the source, or lost' : 'lost';
    problems.push(`${lost.length} message(s) have no final outcome (${where}): lines ${lines(lost)}`);
  }
  if (finalizedTwice.length > 0) {
    problems.push(
      `${finalizedTwice.length} message(s) ended in two ways (applied twice, or applied and dead-lettered): lines ${lines(finalizedTwice)}`,
    );
  }

  const deadLetterCauses = groupJudgements(judged);
  for (const group of deadLetterCauses) {
    if (group.verdict !== 'not-own') continue;
    problems.push(
      `${group.count} message(s) dead-lettered for a reason that is not their own — ${group.explanation}: lines ${lineList(group.lines, group.count)}`,
    );
  }
  const excused = deadLetterCauses.filter((group) => group.verdict === 'excused');

  const notes = [
    ...excused.map(
      (group) =>
        `excused: ${group.count} dead letter(s) not their own, produced by a fault this run injects on purpose (${(group.excusedBy ?? []).map(injectedFlag).join(', ')}) — ${group.explanation}: lines ${lineList(group.lines, group.count)}`,
    ),
    ...(movedByPolicy.length > 0
      ? [
          `moved to the DLQ by the queue's redrive policy, without a reason (the consumer never saw their last receive): lines ${lines(movedByPolicy)}`,
        ]
      : []),
    ...(copies.length > 0 ? [`in the DLQ more than once (a dead letter is sent at least once): lines ${lines(copies)}`] : []),
    ...(redelivered.length > 0
      ? [`delivered again after they ended, and acknowledged as such (the source delivers at least once): lines ${lines(redelivered)}`]
      : []),
  ];
  const strangers = inputs.deadLetters.filter((d) => !sentById.has(d.originalMessageId));
  if (strangers.length > 0) problems.push(`${strangers.length} message(s) in the DLQ were not sent by this run`);

  const appliedPerKey = new Map<string, number>();
  for (const record of inputs.outcomes) {
    if (record.outcome === Outcome.Applied && record.idempotencyKey !== undefined) {
      appliedPerKey.set(record.idempotencyKey, (appliedPerKey.get(record.idempotencyKey) ?? 0) + 1);
    }
  }
  const appliedTwice = [...appliedPerKey].filter(([, n]) => n > 1).map(([key]) => key);
  if (appliedTwice.length > 0) problems.push(`applied more than once: ${appliedTwice.slice(0, 10).join(', ')}`);

  problems.push(...(inputs.domainProblems ?? []));
  if (inputs.outbox !== undefined && inputs.outbox.published !== inputs.outbox.written) {
    problems.push(`the outbox has ${inputs.outbox.written} item(s) written and ${inputs.outbox.published} published`);
  }
  if (inputs.remainingInSource > 0) problems.push(`${inputs.remainingInSource} message(s) are still in the source`);

  // The metric output is checked against the outcomes delivery by delivery.
  const count = (outcome: Outcome) => inputs.outcomes.filter((o) => o.outcome === outcome).length;
  const byReason: Record<string, number> = {};
  for (const record of inputs.outcomes) {
    if (record.outcome === Outcome.DeadLettered) byReason[record.reason ?? 'Unknown'] = (byReason[record.reason ?? 'Unknown'] ?? 0) + 1;
  }
  const { metrics } = inputs;
  const figures: ReadonlyArray<readonly [string, number, number]> = [
    ['applied', metrics.applied, count(Outcome.Applied)],
    ['duplicates', metrics.duplicates, count(Outcome.Duplicate)],
    ['retried', metrics.retried, count(Outcome.Retried)],
    ['dead-lettered', metrics.deadLettered, count(Outcome.DeadLettered)],
  ];
  for (const [name, fromMetrics, fromOutcomes] of figures) {
    if (fromMetrics !== fromOutcomes) problems.push(`the metrics say ${fromMetrics} ${name}, the outcomes ${fromOutcomes}`);
  }
  if (!sameCounts(metrics.deadLetteredByReason, byReason)) {
    problems.push(
      `the metrics' dead-letter reasons ${JSON.stringify(metrics.deadLetteredByReason)} differ from the outcomes' ${JSON.stringify(byReason)}`,
    );
  }

  const declared = declaredKinds(injected);
  const faults = Object.fromEntries(Object.entries(injected.faults ?? {}).filter(([, rate]) => typeof rate === 'number' && rate > 0));
  return {
    source: inputs.source,
    ...(inputs.fifo === true && inputs.source === 'sqs' ? { fifo: true as const } : {}),
    messagesIn,
    applied,
    duplicates,
    retried: metrics.retried,
    deadLettered,
    deadLetteredByReason,
    unaccounted,
    filteredOut,
    countsAddUp,
    deadLetterCauses,
    ...(declared.length === 0
      ? {}
      : {
          injected: {
            ...(Object.keys(faults).length === 0 ? {} : { faults }),
            ...(declared.includes('transient-failure') ? { transientFailureRate: injected.transientFailureRate ?? 0 } : {}),
          },
        }),
    ...(inputs.timedOut === undefined ? {} : { timedOut: inputs.timedOut }),
    latencyMs: percentiles(metrics.latenciesMs),
    endToEndMs: percentiles(endToEndLatencies(inputs)),
    redeliveries: countRedeliveries(inputs.outcomes, messagesIn),
    ...parkingOf(inputs.outcomes),
    invocations: metrics.invocations,
    durationMs: Math.round(inputs.durationMs),
    check: { ok: problems.length === 0, problems },
    notes,
    ...(inputs.outbox === undefined ? {} : { outbox: inputs.outbox }),
  };
}

/**
 * Counts redeliveries: walking each message's outcomes in the order observed, a delivery from a
 * receive (not `fromPark`) that is not the message's first is one. Its reason is the `errorType`
 * of the message's latest retried outcome before it (a parked one too: the parked message came
 * back at its wake-up), `Unknown` when there is none or when a final outcome from a receive came
 * since (the message had ended: delivered again at least once). A final outcome decided from the
 * park does not end that: a message that comes back after it came back because it was parked.
 *
 * @param outcomes every outcome, in the order observed
 * @param messagesIn messages sent: the divisor of `perMessage` and `perMessageByReason`
 */
export function countRedeliveries(outcomes: readonly OutcomeRecord[], messagesIn: number): Redeliveries {
  const seen = new Set<string>();
  const comeBackFor = new Map<string, string>();
  const byReason: Record<string, number> = {};
  let total = 0;
  for (const record of outcomes) {
    if (record.fromPark !== true) {
      if (seen.has(record.messageId)) {
        const reason = comeBackFor.get(record.messageId) ?? UNKNOWN;
        byReason[reason] = (byReason[reason] ?? 0) + 1;
        total += 1;
      }
      seen.add(record.messageId);
    }
    if (record.outcome === Outcome.Retried) comeBackFor.set(record.messageId, record.errorType ?? UNKNOWN);
    else if (record.fromPark !== true) comeBackFor.delete(record.messageId);
  }
  const per = (n: number) => (messagesIn === 0 ? 0 : Math.round((n / messagesIn) * 1000) / 1000);
  const sorted = Object.fromEntries(Object.entries(byReason).sort(([a], [b]) => a.localeCompare(b)));
  return {
    total,
    byReason: sorted,
    perMessage: per(total),
    perMessageByReason: Object.fromEntries(Object.entries(sorted).map(([reason, n]) => [reason, per(n)])),
  };
}

/** The parking figures, or nothing when all are 0. */
function parkingOf(outcomes: readonly OutcomeRecord[]): { parking?: Parking } {
  const parking: Parking = {
    parked: outcomes.filter((o) => o.outcome === Outcome.Retried && o.parked === true).length,
    appliedFromPark: outcomes.filter((o) => o.outcome === Outcome.Applied && o.fromPark === true).length,
    settledFromPark: outcomes.filter((o) => o.fromPark === true).length,
  };
  return parking.parked + parking.appliedFromPark + parking.settledFromPark === 0 ? {} : { parking };
}

/** Per message with a send stamp and a final outcome: from its send to its last final outcome observed, in milliseconds. */
function endToEndLatencies(inputs: ReportInputs): number[] {
  const stamps = inputs.outcomesObservedAtMs;
  if (stamps === undefined) return [];
  const lastFinal = new Map<string, number>();
  inputs.outcomes.forEach((record, i) => {
    const at = stamps[i];
    if (!finalOutcomes.has(record.outcome) || at === undefined) return;
    lastFinal.set(record.messageId, Math.max(at, lastFinal.get(record.messageId) ?? at));
  });
  return inputs.sent.flatMap((message) => {
    const end = lastFinal.get(message.messageId);
    return message.sentAtMs === undefined || end === undefined ? [] : [Math.max(0, end - message.sentAtMs)];
  });
}

/** The first ten lines of `messages`, and `…` when there are more. */
function lines(messages: readonly SentMessage[]): string {
  return lineList(
    messages.slice(0, 10).map((m) => m.line),
    messages.length,
  );
}

function lineList(shown: readonly number[], total: number): string {
  return shown.join(', ') + (total > shown.length ? ', …' : '');
}

/** Groups judged dead letters by verdict, reason and last error: not-own first, then excused, then own; largest first. */
function groupJudgements(
  judged: readonly {
    readonly message: SentMessage;
    readonly reason: string;
    readonly errorType: string | undefined;
    readonly judgement: DeadLetterJudgement;
  }[],
): DeadLetterCauseGroup[] {
  const groups = new Map<string, { group: Omit<DeadLetterCauseGroup, 'count' | 'lines'>; lines: number[] }>();
  for (const { message, reason, errorType, judgement } of judged) {
    // A reason of the message's own is one group whatever its error's name.
    const shownType = judgement.verdict === 'own' && judgement.cause === 'message' ? undefined : errorType;
    const key = JSON.stringify([judgement.verdict, reason, shownType ?? null]);
    let entry = groups.get(key);
    if (entry === undefined) {
      entry = {
        group: {
          verdict: judgement.verdict,
          reason,
          ...(shownType === undefined ? {} : { errorType: shownType }),
          cause: judgement.cause,
          explanation: judgement.explanation,
          ...(judgement.verdict === 'excused' ? { excusedBy: judgement.excusedBy } : {}),
        },
        lines: [],
      };
      groups.set(key, entry);
    }
    entry.lines.push(message.line);
  }
  const rank = { 'not-own': 0, excused: 1, own: 2 } as const;
  return [...groups.values()]
    .map(({ group, lines: all }) => ({ ...group, count: all.length, lines: [...all].sort((a, b) => a - b).slice(0, 10) }))
    .sort((a, b) => rank[a.verdict] - rank[b.verdict] || b.count - a.count || a.reason.localeCompare(b.reason));
}

/** How a report names an injected kind: its flag. */
function injectedFlag(kind: InjectedKind): string {
  return kind === 'transient-failure' ? '--transient-failure-rate' : `--fault ${kind}`;
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function sameCounts(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((key) => (a[key] ?? 0) === (b[key] ?? 0));
}

function percentiles(values: readonly number[]): RunReport['latencyMs'] {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length === 0 ? 0 : Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0) * 10) / 10;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99) };
}

/**
 * The report as text for a person: the figures (redeliveries by reason, parking, processing time
 * per delivery and end-to-end latency per message), the equation the counts must satisfy, the dead
 * letters as judged (which failed the check and why), the notes, and the check's verdict with
 * each problem.
 */
export function formatReport(report: RunReport): string {
  const reasons = Object.entries(report.deadLetteredByReason)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([reason, n]) => `      ${reason.padEnd(24)}${String(n).padStart(6)}`);
  const row = (label: string, value: number | string) => `  ${label.padEnd(28)}${String(value).padStart(6)}`;
  const filteredOut = report.filteredOut ?? 0;
  const sum = report.applied + report.duplicates + report.deadLettered + filteredOut + report.unaccounted;
  const equation =
    `  ${report.messagesIn} in ${report.countsAddUp ? '=' : '≠'} ${report.applied} applied + ${report.duplicates} duplicates + ` +
    `${report.deadLettered} dead-lettered${filteredOut > 0 ? ` + ${filteredOut} filtered out` : ''} + ${report.unaccounted} unaccounted` +
    `${report.countsAddUp ? '' : ` (= ${sum}): the counts do not add up`}`;
  const causes = report.deadLetterCauses;
  const total = (verdict: DeadLetterCauseGroup['verdict']) => causes.filter((g) => g.verdict === verdict).reduce((n, g) => n + g.count, 0);
  const label = { 'not-own': 'NOT THEIR OWN', excused: 'excused', own: 'own' } as const;
  const judged = causes
    .filter((g) => g.verdict !== 'own' || g.cause === 'consumer-code')
    .map(
      (g) =>
        `      ${label[g.verdict].padEnd(14)}${String(g.count).padStart(5)}  ${g.explanation}` +
        `${g.excusedBy === undefined ? '' : ` (injected: ${g.excusedBy.map((kind) => (kind === 'transient-failure' ? '--transient-failure-rate' : `--fault ${kind}`)).join(', ')})`}` +
        `${g.verdict === 'own' ? '' : `; lines ${g.lines.join(', ')}${g.count > g.lines.length ? ', …' : ''}`}`,
    );
  const injected = [
    ...Object.entries(report.injected?.faults ?? {}).map(([kind, rate]) => `--fault ${kind}=${rate}`),
    ...(report.injected?.transientFailureRate === undefined ? [] : [`--transient-failure-rate ${report.injected.transientFailureRate}`]),
  ];
  const excused = total('excused');
  return [
    '',
    `Run report (${report.source}${report.fifo === true ? ' FIFO' : ''}, ${(report.durationMs / 1000).toFixed(1)} s, ${report.invocations} invocations` +
      `${report.timedOut === undefined ? '' : `; stopped at its time limit of ${(report.timedOut.limitMs / 1000).toFixed(0)} s`})`,
    row('messages in', report.messagesIn),
    row('applied', report.applied),
    row('duplicates acknowledged', report.duplicates),
    row('retried (deliveries)', report.retried),
    `${row('redeliveries', report.redeliveries.total)}  (${report.redeliveries.perMessage} per message)`,
    ...Object.entries(report.redeliveries.byReason).map(
      ([reason, n]) =>
        `      ${reason.padEnd(24)}${String(n).padStart(6)}  (${report.redeliveries.perMessageByReason[reason] ?? 0} per message)`,
    ),
    ...(report.parking === undefined
      ? []
      : [
          `${row('parked (out of order)', report.parking.parked)}  (applied from the park ${report.parking.appliedFromPark}, settled from the park ${report.parking.settledFromPark})`,
        ]),
    row('dead-lettered', report.deadLettered),
    ...reasons,
    ...(filteredOut > 0 ? [row('filtered out (not invoked)', filteredOut)] : []),
    row('unaccounted', report.unaccounted),
    equation,
    ...(causes.length === 0
      ? []
      : [`  dead letters judged         ${total('own')} their own, ${excused} excused, ${total('not-own')} not their own`, ...judged]),
    ...(injected.length === 0 ? [] : [`  injected on purpose         ${injected.join(', ')}`]),
    `  processing per delivery    p50 ${report.latencyMs.p50} ms, p90 ${report.latencyMs.p90} ms, p99 ${report.latencyMs.p99} ms`,
    `  end to end per message     p50 ${report.endToEndMs.p50} ms, p90 ${report.endToEndMs.p90} ms, p99 ${report.endToEndMs.p99} ms`,
    ...(report.outbox === undefined
      ? []
      : [row('outbox written', report.outbox.written), row('outbox published', report.outbox.published)]),
    '',
    ...report.notes.map((note) => `  note: ${note}`),
    report.check.ok
      ? `Exactly-once check: PASSED — each of the ${report.messagesIn} messages was applied once, acknowledged as a duplicate, or dead-lettered for a reason of its own` +
        `${excused === 0 ? '' : ` (${excused} dead letter(s) excused: produced by the faults this run injects on purpose)`}.`
      : `Exactly-once check: FAILED\n${report.check.problems.map((p) => `  - ${p}`).join('\n')}`,
    '',
  ].join('\n');
}
