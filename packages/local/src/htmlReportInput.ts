/**
 * What the HTML picture of a local run is drawn from ({@link HtmlReportInput}), how to check it
 * ({@link assertHtmlReportInput}), and two helpers to make one from a run: a recorder that
 * stamps each outcome with its time in the run (`createDeliveryRecorder`) and
 * {@link toHtmlReportInput}, which joins the recorded deliveries with the run's text report.
 *
 * @module
 */
import { LocalRuntimeError } from './errors.js';
import type { RunReport } from './report.js';

/** The outcome of one delivery of one message; `applied`, `duplicate` and `dead-lettered` are final. */
export type HtmlReportOutcome = 'applied' | 'duplicate' | 'retried' | 'dead-lettered';

/** The outcomes in the order the page stacks and lists them. */
export const htmlReportOutcomes: readonly HtmlReportOutcome[] = ['applied', 'duplicate', 'retried', 'dead-lettered'];

/** The event source of the run. */
export type HtmlReportSource = 'sqs' | 'sqs-fifo' | 'kafka' | 'kinesis' | 'dynamodb-streams';

/** One delivery of one message to the consumer, as the run saw it. */
export interface HtmlReportDelivery {
  /** The source's id of the message: SQS `messageId`, or `<topic>-<partition>@<offset>` for Kafka. */
  readonly messageId: string;
  readonly outcome: HtmlReportOutcome;
  /** When the outcome was known, in milliseconds since the run started. */
  readonly atMs: number;
  /** Time the consumer spent on this message in this delivery, in milliseconds. */
  readonly durationMs: number;
  /** This delivery's attempt number, from 1, when the source counts them (SQS `ApproximateReceiveCount`). */
  readonly attempt?: number;
  /** Why it was dead-lettered (an open string: the consumer's `failureReason`). */
  readonly reason?: string;
}

/** Everything `renderHtmlReport` draws. Generic: no field names a domain. */
export interface HtmlReportInput {
  /** The page's title and heading. */
  readonly title: string;
  /** The run's event source: `sqs`, `sqs-fifo` or `kafka`. */
  readonly source: HtmlReportSource;
  /** When the run started, ISO 8601 (e.g. `2025-01-31T09:30:00.000Z`). */
  readonly startedAt: string;
  /** The run's wall-clock duration, in milliseconds. */
  readonly durationMs: number;
  /** The run's totals, as in the text report: all of them whole numbers, none negative. */
  readonly totals: {
    /** Messages sent to the source. */
    readonly messages: number;
    /** Messages applied (each once, however often it was delivered). */
    readonly applied: number;
    /** Deliveries acknowledged as duplicates (the inbox had the idempotency key). */
    readonly duplicates: number;
    /** Deliveries that failed and were retried (one message may count several times). */
    readonly retried: number;
    /** Messages dead-lettered, by the consumer or by the queue's redrive policy. */
    readonly deadLettered: number;
  };
  /** Outbox items written and published, when the consumer has an outbox. */
  readonly outbox?: { readonly written: number; readonly published: number };
  /**
   * Redeliveries: deliveries from a receive of the source that were not their message's first, as
   * in the text report's `redeliveries`: `total` and `byReason` whole numbers, `perMessage`
   * (`total / messages`) a number ≥ 0. @default not shown
   */
  readonly redeliveries?: {
    readonly total: number;
    readonly perMessage: number;
    readonly byReason: Readonly<Record<string, number>>;
  };
  /** Parked out-of-order deliveries, as in the text report's `parking` (whole numbers). @default not shown */
  readonly parking?: { readonly parked: number; readonly appliedFromPark: number; readonly settledFromPark: number };
  /**
   * End-to-end latency percentiles per message, in milliseconds: from its send to its final
   * outcome, waits and retries included (the deliveries' `durationMs` are processing times only).
   * @default not shown
   */
  readonly endToEndMs?: { readonly p50: number; readonly p90: number; readonly p99: number };
  /** Every delivery, in any order. The charts bin them: 10,000 or more are fine. */
  readonly deliveries: ReadonlyArray<HtmlReportDelivery>;
  /** Dead-lettered messages by reason. Reasons are open strings. */
  readonly deadLettersByReason: Readonly<Record<string, number>>;
  /** The exactly-once check's verdict. */
  readonly check: { readonly ok: boolean; readonly problems: readonly string[] };
  /** Things worth knowing that are not failures of the check (e.g. the text report's notes). */
  readonly notes?: readonly string[];
}

/** An {@link HtmlReportInput} has a wrong shape or value; `problems` lists each, by field path. */
export class HtmlReportInputError extends LocalRuntimeError {
  constructor(public readonly problems: readonly string[]) {
    const shown = problems.slice(0, 10).map((p) => `  - ${p}`);
    if (problems.length > 10) shown.push(`  - … and ${problems.length - 10} more`);
    super(`The HTML report's input is not valid:\n${shown.join('\n')}`);
  }
}

