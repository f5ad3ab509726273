import { describe, expect, it } from 'vitest';
import type { OutcomeRecord } from '../../packages/idempotent-consumer/src/observability/outcomes.js';
import { buildReport, formatReport, type ReportInputs } from '../../packages/local/src/report.js';
import { formatLateOutcome } from '../../packages/cli/src/local/runLocalCommand.js';

const outcome = (
  messageId: string,
  kind: OutcomeRecord['outcome'],
  key = messageId,
  reason?: string,
  errorType = reason,
): OutcomeRecord => ({
  outcome: kind,
  messageId,
  idempotencyKey: key,
  orderingKey: undefined,
  fields: {},
  attempt: 1,
  reason,
  errorType,
  errorMessage: reason,
  countsAsAttempt: true,
  durationMs: 1,
});

/** Inputs whose metrics agree with the outcomes, so only the rule under test can fail. */
function inputs(outcomes: OutcomeRecord[], sent = ['m-1', 'm-2']): ReportInputs {
  const count = (kind: string) => outcomes.filter((o) => o.outcome === kind).length;
  const byReason: Record<string, number> = {};
  for (const o of outcomes) if (o.outcome === 'dead-lettered') byReason[o.reason ?? 'Unknown'] = (byReason[o.reason ?? 'Unknown'] ?? 0) + 1;
  return {
    source: 'kafka',
    sent: sent.map((messageId, i) => ({ messageId, line: i + 1, body: `{"n":${i}}` })),
    outcomes,
    deadLetters: outcomes
      .filter((o) => o.outcome === 'dead-lettered')
      .map((o) => ({
        messageId: `dl-${o.messageId}`,
        body: `{"n":${sent.indexOf(o.messageId)}}`,
        failureReason: o.reason,
        errorType: o.errorType,
        originalMessageId: o.messageId,
      })),
    metrics: {
      applied: count('applied'),
      duplicates: count('duplicate'),
      retried: count('retried'),
      deadLettered: count('dead-lettered'),
      deadLetteredByReason: byReason,
      invocations: 1,
      records: outcomes.length,
      latenciesMs: [1],
    },
    remainingInSource: 0,
    durationMs: 10,
  };
}

describe('buildReport: the exactly-once check', () => {
  it('passes a message delivered again after it was applied and acknowledged as a duplicate, with a note', () => {
    const report = buildReport(inputs([outcome('m-1', 'applied'), outcome('m-2', 'applied'), outcome('m-2', 'duplicate')]));
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report.notes.join('\n')).toMatch(/delivered again after they ended.*lines 2/);
  });

  it('fails a message applied twice', () => {
    const report = buildReport(inputs([outcome('m-1', 'applied'), outcome('m-2', 'applied'), outcome('m-2', 'applied')]));
    expect(report.check.ok).toBe(false);
    expect(report.check.problems.join('\n')).toMatch(/1 message\(s\) ended in two ways .*lines 2/);
    expect(report.check.problems.join('\n')).toMatch(/applied more than once: m-2/);
  });

  it('fails a message both applied and dead-lettered', () => {
    const report = buildReport(
      inputs([outcome('m-1', 'applied'), outcome('m-2', 'applied'), outcome('m-2', 'dead-lettered', 'm-2', 'OutOfStock')]),
    );
    expect(report.check.problems.join('\n')).toMatch(/ended in two ways .*lines 2/);
  });

  it('fails a message with no final outcome as lost', () => {
    const report = buildReport(inputs([outcome('m-1', 'applied'), outcome('m-2', 'retried')]));
    expect(report.check.problems).toContain('1 message(s) have no final outcome (lost): lines 2');
    expect(report).toMatchObject({ unaccounted: 1, countsAddUp: true });
  });

  it('says a FIFO queue in the report and its JSON; says nothing of it for Kafka', () => {
    const outcomes = [outcome('m-1', 'applied'), outcome('m-2', 'applied')];
    const fifo = buildReport({ ...inputs(outcomes), source: 'sqs', fifo: true });
    const standard = buildReport({ ...inputs(outcomes), source: 'sqs', fifo: false });
    const kafka = buildReport({ ...inputs(outcomes), fifo: true });
    expect([fifo.fifo, standard.fifo, kafka.fifo]).toEqual([true, undefined, undefined]);
    expect(formatReport(fifo)).toContain('Run report (sqs FIFO, ');
    expect(formatReport(standard)).toContain('Run report (sqs, ');
    expect(JSON.parse(JSON.stringify(fifo))).toMatchObject({ source: 'sqs', fifo: true });
  });
});

