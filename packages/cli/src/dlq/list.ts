import { toPlainAttributes, type PlainAttribute } from 'idempotent-consumer/dlq';
import { clockOf, type DlqContext } from './context.js';
import { failedAtOf, reasonOf, type DeadLetterRecord } from 'idempotent-consumer/dlq';
import { readKafkaOnFailureRecord } from 'idempotent-consumer/dlq';
import { kafkaCoordinatesOf, kafkaMessageIdOf } from './kafkaRedriveEvent.js';
import { assertDeadLetterQueue, inspectQueue, MessageHold, type ReceiveOptions } from './queueInspector.js';
import { matchesSelection, reasonWarnings, type MessageSelection } from './selection.js';

/** Options of {@link listDeadLetters}. */
export interface ListOptions extends ReceiveOptions {
  /** The dead-letter queue's URL. */
  readonly queueUrl: string;
  /** Which messages to show. @default all */
  readonly selection?: MessageSelection;
  /** Check that the queue is a dead-letter queue (see `assertDeadLetterQueue`). @default true */
  readonly dlqCheck?: boolean;
}

/** One dead-letter message as `list` shows it. */
export interface DeadLetterSummary {
  readonly messageId: string;
  readonly originalMessageId: string | undefined;
  /** `false`: no `ic.*` attributes, the queue's redrive policy moved it (reason `none`). */
  readonly deadLettered: boolean;
  readonly failureReason: string | undefined;
  readonly errorType: string | undefined;
  readonly errorMessage: string | undefined;
  readonly source: string | undefined;
  readonly messageGroupId: string | undefined;
  readonly attempts: number | undefined;
  /** When it failed (`failedAt`, else when it entered the DLQ), ISO 8601. */
  readonly failedAt: string | undefined;
  /** Seconds since `failedAt`, on the SQS server's clock. */
  readonly ageSeconds: number | undefined;
  /** The producer's attributes as a redrive restores them (binary values in base64); `undefined` when unreadable. */
  readonly attributes: Readonly<Record<string, PlainAttribute>> | undefined;
  /** Where the consumer offloaded the body (`s3://bucket/key`), when it did. */
  readonly offloadedTo?: string;
  /**
   * Kafka: a dead letter's original coordinates (`orders-3@17`), or, for the on-failure record of
   * a Kafka mapping with this queue as its destination, what Lambda gave up on
   * (`gave up orders-0@12..15 (RetryAttemptsExhausted), metadata only`).
   */
  readonly kafka?: string;
}

/** The messages of one reason. */
export interface ReasonGroup {
  /** The `ic.failureReason`, or `none` (moved by the redrive policy). */
  readonly reason: string;
  readonly count: number;
  /** Oldest first. */
  readonly messages: readonly DeadLetterSummary[];
}

/** What {@link listDeadLetters} found. */
export interface ListResult {
  readonly queueUrl: string;
  readonly fifo: boolean;
  /** SQS's estimate of the visible messages, read before the scan. */
  readonly approximateNumberOfMessages: number;
  /** Messages received by the scan. */
  readonly seen: number;
  /** Messages matching the selection. */
  readonly listed: number;
  /** Largest group first. */
  readonly groups: readonly ReasonGroup[];
  /** Messages made visible again after the scan. */
  readonly released: number;
  readonly warnings: readonly string[];
}

/**
 * Lists the dead-letter messages grouped by `ic.failureReason` (those the queue's redrive policy
 * moved under `none`), without consuming them: every message received is made visible again
 * before this returns (also when it throws). Ages are measured on the SQS server's clock.
 *
 * @throws QueueNotFoundError, NotADeadLetterQueueError; the SDK's errors otherwise
 */
export async function listDeadLetters(context: DlqContext, options: ListOptions): Promise<ListResult> {
  const clock = clockOf(context);
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  const hold = new MessageHold(context.sqs, options.queueUrl);
  let records: DeadLetterRecord[];
  let release: Awaited<ReturnType<MessageHold['release']>>;
  try {
    records = await hold.scan({ ...options, ...(context.signal !== undefined ? { signal: context.signal } : {}) });
    if (options.dlqCheck !== false) assertDeadLetterQueue(info, records);
  } finally {
    release = await hold.release();
  }
  const now = clock.now();
  const selected = records.filter((record) => matchesSelection(record, options.selection ?? {}, now));
  const warnings = [
    ...reasonWarnings(options.selection ?? {}, records),
    ...scanWarnings(info, records.length, release.failed.length),
    ...ownRedrivePolicyWarnings(info, records),
  ];
  if (context.signal?.aborted === true) warnings.push('interrupted: the list is incomplete');
  return {
    queueUrl: options.queueUrl,
    fifo: info.fifo,
    approximateNumberOfMessages: info.approximateNumberOfMessages,
    seen: records.length,
    listed: selected.length,
    groups: groupByReason(selected, now),
    released: release.released,
    warnings,
  };
}

