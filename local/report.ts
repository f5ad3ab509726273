import { Outcome, type OutcomeRecord } from '../lambda/observability/outcomes.js';
import type { MetricTotals } from './metricsCapture.js';

/** A message the local run sent to the event source. */
export interface SentMessage {
  /** The source's id: SQS `messageId`, or `<topic>-<partition>@<offset>` for Kafka. */
  readonly messageId: string;
  /** Its line in the input file. */
  readonly line: number;
  readonly body: string;
}

/** A message found in the dead-letter queue after the run. */
export interface DeadLetterSnapshot {
  /** The dead-letter message's own id. */
  readonly messageId: string;
  readonly body: string;
  /** The consumer's `failureReason`; `undefined` when the queue's redrive policy moved it. */
  readonly failureReason: string | undefined;
  /** The `originalMessageId` attribute, or the message's own id when the redrive policy moved it. */
  readonly originalMessageId: string;
}

/** What `npm start` reports; `--json` prints it as one line. */
export interface RunReport {
  readonly source: 'sqs' | 'kafka';
  /** `true` when the SQS queue is a FIFO queue (left out otherwise). */
  readonly fifo?: true;
  readonly messagesIn: number;
  readonly applied: number;
  readonly duplicates: number;
  /** Deliveries that failed and were retried (one message may count several times). */
  readonly retried: number;
  readonly deadLettered: number;
  readonly deadLetteredByReason: Readonly<Record<string, number>>;
  /** Processing latency percentiles, in milliseconds. */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number };
  readonly invocations: number;
  readonly durationMs: number;
  readonly check: {
    /** Every message ended in exactly one of applied, duplicate, dead-lettered; nothing applied twice. */
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
  readonly source: 'sqs' | 'kafka';
  /** The SQS queue is a FIFO queue. @default false */
  readonly fifo?: boolean;
  readonly sent: readonly SentMessage[];
  /** Every outcome the consumer reported. */
  readonly outcomes: readonly OutcomeRecord[];
  /** The dead-letter queue's content after the run. */
  readonly deadLetters: readonly DeadLetterSnapshot[];
  /** What the consumer's own invariants found wrong (its `--check` module). */
  readonly domainProblems?: readonly string[];
  /** Outbox items written and published, when the run had a relay. */
  readonly outbox?: { readonly written: number; readonly published: number };
  /** The figures read from the metric output. */
  readonly metrics: MetricTotals;
  /** Messages still in the source (queue or log) at the end. */
  readonly remainingInSource: number;
  readonly durationMs: number;
}

const finalOutcomes: ReadonlySet<string> = new Set([Outcome.Applied, Outcome.Duplicate, Outcome.DeadLettered]);

/**
 * Builds the run's report and checks exactly-once against what is really there, not only
 * against what the consumer said:
 *
 * 1. every sent message has a final outcome: applied, duplicate, or dead-lettered (by the
 *    consumer with a reason, or by the queue's redrive policy: found in the DLQ); a message
 *    delivered again after it ended may end again only as it did or as a duplicate, never applied
 *    twice or both applied and dead-lettered (a note counts those redeliveries);
 * 2. every message the consumer dead-lettered is in the dead-letter queue, body byte for byte,
 *    and the DLQ holds nothing that was not sent;
 * 3. no idempotency key was applied twice;
 * 4. the consumer's own invariants hold (the problems its `--check` module found);
 * 5. the source is empty;
 * 6. the figures of the metric output agree with the outcomes;
 * 7. with an outbox relay, every outbox item written was published.
 */