describe('buildReport: dead letters that are not the message own', () => {
  const sent = ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'];

  it('passes dead letters of the messages own (their data, the consumer own retryable error) and lists them as own', () => {
    const report = buildReport(
      inputs(
        [
          outcome('m-1', 'applied'),
          outcome('m-2', 'dead-lettered', 'm-2', 'ValidationError'),
          outcome('m-3', 'dead-lettered', 'm-3', 'OutOfStock'),
          outcome('m-4', 'dead-lettered', 'm-4', 'RetriesExhausted', 'PredecessorNotApplied'),
          outcome('m-5', 'duplicate', 'm-1'),
        ],
        sent,
      ),
    );
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report.deadLetterCauses.map((g) => [g.verdict, g.reason, g.cause])).toEqual([
      ['own', 'OutOfStock', 'message'],
      ['own', 'RetriesExhausted', 'consumer-code'],
      ['own', 'ValidationError', 'message'],
    ]);
    const text = formatReport(report);
    expect(text).toContain('dead letters judged         3 their own, 0 excused, 0 not their own');
    expect(text).toContain(
      'Exactly-once check: PASSED — each of the 5 messages was applied once, acknowledged as a duplicate, or dead-lettered for a reason of its own.',
    );
  });

  it('fails valid messages dead-lettered after TransactionConflict ("the batch did not settle"), and says which and why', () => {
    const report = buildReport(
      inputs(
        [
          outcome('m-1', 'applied'),
          outcome('m-2', 'dead-lettered', 'm-2', 'RetriesExhausted', 'TransactionConflict'),
          outcome('m-3', 'dead-lettered', 'm-3', 'RetriesExhausted', 'TransactionConflict'),
          outcome('m-4', 'dead-lettered', 'm-4', 'RetriesExhausted', 'NotAttempted'),
          outcome('m-5', 'dead-lettered', 'm-5', 'RetriesExhausted', 'ProvisionedThroughputExceededException'),
        ],
        sent,
      ),
    );
    expect(report.check.ok).toBe(false);
    expect(report.check.problems).toEqual([
      "2 message(s) dead-lettered for a reason that is not their own — RetriesExhausted after TransactionConflict: contention or rounds of the library's batch commit, not the message's data nor the consumer's code: lines 2, 3",
      "1 message(s) dead-lettered for a reason that is not their own — RetriesExhausted after NotAttempted: the library's own error: lines 4",
      '1 message(s) dead-lettered for a reason that is not their own — RetriesExhausted after ProvisionedThroughputExceededException: AWS throttled a call: lines 5',
    ]);
    const text = formatReport(report);
    expect(text).toContain('dead letters judged         0 their own, 0 excused, 4 not their own');
    expect(text).toMatch(/NOT THEIR OWN {5}2 {2}RetriesExhausted after TransactionConflict: .*; lines 2, 3/);
    expect(text).toContain('Exactly-once check: FAILED');
  });

  it('judges what the DLQ holds (ic.errorType) over what the consumer said', () => {
    const base = inputs([outcome('m-1', 'applied'), outcome('m-2', 'dead-lettered', 'm-2', 'RetriesExhausted', 'PredecessorNotApplied')]);
    const report = buildReport({ ...base, deadLetters: base.deadLetters.map((d) => ({ ...d, errorType: 'TransactionConflict' })) });
    expect(report.check.problems.join('\n')).toMatch(/RetriesExhausted after TransactionConflict/);
  });

  it('excuses a dead letter only when the run declares the kind of fault that produces it, with a note', () => {
    const outcomes = [outcome('m-1', 'applied'), outcome('m-2', 'dead-lettered', 'm-2', 'RetriesExhausted', 'TransactionConflict')];
    const declared = buildReport({ ...inputs(outcomes), injected: { faults: { 'transaction-conflict': 0.1 }, transientFailureRate: 0 } });
    expect(declared.check).toEqual({ ok: true, problems: [] });
    expect(declared.injected).toEqual({ faults: { 'transaction-conflict': 0.1 } });
    expect(declared.notes.join('\n')).toMatch(
      /excused: 1 dead letter\(s\) not their own, produced by a fault this run injects on purpose \(--fault transaction-conflict\).*lines 2/,
    );
    const text = formatReport(declared);
    expect(text).toContain('injected on purpose         --fault transaction-conflict=0.1');
    expect(text).toContain('(1 dead letter(s) excused: produced by the faults this run injects on purpose).');

    const otherKind = buildReport({ ...inputs(outcomes), injected: { faults: { 'sqs-5xx': 0.1 }, transientFailureRate: 0.05 } });
    expect(otherKind.check.ok).toBe(false);
  });

  it('judges a message the redrive policy moved (no reason) as not its own, unless the run injects faults', () => {
    const base = inputs([outcome('m-1', 'applied')]);
    const moved = { ...base, deadLetters: [{ messageId: 'dl-m-2', body: '{"n":1}', failureReason: undefined, originalMessageId: 'm-2' }] };
    const report = buildReport(moved);
    expect(report).toMatchObject({ deadLettered: 1, deadLetteredByReason: { RedrivePolicy: 1 }, unaccounted: 0, countsAddUp: true });
    expect(report.check.problems.join('\n')).toMatch(
      /1 message\(s\) dead-lettered for a reason that is not their own — moved without a reason: no reason: the queue's redrive policy moved it.*lines 2/,
    );
    expect(buildReport({ ...moved, injected: { faults: { 'sqs-5xx': 0.05 } } }).check.ok).toBe(true);
  });
});