/** Summaries grouped by reason: largest group first, oldest message first. */
export function groupByReason(records: readonly DeadLetterRecord[], now: Date): ReasonGroup[] {
  const groups = new Map<string, DeadLetterRecord[]>();
  for (const record of records) {
    const reason = reasonOf(record);
    groups.set(reason, [...(groups.get(reason) ?? []), record]);
  }
  return [...groups.entries()]
    .map(([reason, members]) => ({
      reason,
      count: members.length,
      messages: members.map((record) => summarize(record, now)).sort((a, b) => (a.failedAt ?? '').localeCompare(b.failedAt ?? '')),
    }))
    .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}

/** One record as `list` shows it. */
export function summarize(record: DeadLetterRecord, now: Date): DeadLetterSummary {
  const failedAt = failedAtOf(record);
  return {
    messageId: record.messageId,
    originalMessageId: record.originalMessageId,
    deadLettered: record.deadLettered,
    failureReason: record.failureReason,
    errorType: record.errorType,
    errorMessage: record.errorMessage,
    source: record.source,
    messageGroupId: record.messageGroupId,
    attempts: record.attempts,
    failedAt: failedAt?.toISOString(),
    ageSeconds: failedAt !== undefined ? Math.max(0, Math.floor((now.getTime() - failedAt.getTime()) / 1000)) : undefined,
    attributes: record.producerAttributes !== undefined ? toPlainAttributes(record.producerAttributes) : undefined,
    ...(record.offloaded !== undefined ? { offloadedTo: `s3://${record.offloaded.bucket}/${record.offloaded.key}` } : {}),
    ...kafkaOf(record),
  };
}

/** {@link DeadLetterSummary.kafka} of a record, if it is a Kafka dead letter or a Kafka mapping's on-failure record. */
function kafkaOf(record: DeadLetterRecord): { kafka?: string } {
  const coordinates = kafkaCoordinatesOf(record);
  if (record.deadLettered) return coordinates !== undefined ? { kafka: kafkaMessageIdOf(coordinates) } : {};
  if (!record.body.includes('KafkaBatchInfo')) return {};
  try {
    const { record: gaveUp } = readKafkaOnFailureRecord(record.body);
    const ranges = Object.entries(gaveUp.KafkaBatchInfo.recordsInfo).map(
      ([partition, range]) => `${partition}@${range.firstRecordOffset}..${range.lastRecordOffset}`,
    );
    return { kafka: `gave up ${ranges.join(', ')} (${gaveUp.requestContext?.condition ?? '?'}), metadata only` };
  } catch {
    return {};
  }
}

/**
 * A warning when the dead-letter queue has a redrive policy of its own (a chain: source → DLQ →
 * another queue). Every receive counts (`ApproximateReceiveCount`): a listing, a dry run and a
 * redrive each receive a message once, and the receive after the policy's `maxReceiveCount`
 * moves it on instead of returning it. `records` are the messages received, with their counts.
 * See https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html
 */
export function ownRedrivePolicyWarnings(
  info: { readonly redrivePolicy?: { readonly deadLetterTargetArn?: string; readonly maxReceiveCount?: number } | undefined },
  records: readonly DeadLetterRecord[],
): string[] {
  const policy = info.redrivePolicy;
  if (policy === undefined) return [];
  const max = policy.maxReceiveCount;
  const next = policy.deadLetterTargetArn ?? 'its own dead-letter queue';
  const atTheLimit = max === undefined ? 0 : records.filter((r) => Number(r.systemAttributes.ApproximateReceiveCount ?? 0) >= max).length;
  return [
    `this dead-letter queue has a redrive policy of its own (maxReceiveCount ${max ?? '?'}, to ${next}): every listing, dry run ` +
      `and redrive receives its messages once more, and SQS moves a message on to ${next} at the receive after its ${max ?? 'maxReceiveCount'}th` +
      (atTheLimit > 0 ? `; ${atTheLimit} message(s) seen have been received ${max} times: the next receive moves them there` : ''),
  ];
}

/** Warnings about what a scan may have missed. */
export function scanWarnings(
  info: { readonly fifo: boolean; readonly approximateNumberOfMessages: number; readonly approximateNumberOfMessagesNotVisible: number },
  seen: number,
  releaseFailures: number,
): string[] {
  const warnings: string[] = [];
  if (seen < info.approximateNumberOfMessages) {
    warnings.push(
      info.fifo
        ? `saw ${seen} of about ${info.approximateNumberOfMessages} messages: on a FIFO queue SQS hides the later ` +
            'messages of a message group while one of the group is held'
        : `saw ${seen} of about ${info.approximateNumberOfMessages} messages (SQS's count is approximate; raise ` +
            '--visibility-timeout if the scan took longer than it)',
    );
  }
  if (info.approximateNumberOfMessagesNotVisible > 0) {
    warnings.push(`${info.approximateNumberOfMessagesNotVisible} message(s) were in flight (held by another reader) and not seen`);
  }
  if (releaseFailures > 0) {
    warnings.push(`${releaseFailures} message(s) could not be made visible at once; they come back when their visibility timeout ends`);
  }
  return warnings;
}