const sources: ReadonlySet<string> = new Set<HtmlReportSource>(['sqs', 'sqs-fifo', 'kafka', 'kinesis', 'dynamodb-streams']);
const outcomes: ReadonlySet<string> = new Set(htmlReportOutcomes);

/**
 * Checks an input before anything is drawn or written, and names every problem at once.
 *
 * @throws HtmlReportInputError when a field is missing, of the wrong type, or out of range:
 *   counts must be non-negative integers, times finite and non-negative, `startedAt` a date
 *   `Date.parse` reads, `source` one of `sqs`, `sqs-fifo`, `kafka`.
 */
export function assertHtmlReportInput(input: unknown): asserts input is HtmlReportInput {
  const problems: string[] = [];
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const count = (v: unknown, path: string) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
      problems.push(`${path}: expected a non-negative integer, got ${describe(v)}`);
  };
  const time = (v: unknown, path: string) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      problems.push(`${path}: expected a finite number of milliseconds ≥ 0, got ${describe(v)}`);
  };
  const text = (v: unknown, path: string) => {
    if (typeof v !== 'string') problems.push(`${path}: expected a string, got ${describe(v)}`);
  };
  if (!isObject(input)) throw new HtmlReportInputError([`expected an object, got ${describe(input)}`]);

  text(input.title, 'title');
  if (typeof input.source !== 'string' || !sources.has(input.source))
    problems.push(`source: expected sqs, sqs-fifo, kafka, kinesis or dynamodb-streams, got ${describe(input.source)}`);
  if (typeof input.startedAt !== 'string' || Number.isNaN(Date.parse(input.startedAt))) {
    problems.push(`startedAt: expected an ISO 8601 date, got ${describe(input.startedAt)}`);
  }
  time(input.durationMs, 'durationMs');

  if (isObject(input.totals)) {
    for (const key of ['messages', 'applied', 'duplicates', 'retried', 'deadLettered'] as const) count(input.totals[key], `totals.${key}`);
  } else problems.push(`totals: expected an object, got ${describe(input.totals)}`);

  if (input.outbox !== undefined) {
    if (isObject(input.outbox)) {
      count(input.outbox.written, 'outbox.written');
      count(input.outbox.published, 'outbox.published');
    } else problems.push(`outbox: expected an object or nothing, got ${describe(input.outbox)}`);
  }

  if (input.redeliveries !== undefined) {
    if (isObject(input.redeliveries)) {
      count(input.redeliveries.total, 'redeliveries.total');
      time(input.redeliveries.perMessage, 'redeliveries.perMessage');
      if (isObject(input.redeliveries.byReason)) {
        for (const [reason, n] of Object.entries(input.redeliveries.byReason)) count(n, `redeliveries.byReason[${JSON.stringify(reason)}]`);
      } else problems.push(`redeliveries.byReason: expected an object, got ${describe(input.redeliveries.byReason)}`);
    } else problems.push(`redeliveries: expected an object or nothing, got ${describe(input.redeliveries)}`);
  }
  if (input.parking !== undefined) {
    if (isObject(input.parking)) {
      for (const key of ['parked', 'appliedFromPark', 'settledFromPark'] as const) count(input.parking[key], `parking.${key}`);
    } else problems.push(`parking: expected an object or nothing, got ${describe(input.parking)}`);
  }
  if (input.endToEndMs !== undefined) {
    if (isObject(input.endToEndMs)) {
      for (const key of ['p50', 'p90', 'p99'] as const) time(input.endToEndMs[key], `endToEndMs.${key}`);
    } else problems.push(`endToEndMs: expected an object or nothing, got ${describe(input.endToEndMs)}`);
  }

  if (Array.isArray(input.deliveries)) {
    const before = problems.length;
    input.deliveries.forEach((d: unknown, i) => {
      if (problems.length - before >= 5) return; // a broken producer breaks every delivery: five say enough
      const at = `deliveries[${i}]`;
      if (!isObject(d)) {
        problems.push(`${at}: expected an object, got ${describe(d)}`);
        return;
      }
      text(d.messageId, `${at}.messageId`);
      if (typeof d.outcome !== 'string' || !outcomes.has(d.outcome)) {
        problems.push(`${at}.outcome: expected one of ${htmlReportOutcomes.join(', ')}, got ${describe(d.outcome)}`);
      }
      time(d.atMs, `${at}.atMs`);
      time(d.durationMs, `${at}.durationMs`);
      if (d.attempt !== undefined && (typeof d.attempt !== 'number' || !Number.isInteger(d.attempt) || d.attempt < 1)) {
        problems.push(`${at}.attempt: expected an integer ≥ 1 or nothing, got ${describe(d.attempt)}`);
      }
      if (d.reason !== undefined) text(d.reason, `${at}.reason`);
    });
  } else problems.push(`deliveries: expected an array, got ${describe(input.deliveries)}`);

  if (isObject(input.deadLettersByReason)) {
    for (const [reason, n] of Object.entries(input.deadLettersByReason)) count(n, `deadLettersByReason[${JSON.stringify(reason)}]`);
  } else problems.push(`deadLettersByReason: expected an object, got ${describe(input.deadLettersByReason)}`);

  if (isObject(input.check)) {
    if (typeof input.check.ok !== 'boolean') problems.push(`check.ok: expected a boolean, got ${describe(input.check.ok)}`);
    if (!Array.isArray(input.check.problems) || !input.check.problems.every((p) => typeof p === 'string')) {
      problems.push('check.problems: expected an array of strings');
    }
  } else problems.push(`check: expected an object, got ${describe(input.check)}`);

  if (input.notes !== undefined && (!Array.isArray(input.notes) || !input.notes.every((n) => typeof n === 'string'))) {
    problems.push('notes: expected an array of strings or nothing');
  }
  if (problems.length > 0) throw new HtmlReportInputError(problems);
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return Array.isArray(value) ? 'an array' : typeof value;
}