describe('buildReport: the counts add up to the messages sent', () => {
  it('counts each message once, however often it was delivered, and shows the equation', () => {
    const report = buildReport(
      inputs(
        [
          outcome('m-1', 'applied'),
          outcome('m-1', 'duplicate'),
          outcome('m-2', 'duplicate', 'm-1'),
          outcome('m-3', 'dead-lettered', 'm-3', 'ValidationError'),
          outcome('m-3', 'dead-lettered', 'm-3', 'ValidationError'),
        ],
        ['m-1', 'm-2', 'm-3'],
      ),
    );
    expect(report).toMatchObject({
      messagesIn: 3,
      applied: 1,
      duplicates: 1,
      deadLettered: 1,
      unaccounted: 0,
      countsAddUp: true,
      deadLetteredByReason: { ValidationError: 1 },
    });
    expect(formatReport(report)).toContain('  3 in = 1 applied + 1 duplicates + 1 dead-lettered + 0 unaccounted\n');
  });

  it('counts a message with no final outcome as unaccounted, and fails', () => {
    const report = buildReport({ ...inputs([outcome('m-1', 'applied'), outcome('m-2', 'retried')]), remainingInSource: 1 });
    expect(report).toMatchObject({ applied: 1, unaccounted: 1, countsAddUp: true });
    expect(report.check.problems).toContain('1 message(s) have no final outcome (still in flight in the source, or lost): lines 2');
    expect(formatReport(report)).toContain('  2 in = 1 applied + 0 duplicates + 0 dead-lettered + 1 unaccounted');
  });

  it('breaks the equation when a message ended in two ways (it counts in both), and fails', () => {
    const report = buildReport(
      inputs([outcome('m-1', 'applied'), outcome('m-2', 'applied'), outcome('m-2', 'dead-lettered', 'm-2', 'OutOfStock')]),
    );
    expect(report).toMatchObject({ applied: 2, deadLettered: 1, countsAddUp: false });
    expect(report.check.problems).toContain(
      'the counts do not add up: 2 messages in, but 2 applied + 0 duplicates + 1 dead-lettered + 0 unaccounted = 3 (a message that ended in two ways counts twice)',
    );
    expect(formatReport(report)).toContain(
      '  2 in ≠ 2 applied + 0 duplicates + 1 dead-lettered + 0 unaccounted (= 3): the counts do not add up',
    );
  });

  it('a run that hit its time limit is reported, and fails with its messages unaccounted for', () => {
    const report = buildReport({
      ...inputs([outcome('m-1', 'applied')]),
      remainingInSource: 1,
      timedOut: { limitMs: 3000, detail: 'The queue … was not idle for 1500 ms within 3000 ms: 1 visible' },
    });
    expect(report).toMatchObject({ unaccounted: 1, timedOut: { limitMs: 3000 } });
    expect(report.check.problems).toEqual(
      expect.arrayContaining([
        '1 message(s) have no final outcome (still in flight in the source, or lost): lines 2',
        'the run hit its time limit (3 s, --timeout) before the source drained: The queue … was not idle for 1500 ms within 3000 ms: 1 visible',
      ]),
    );
    expect(formatReport(report)).toMatch(/^Run report \(kafka, 0\.0 s, 1 invocations; stopped at its time limit of 3 s\)$/m);
  });
});

