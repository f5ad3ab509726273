/**
 * `dlq redrive --dry-run --handler F` and `dlq replay --dry-run --handler F`: what each selected
 * dead letter (or each message of an archive) would do if it were redriven now, decided by the
 * consumer's own code on the state stored now (see `decideDeadLetter`), grouped by outcome and
 * reason. Nothing is written, no side effect runs, and the dead-letter queue is left as it was
 * (its messages are only held while they are read, then made visible again).
 *
 * @module
 */
import { fromPlainAttributes, reasonOf, toDeadLetterRecord, failedAtOf, type DeadLetterRecord } from 'idempotent-consumer/dlq';
import { clockOf, type DlqContext } from './context.js';
import { decideDeadLetter, DryRunOutcome, type DryRunMessage, type DryRunVerdict } from './decideDeadLetter.js';
import type { DryRunConsumer, InboxWindowSource } from './dryRunConsumer.js';
import { ownRedrivePolicyWarnings, scanWarnings } from './list.js';
import { readOffloadedBody } from './offloadedBody.js';
import { assertDeadLetterQueue, inspectQueue, MessageHold, type ReceiveOptions } from './queueInspector.js';
import { messageAge, messageTimesOf } from './inboxWindow.js';
import { nothingToSend, readArchive, type ReplayOptions } from './replay.js';
import { matchesSelection, reasonWarnings, selectsAll, type MessageSelection } from './selection.js';

/** One dead letter and its verdict. */
export interface DecidedDeadLetter extends DryRunVerdict {
  /** Its id in the dead-letter queue (or the archive's record of it). */
  readonly messageId: string;
  readonly originalMessageId?: string;
  /** Its reason in the dead-letter queue (`none`: moved by the redrive policy). */
  readonly deadLetterReason: string;
  /** When it failed, ISO 8601. */
  readonly failedAt?: string;
  /** Its line in the archive (`replay`). */
  readonly line?: number;
}

/** The dead letters of one outcome and reason. */
export interface DecisionGroup {
  readonly outcome: DryRunOutcome;
  readonly reason: string;
  readonly count: number;
  readonly messages: readonly DecidedDeadLetter[];
}

/** What a decided dry run found. */
export interface DecisionsResult {
  readonly command: 'redrive' | 'replay';
  /** The dead-letter queue (`redrive`) or the archive file (`replay`). */
  readonly from: string;
  /** The consumer that decided, as the dry run found it. */
  readonly consumer: {
    readonly handler: string;
    readonly consumerName: string;
    readonly inboxTable: string;
    readonly tables: Readonly<Record<string, string>>;
    readonly inboxTtlSeconds: number;
    readonly inboxTtlFrom: InboxWindowSource;
  };
  /** When the state was read (the SQS server's time), ISO 8601. */
  readonly decidedAt: string;
  /** Messages looked at (received from the queue, or good lines of the archive at or after `--from-line`). */
  readonly seen: number;
  /** Messages decided (those the selection took). */
  readonly decided: number;
  readonly counts: Readonly<Record<DryRunOutcome, number>>;
  /** By outcome (would apply, duplicate, outside the window, would fail), then largest group first. */
  readonly groups: readonly DecisionGroup[];
  readonly warnings: readonly string[];
  /** Set when no message was decided: the sentence saying why. The command line exits 1 then. */
  readonly nothingMoved?: string;
  readonly interrupted: boolean;
}

/** Options of {@link decideRedrive}. */
export interface DecideRedriveOptions extends ReceiveOptions {
  readonly queueUrl: string;
  readonly selection?: MessageSelection;
  /** @default true */
  readonly dlqCheck?: boolean;
}

/**
 * Decides every selected message of the dead-letter queue. The messages are received, held
 * invisible while they are decided, and made visible again before this returns (also when it
 * throws); nothing is sent, deleted or written.
 *
 * @throws QueueNotFoundError, NotADeadLetterQueueError; StateUnreadableError when the consumer's tables cannot be read
 */