/** The fields of an outcome the recorder reads: a structural subset of the consumer's `OutcomeRecord`. */
export interface RecordableOutcome {
  readonly outcome: HtmlReportOutcome;
  readonly messageId: string;
  /** Time spent on this message, in milliseconds. */
  readonly durationMs: number;
  readonly attempt?: number | undefined;
  readonly reason?: string | undefined;
}

/** An outcome observer that keeps every delivery with its time in the run. */
export interface DeliveryRecorder {
  /** Records one outcome, stamped with the time since the recorder was created. */
  onOutcome(record: RecordableOutcome): void;
  /** The deliveries recorded so far, in the order they came. */
  deliveries(): HtmlReportDelivery[];
}

/**
 * Makes a recorder to pass as (or combine into) the consumer's outcome observer: each outcome
 * becomes an {@link HtmlReportDelivery} whose `atMs` is the time from the recorder's creation
 * (create it when the run starts) to the outcome.
 *
 * @param options.now a clock in milliseconds; `performance.now` by default (tests pass their own)
 */
export function createDeliveryRecorder(options: { readonly now?: () => number } = {}): DeliveryRecorder {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const recorded: HtmlReportDelivery[] = [];
  return {
    onOutcome(record) {
      recorded.push({
        messageId: record.messageId,
        outcome: record.outcome,
        atMs: Math.max(0, now() - started),
        durationMs: Math.max(0, record.durationMs),
        ...(record.attempt !== undefined ? { attempt: record.attempt } : {}),
        ...(record.reason !== undefined ? { reason: record.reason } : {}),
      });
    },
    deliveries: () => [...recorded],
  };
}

/**
 * Joins a run's text report (totals, redeliveries, parking, end-to-end latency, dead letters by
 * reason, the check's verdict, notes) with
 * its recorded deliveries into the HTML report's input.
 *
 * @param report what `buildReport` returned for the run
 * @param deliveries what a `createDeliveryRecorder` recorded during the run
 * @param run.startedAt when the run started
 * @param run.fifo whether the SQS source was a FIFO queue (the page says `sqs-fifo`)
 * @param run.title the page's title; `Local run (<source>)` by default
 */
export function toHtmlReportInput(
  report: RunReport,
  deliveries: readonly HtmlReportDelivery[],
  run: { readonly startedAt: Date; readonly fifo?: boolean; readonly title?: string; readonly outbox?: HtmlReportInput['outbox'] },
): HtmlReportInput {
  const source: HtmlReportSource = report.source === 'sqs' && run.fifo === true ? 'sqs-fifo' : report.source;
  return {
    title: run.title ?? `Local run (${source})`,
    source,
    startedAt: run.startedAt.toISOString(),
    durationMs: report.durationMs,
    totals: {
      messages: report.messagesIn,
      applied: report.applied,
      duplicates: report.duplicates,
      retried: report.retried,
      deadLettered: report.deadLettered,
    },
    ...(run.outbox !== undefined ? { outbox: run.outbox } : {}),
    redeliveries: {
      total: report.redeliveries.total,
      perMessage: report.redeliveries.perMessage,
      byReason: report.redeliveries.byReason,
    },
    ...(report.parking === undefined ? {} : { parking: report.parking }),
    endToEndMs: report.endToEndMs,
    deliveries,
    deadLettersByReason: report.deadLetteredByReason,
    check: report.check,
    notes: report.notes,
  };
}