describe('buildReport: redeliveries and parking', () => {
  const retried = (messageId: string, errorType: string, extra: Partial<Pick<OutcomeRecord, 'parked' | 'fromPark'>> = {}) => ({
    ...outcome(messageId, 'retried', messageId, undefined, errorType),
    ...extra,
  });

  it('counts each delivery from a receive after the first, by the error of the retry it came back from', () => {
    const report = buildReport(
      inputs(
        [
          retried('m-1', 'InjectedTransientFailure'),
          retried('m-2', 'PredecessorNotApplied'),
          outcome('m-1', 'applied'),
          retried('m-2', 'PredecessorNotApplied'),
          outcome('m-3', 'applied'),
          outcome('m-2', 'applied'),
          outcome('m-3', 'duplicate'),
          outcome('m-4', 'applied'),
        ],
        ['m-1', 'm-2', 'm-3', 'm-4'],
      ),
    );
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report.redeliveries).toEqual({
      total: 4,
      byReason: { InjectedTransientFailure: 1, PredecessorNotApplied: 2, Unknown: 1 },
      perMessage: 1,
      perMessageByReason: { InjectedTransientFailure: 0.25, PredecessorNotApplied: 0.5, Unknown: 0.25 },
    });
    expect(report.parking).toBeUndefined();
    const text = formatReport(report);
    expect(text).toContain('  redeliveries                     4  (1 per message)\n');
    expect(text).toContain('      PredecessorNotApplied        2  (0.5 per message)\n');
    expect(text).not.toContain('parked');
  });

  it('rounds redeliveries per message to 3 decimals', () => {
    const report = buildReport(inputs([retried('m-1', 'PredecessorNotApplied'), outcome('m-1', 'applied')], ['m-1', 'm-2', 'm-3']));
    expect(report.redeliveries).toMatchObject({ total: 1, perMessage: 0.333, perMessageByReason: { PredecessorNotApplied: 0.333 } });
  });

  it('counts a parked message applied from the park as applied once and no redelivery, the check passing', () => {
    const report = buildReport(
      inputs([
        retried('m-2', 'PredecessorNotApplied', { parked: true }),
        outcome('m-1', 'applied'),
        { ...outcome('m-2', 'applied'), fromPark: true },
      ]),
    );
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report).toMatchObject({ applied: 2, unaccounted: 0, countsAddUp: true, retried: 1 });
    expect(report.redeliveries).toEqual({ total: 0, byReason: {}, perMessage: 0, perMessageByReason: {} });
    expect(report.parking).toEqual({ parked: 1, appliedFromPark: 1, settledFromPark: 1 });
    expect(report.notes).toEqual([]);
    expect(formatReport(report)).toContain('  parked (out of order)            1  (applied from the park 1, settled from the park 1)\n');
  });

  it('counts a parked message that comes back at its wake-up as one redelivery for PredecessorNotApplied', () => {
    const report = buildReport(
      inputs([retried('m-2', 'PredecessorNotApplied', { parked: true }), outcome('m-1', 'applied'), outcome('m-2', 'applied')]),
    );
    expect(report.check.ok).toBe(true);
    expect(report.redeliveries).toMatchObject({ total: 1, byReason: { PredecessorNotApplied: 1 }, perMessage: 0.5 });
    expect(report.parking).toEqual({ parked: 1, appliedFromPark: 0, settledFromPark: 0 });
  });

  it('counts a message that comes back after it was applied from the park as a redelivery for PredecessorNotApplied', () => {
    // The park's delete of the message lost the race with its wake-up.
    const report = buildReport(
      inputs([
        retried('m-2', 'PredecessorNotApplied', { parked: true }),
        outcome('m-1', 'applied'),
        { ...outcome('m-2', 'applied'), fromPark: true },
        outcome('m-2', 'duplicate'),
      ]),
    );
    expect(report.check.ok).toBe(true);
    expect(report.redeliveries.byReason).toEqual({ PredecessorNotApplied: 1 });
  });
});

