import { describe, expect, it } from 'vitest';
import type { OutcomeRecord } from '../../lambda/observability/outcomes.js';
import { buildReport, formatReport, type ReportInputs } from '../../local/report.js';
import { formatLateOutcome } from '../../cli/local/runLocalCommand.js';

const outcome = (messageId: string, kind: OutcomeRecord['outcome'], key = messageId, reason?: string): OutcomeRecord => ({
  outcome: kind,
  messageId,
  idempotencyKey: key,
  orderingKey: undefined,
  fields: {},
  attempt: 1,
  reason,
  errorType: reason,
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
    deadLetters: outcomes.filter((o) => o.outcome === 'dead-lettered').map((o) => ({ messageId: `dl-${o.messageId}`, body: `{"n":${sent.indexOf(o.messageId)}}`, failureReason: o.reason, originalMessageId: o.messageId })),
    metrics: { applied: count('applied'), duplicates: count('duplicate'), retried: count('retried'), deadLettered: count('dead-lettered'), deadLetteredByReason: byReason, invocations: 1, records: outcomes.length, latenciesMs: [1] },
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
    const report = buildReport(inputs([outcome('m-1', 'applied'), outcome('m-2', 'applied'), outcome('m-2', 'dead-lettered', 'm-2', 'OutOfStock')]));
    expect(report.check.problems.join('\n')).toMatch(/ended in two ways .*lines 2/);
  });

  it('fails a message with no final outcome as lost', () => {
    const report = buildReport(inputs([outcome('m-1', 'applied'), outcome('m-2', 'retried')]));
    expect(report.check.problems).toContain('1 message(s) have no final outcome (lost): lines 2');
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

describe('formatLateOutcome (--keep-running)', () => {
  it('names the outcome, the message, its key and the reason or error', () => {
    expect(formatLateOutcome(outcome('m-1', 'applied'))).toBe('applied        m-1  key=m-1');
    expect(formatLateOutcome(outcome('m-2', 'dead-lettered', 'k-2', 'ValidationError'))).toBe('dead-lettered  m-2  key=k-2  reason=ValidationError');
  });
});