export async function decideRedrive(
  context: DlqContext,
  consumer: DryRunConsumer,
  options: DecideRedriveOptions,
): Promise<DecisionsResult> {
  const clock = clockOf(context);
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  const selection = options.selection ?? {};
  const hold = new MessageHold(context.sqs, options.queueUrl);
  const decided: DecidedDeadLetter[] = [];
  let records: DeadLetterRecord[] = [];
  let releaseFailures = 0;
  let interrupted = false;
  try {
    records = await hold.scan({ ...options, ...(context.signal !== undefined ? { signal: context.signal } : {}) });
    if (options.dlqCheck !== false) assertDeadLetterQueue(info, records);
    const now = clock.now();
    for (const record of records.filter((r) => matchesSelection(r, selection, now))) {
      if (context.signal?.aborted === true) {
        interrupted = true;
        break;
      }
      decided.push(await decideRecord(context, consumer, record, clock.now()));
    }
  } finally {
    releaseFailures = (await hold.release()).failed.length;
  }
  const why =
    decided.length > 0 || interrupted
      ? undefined
      : records.length === 0
        ? 'the dead-letter queue has no visible message'
        : selectsAll(selection)
          ? `none of the ${records.length} message(s) seen can be decided`
          : `no message matched the selection among the ${records.length} seen`;
  return result('redrive', options.queueUrl, consumer, clock.now(), records.length, decided, {
    warnings: [
      ...reasonWarnings(selection, records),
      ...scanWarnings(info, records.length, releaseFailures),
      ...ownRedrivePolicyWarnings(info, records),
    ],
    ...(why !== undefined ? { nothingMoved: `nothing would move: ${why}` } : {}),
    interrupted,
  });
}

/**
 * Decides every message of an archive (its good lines at or after `fromLine`), as if it were
 * replayed to the dead-letter queue and then redriven. The file is only read; the queue is only
 * checked (it exists, and is a dead-letter queue unless `dlqCheck` is `false`).
 *
 * @throws ArchiveIncompleteError, ArchiveFormatError, QueueNotFoundError, NotADeadLetterQueueError as `replayArchive`;
 *   StateUnreadableError when the consumer's tables cannot be read
 */
export async function decideReplay(
  context: DlqContext,
  consumer: DryRunConsumer,
  options: Pick<ReplayOptions, 'in' | 'queueUrl' | 'dlqCheck' | 'fromLine' | 'skipInvalid' | 'noTrailerCheck'>,
): Promise<DecisionsResult> {
  const clock = clockOf(context);
  const { parsed, entries } = await readArchive(options);
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  const decided: DecidedDeadLetter[] = [];
  let interrupted = false;
  for (const entry of entries) {
    if (context.signal?.aborted === true) {
      interrupted = true;
      break;
    }
    const m = entry.message;
    const record = toDeadLetterRecord({
      MessageId: m.messageId ?? `line ${entry.line}`,
      ReceiptHandle: '',
      Body: m.offloadedBody ?? m.body,
      MessageAttributes: fromPlainAttributes(m.messageAttributes ?? {}),
      Attributes: { ...m.attributes },
    });
    decided.push({ ...(await decide(consumer, record, m.offloadedBody ?? m.body, undefined, clock.now())), line: entry.line });
  }
  const warnings = [
    ...parsed.problems.map((p) => `skipped ${options.in}:${p.line}: ${p.message}`),
    ...(parsed.trailer.status !== 'complete'
      ? [`${options.in} has no valid final trailer (${parsed.trailer.status}); decided because of --no-trailer-check`]
      : []),
  ];
  return result('replay', options.in, consumer, clock.now(), entries.length, decided, {
    warnings,
    ...(entries.length === 0 ? { nothingMoved: nothingToSend(options, parsed) } : {}),
    interrupted,
  });
}

/** A message received from the dead-letter queue, its offloaded body read back first. */
async function decideRecord(
  context: DlqContext,
  consumer: DryRunConsumer,
  record: DeadLetterRecord,
  now: Date,
): Promise<DecidedDeadLetter> {
  if (record.offloaded === undefined) return decide(consumer, record, record.body, undefined, now);
  const read = await readOffloadedBody(context, record.offloaded);
  return 'error' in read ? decide(consumer, record, undefined, read.error, now) : decide(consumer, record, read.body, undefined, now);
}