describe('buildReport: end-to-end latency', () => {
  it('measures each message from its send to its last final outcome observed, apart from the processing latency', () => {
    const ids = Array.from({ length: 10 }, (_, i) => `m-${i + 1}`);
    const base = inputs(
      ids.map((id) => outcome(id, 'applied')),
      ids,
    );
    // m-1 is retried first; m-2 is delivered again after it was applied: its later duplicate is its end.
    const outcomes = [outcome('m-1', 'retried'), ...base.outcomes, outcome('m-2', 'duplicate')];
    const observedAt = [1_000_050, ...ids.map((_, i) => 1_000_000 + (i + 1) * 100), 1_005_000];
    const report = buildReport({
      ...inputs(outcomes, ids),
      sent: base.sent.map((message) => ({ ...message, sentAtMs: 1_000_000 })),
      outcomesObservedAtMs: observedAt,
    });
    // Per message: 100 (m-1), 5000 (m-2), 300, 400, …, 1000.
    expect(report.endToEndMs).toEqual({ p50: 700, p90: 5000, p99: 5000 });
    expect(report.latencyMs).toEqual({ p50: 1, p90: 1, p99: 1 });
    expect(formatReport(report)).toContain('  end to end per message     p50 700 ms, p90 5000 ms, p99 5000 ms\n');
  });

  it('leaves out messages with no final outcome or no send stamp, and is 0 without stamps', () => {
    const base = inputs([outcome('m-1', 'applied'), outcome('m-2', 'retried')], ['m-1', 'm-2', 'm-3']);
    const stamped = buildReport({
      ...base,
      sent: base.sent.map((message) => (message.messageId === 'm-3' ? message : { ...message, sentAtMs: 10 })),
      outcomesObservedAtMs: [40, 50],
    });
    expect(stamped.endToEndMs).toEqual({ p50: 30, p90: 30, p99: 30 });
    expect(buildReport(base).endToEndMs).toEqual({ p50: 0, p90: 0, p99: 0 });
  });

  it('refuses stamps that do not match the outcomes one for one', () => {
    expect(() => buildReport({ ...inputs([outcome('m-1', 'applied')]), outcomesObservedAtMs: [] })).toThrow(
      'outcomesObservedAtMs has 0 stamps for 1 outcomes: one per outcome',
    );
  });
});

describe('formatLateOutcome (--keep-running)', () => {
  it('names the outcome, the message, its key and the reason or error', () => {
    expect(formatLateOutcome(outcome('m-1', 'applied'))).toBe('applied        m-1  key=m-1');
    expect(formatLateOutcome(outcome('m-2', 'dead-lettered', 'k-2', 'ValidationError'))).toBe(
      'dead-lettered  m-2  key=k-2  reason=ValidationError',
    );
  });
});