export function buildReport(inputs: ReportInputs): RunReport {
  const problems: string[] = [];
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

  const lines = (messages: readonly SentMessage[]) =>
    messages
      .slice(0, 10)
      .map((m) => m.line)
      .join(', ') + (messages.length > 10 ? ', …' : '');
  const lost: SentMessage[] = [];
  const finalizedTwice: SentMessage[] = [];
  const movedByPolicy: SentMessage[] = [];
  const copies: SentMessage[] = [];
  const redelivered: SentMessage[] = [];
  for (const message of inputs.sent) {
    const outcomes = finals.get(message.messageId) ?? [];
    const dead = inDeadLetterQueue.get(message.messageId) ?? [];
    if (outcomes.length === 0 && dead.length === 1 && dead[0]?.failureReason === undefined) {
      movedByPolicy.push(message);
      continue;
    }
    if (outcomes.length === 0) lost.push(message);
    // Delivered again after it ended (at least once: a batch retried after its commit) is fine when
    // the later deliveries only acknowledge it; applied twice, or applied and dead-lettered, is not.
    const applied = outcomes.filter((o) => o.outcome === Outcome.Applied).length;
    if (applied > 1 || (applied === 1 && outcomes.some((o) => o.outcome === Outcome.DeadLettered))) finalizedTwice.push(message);
    else if (outcomes.length > 1) redelivered.push(message);
    const deadLettered = outcomes.some((o) => o.outcome === Outcome.DeadLettered);
    if (deadLettered && dead.length === 0) problems.push(`line ${message.line}: dead-lettered, but it is not in the DLQ`);
    if (deadLettered && dead.length > 1) copies.push(message);
    for (const copy of deadLettered ? dead : []) {
      if (copy.body !== message.body) problems.push(`line ${message.line}: the DLQ copy's body differs from the body sent`);
    }
  }
  if (lost.length > 0) problems.push(`${lost.length} message(s) have no final outcome (lost): lines ${lines(lost)}`);
  if (finalizedTwice.length > 0) {
    problems.push(`${finalizedTwice.length} message(s) ended in two ways (applied twice, or applied and dead-lettered): lines ${lines(finalizedTwice)}`);
  }
  const movedByRedrivePolicy = movedByPolicy.length;
  const notes = [
    ...(movedByRedrivePolicy > 0
      ? [`moved to the DLQ by the queue's redrive policy, without a reason (the consumer never saw their last receive): lines ${lines(movedByPolicy)}`]
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

  const count = (outcome: Outcome) => inputs.outcomes.filter((o) => o.outcome === outcome).length;
  const byReason: Record<string, number> = {};
  for (const record of inputs.outcomes) {
    if (record.outcome === Outcome.DeadLettered) byReason[record.reason ?? 'Unknown'] = (byReason[record.reason ?? 'Unknown'] ?? 0) + 1;
  }
  if (movedByRedrivePolicy > 0) byReason.RedrivePolicy = movedByRedrivePolicy;

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

  const metricsByReason: Record<string, number> = { ...metrics.deadLetteredByReason };
  if (movedByRedrivePolicy > 0) metricsByReason.RedrivePolicy = movedByRedrivePolicy;
  if (!sameCounts(metricsByReason, byReason)) {
    problems.push(`the metrics' dead-letter reasons ${JSON.stringify(metricsByReason)} differ from the outcomes' ${JSON.stringify(byReason)}`);
  }

  return {
    source: inputs.source,
    ...(inputs.fifo === true && inputs.source === 'sqs' ? { fifo: true as const } : {}),
    messagesIn: inputs.sent.length,
    applied: metrics.applied,
    duplicates: metrics.duplicates,
    retried: metrics.retried,
    deadLettered: metrics.deadLettered + movedByRedrivePolicy,
    deadLetteredByReason: metricsByReason,
    latencyMs: percentiles(metrics.latenciesMs),
    invocations: metrics.invocations,
    durationMs: Math.round(inputs.durationMs),
    check: { ok: problems.length === 0, problems },
    notes,
    ...(inputs.outbox === undefined ? {} : { outbox: inputs.outbox }),
  };
}

function sameCounts(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((key) => (a[key] ?? 0) === (b[key] ?? 0));
}

function percentiles(values: readonly number[]): RunReport['latencyMs'] {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => (sorted.length === 0 ? 0 : Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0) * 10) / 10);
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99) };
}

/** The report as text for a person. */
export function formatReport(report: RunReport): string {
  const reasons = Object.entries(report.deadLetteredByReason)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([reason, n]) => `      ${reason.padEnd(24)}${String(n).padStart(6)}`);
  const row = (label: string, value: number | string) => `  ${label.padEnd(28)}${String(value).padStart(6)}`;
  return [
    '',
    `Run report (${report.source}${report.fifo === true ? ' FIFO' : ''}, ${(report.durationMs / 1000).toFixed(1)} s, ${report.invocations} invocations)`,
    row('messages in', report.messagesIn),
    row('applied', report.applied),
    row('duplicates acknowledged', report.duplicates),
    row('retried (deliveries)', report.retried),
    row('dead-lettered', report.deadLettered),
    ...reasons,
    `  latency per message        p50 ${report.latencyMs.p50} ms, p90 ${report.latencyMs.p90} ms, p99 ${report.latencyMs.p99} ms`,
    ...(report.outbox === undefined ? [] : [row('outbox written', report.outbox.written), row('outbox published', report.outbox.published)]),
    '',
    ...report.notes.map((note) => `  note: ${note}`),
    report.check.ok
      ? `Exactly-once check: PASSED — each of the ${report.messagesIn} messages was applied once, acknowledged as a duplicate, or dead-lettered with a reason.`
      : `Exactly-once check: FAILED\n${report.check.problems.map((p) => `  - ${p}`).join('\n')}`,
    '',
  ].join('\n');
}