async function decide(
  consumer: DryRunConsumer,
  record: DeadLetterRecord,
  body: string | undefined,
  unreadable: string | undefined,
  now: Date,
): Promise<DecidedDeadLetter> {
  // What the redrive would refuse to send (see `buildRedriveMessage`) never reaches the consumer.
  const notRedrivable =
    unreadable ??
    (record.producerAttributes === undefined
      ? `its producer attributes cannot be restored (${record.problem ?? 'unreadable'})`
      : record.bodyEncoding === 'base64'
        ? 'its original body is bytes SQS cannot hold as text (the DLQ keeps them in base64)'
        : record.bodyEncoding === 'empty'
          ? 'its original body was empty, which SQS cannot hold'
          : undefined);
  const failedAt = failedAtOf(record);
  const age = messageAge(messageTimesOf(record.messageAttributes, record.systemAttributes), now);
  const message: DryRunMessage = {
    messageId: record.messageId,
    body: notRedrivable === undefined ? body : undefined,
    ...(notRedrivable !== undefined ? { notRedrivable } : {}),
    // The mark a redrive gives it (see `redriveAttributes`): what lets it apply a key its own dead letter holds.
    redriveOf:
      record.deadLettered && record.originalMessageId !== undefined && record.originalMessageId !== ''
        ? record.originalMessageId
        : undefined,
    since: age === undefined ? undefined : { at: age.since, what: age.sinceWhat },
  };
  const verdict = await decideDeadLetter(message, consumer, now);
  return {
    messageId: record.messageId,
    ...(record.originalMessageId !== undefined ? { originalMessageId: record.originalMessageId } : {}),
    deadLetterReason: reasonOf(record),
    ...(failedAt !== undefined ? { failedAt: failedAt.toISOString() } : {}),
    ...verdict,
  };
}

const OUTCOME_ORDER: readonly DryRunOutcome[] = [
  DryRunOutcome.WouldApply,
  DryRunOutcome.Duplicate,
  DryRunOutcome.OutsideWindow,
  DryRunOutcome.WouldFail,
];

function result(
  command: DecisionsResult['command'],
  from: string,
  consumer: DryRunConsumer,
  now: Date,
  seen: number,
  decided: readonly DecidedDeadLetter[],
  rest: Pick<DecisionsResult, 'warnings' | 'nothingMoved' | 'interrupted'>,
): DecisionsResult {
  const counts = Object.fromEntries(OUTCOME_ORDER.map((outcome) => [outcome, 0])) as Record<DryRunOutcome, number>;
  const groups = new Map<string, DecidedDeadLetter[]>();
  for (const message of decided) {
    counts[message.outcome] += 1;
    const key = `${message.outcome}\u0000${message.reason}`;
    groups.set(key, [...(groups.get(key) ?? []), message]);
  }
  return {
    command,
    from,
    consumer: {
      handler: consumer.handler,
      consumerName: consumer.consumerName,
      inboxTable: consumer.inboxTable,
      tables: consumer.tables,
      inboxTtlSeconds: consumer.inboxTtlSeconds,
      inboxTtlFrom: consumer.inboxTtlFrom,
    },
    decidedAt: now.toISOString(),
    seen,
    decided: decided.length,
    counts,
    groups: [...groups.values()]
      .map((messages) => ({ outcome: messages[0]!.outcome, reason: messages[0]!.reason, count: messages.length, messages }))
      .sort(
        (a, b) =>
          OUTCOME_ORDER.indexOf(a.outcome) - OUTCOME_ORDER.indexOf(b.outcome) || b.count - a.count || a.reason.localeCompare(b.reason),
      ),
    ...rest,
    warnings: [...windowWarning(consumer), ...sharedKeyWarnings(decided), ...rest.warnings],
  };
}

function windowWarning(consumer: DryRunConsumer): string[] {
  return consumer.inboxTtlFrom === 'default'
    ? [
        `the inbox window is the library's default (${consumer.inboxTtlSeconds} s): set INBOX_TTL_SECONDS as the function has it, ` +
          "or pass --settings, if the consumer's differs",
      ]
    : [];
}

/** Messages decided alone that would meet each other when redriven together. */
function sharedKeyWarnings(decided: readonly DecidedDeadLetter[]): string[] {
  const byKey = new Map<string, string[]>();
  for (const message of decided) {
    if (message.idempotencyKey === undefined) continue;
    if (message.outcome !== DryRunOutcome.WouldApply && message.outcome !== DryRunOutcome.OutsideWindow) continue;
    byKey.set(message.idempotencyKey, [...(byKey.get(message.idempotencyKey) ?? []), message.messageId]);
  }
  return [...byKey.entries()]
    .filter(([, ids]) => ids.length > 1)
    .map(
      ([key, ids]) =>
        `${ids.length} messages share idempotency key ${JSON.stringify(key)} (${ids.join(', ')}): each was decided alone; ` +
        'redriven together, the first to commit applies it and the others are its duplicates',
    );
}
