import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
  type ListMessageMoveTasksResultEntry,
} from '@aws-sdk/client-sqs';
import { confirmed, type ConfirmOptions, type DlqContext } from './context.js';
import { reasonOf, type DeadLetterRecord } from './deadLetterRecord.js';
import { isQueueDoesNotExist, isUnsupportedOperation, MoveTaskFailedError, QueueNotFoundError, UsageError } from './errors.js';
import { scanWarnings } from './list.js';
import { assertDeadLetterQueue, inspectQueue, MessageHold, type QueueInfo, type ReceiveOptions } from './queueInspector.js';
import { buildRedriveMessage, NotRedrivableError } from './redriveMessage.js';
import { RedriveTargetResolver, sameQueue } from './redriveTarget.js';
import { matchesSelection, selectsAll, type MessageSelection } from './selection.js';
import { createRateLimiter, sleep } from './timing.js';

/** Options of {@link redriveDeadLetters}. */
export interface RedriveOptions extends ReceiveOptions, ConfirmOptions {
  /** The dead-letter queue's URL. */
  readonly queueUrl: string;
  /** Which messages to move. @default all (then a message move task is used where supported) */
  readonly selection?: MessageSelection;
  /** Send every message to this queue URL instead of its source queue. */
  readonly to?: string;
  /**
   * Messages moved per second: the move task's `MaxNumberOfMessagesPerSecond` (SQS: 1 to 500),
   * or a pause between sends on receive → send → delete.
   * @default as fast as SQS goes
   */
  readonly ratePerSecond?: number;
  /** Use `StartMessageMoveTask` when every message is to be moved. @default true */
  readonly useMoveTask?: boolean;
  /** Wait for the move task to end, reporting its progress. @default true */
  readonly wait?: boolean;
  /** Seconds between two progress reads of the move task. @default 5 */
  readonly pollIntervalSeconds?: number;
  /** @default true */
  readonly dlqCheck?: boolean;
}

/** What a message move task reported last. */
export interface MoveTaskProgress {
  readonly taskHandle: string | undefined;
  readonly sourceArn: string;
  /** `undefined`: SQS sends each message back to the queue it came from. */
  readonly destinationArn: string | undefined;
  /** `RUNNING`, `COMPLETED`, `CANCELLING`, `CANCELLED`, `FAILED`; `STARTED` before the first read. */
  readonly status: string;
  readonly approximateNumberOfMessagesMoved: number | undefined;
  readonly approximateNumberOfMessagesToMove: number | undefined;
  /** Why the task failed (status `FAILED`). */
  readonly failureReason?: string;
}

/** One message moved, skipped or failed. */
export interface RedriveItem {
  readonly messageId: string;
  readonly reason: string;
  /** Where it went or would go. */
  readonly target?: string;
  /** Why it was skipped or failed. */
  readonly detail?: string;
}

/** What {@link redriveDeadLetters} did (or, with `dryRun`, would do). */
export interface RedriveResult {
  readonly queueUrl: string;
  /** `move-task`: SQS's `StartMessageMoveTask`; `receive-send-delete`: one message at a time. */
  readonly method: 'move-task' | 'receive-send-delete';
  readonly dryRun: boolean;
  /** Why a message move task was not used although every message was selected. */
  readonly fallbackReason?: string;
  /** Move task: `ApproximateNumberOfMessages` of the DLQ when it started. */
  readonly approximateNumberOfMessages?: number;
  readonly moveTask?: MoveTaskProgress;
  /** Receive → send → delete: the messages that matched (dry run: that would move). */
  readonly selected: readonly RedriveItem[];
  /** Sent to the target and deleted from the DLQ. */
  readonly moved: readonly RedriveItem[];
  /** Left in the DLQ: no destination, no message group for a FIFO target, or behind one of those. */
  readonly skipped: readonly RedriveItem[];
  /** Left in the DLQ: the send failed; the redrive stopped there. */
  readonly failed: readonly RedriveItem[];
  /** Sent, but the delete failed: the message is in both queues (a harmless duplicate for the consumer's inbox). */
  readonly notDeleted: readonly RedriveItem[];
  /** Messages that entered the DLQ after the redrive started: left for a later run. */
  readonly arrivedDuringRun: number;
  /** The operator declined the confirmation: nothing changed. */
  readonly cancelled: boolean;
  /** Ctrl-C: the redrive stopped at a message boundary. */
  readonly interrupted: boolean;
  /** What a dry run may have missed (on FIFO queues: messages behind the first of each group). */
  readonly warnings: readonly string[];
}

/**
 * Moves dead-letter messages back to their source queue (or to `to`).
 *
 * - Everything selected and `useMoveTask`: one `StartMessageMoveTask` (server side, at
 *   `ratePerSecond`), then its progress until it ends. SQS moves each message as it is: body,
 *   attributes (the consumer's failure attributes included) and message group. Falls back to
 *   receive → send → delete when the server does not support move tasks (fauxqs) or when no
 *   queue names the DLQ in its redrive policy (SQS refuses a move task then).
 * - Otherwise receive → send → delete, one message at a time: receive (held invisible), send
 *   the body with the original attributes restored and the FIFO group kept (see
 *   `buildRedriveMessage`), and delete from the DLQ only after the send succeeded. A send
 *   failure stops the redrive; every message not moved is made visible again. An interruption
 *   between send and delete leaves a duplicate in the target, never a loss. On a FIFO DLQ,
 *   messages of a group are moved in order, and a group stops at its first message that cannot
 *   move.
 *
 * @throws UsageError when `to` is the dead-letter queue itself
 * @throws QueueNotFoundError for the DLQ or `to`; NotADeadLetterQueueError;
 *   MoveTaskFailedError when the move task ends `FAILED`; the SDK's errors otherwise
 */
export async function redriveDeadLetters(context: DlqContext, options: RedriveOptions): Promise<RedriveResult> {
  if (options.to !== undefined && sameQueue(options.to, options.queueUrl)) {
    throw new UsageError('--to is the dead-letter queue itself');
  }
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  const selection = options.selection ?? {};
  let fallbackReason: string | undefined;
  if (selectsAll(selection) && options.useMoveTask !== false) {
    if (info.deadLetterSources !== undefined && info.deadLetterSources.length === 0) {
      fallbackReason = 'no queue names this queue in its redrive policy, and SQS moves messages only out of such queues';
    } else {
      const result = await redriveWithMoveTask(context, options, info);
      if (typeof result !== 'string') return result;
      fallbackReason = result;
    }
    context.log?.(`not using a message move task: ${fallbackReason}; moving by receive → send → delete`);
  }
  return redriveByCopy(context, options, info, fallbackReason);
}

/** @returns the result, or why the server cannot run a move task */
async function redriveWithMoveTask(
  context: DlqContext,
  options: RedriveOptions,
  info: QueueInfo,
): Promise<RedriveResult | string> {
  const { sqs } = context;
  const sourceArn = info.queueArn;
  const destinationUrl = options.to ?? (info.deadLetterSources?.length === 1 ? info.deadLetterSources[0] : undefined);
  const destinationArn = destinationUrl !== undefined ? await queueArnOf(context, destinationUrl) : undefined;
  const destination = destinationUrl ?? 'the queue each message came from';
  if (options.ratePerSecond !== undefined && (options.ratePerSecond < 1 || options.ratePerSecond > 500)) {
    throw new UsageError('--rate must be between 1 and 500 messages per second for a message move task');
  }
  const base = {
    queueUrl: options.queueUrl,
    method: 'move-task' as const,
    approximateNumberOfMessages: info.approximateNumberOfMessages,
    selected: [],
    moved: [],
    skipped: [],
    failed: [],
    notDeleted: [],
    arrivedDuringRun: 0,
    interrupted: false,
    warnings: [],
  };
  const progress = (status: string, entry?: ListMessageMoveTasksResultEntry, taskHandle?: string): MoveTaskProgress => ({
    taskHandle: taskHandle ?? entry?.TaskHandle,
    sourceArn,
    destinationArn,
    status,
    approximateNumberOfMessagesMoved: entry?.ApproximateNumberOfMessagesMoved,
    approximateNumberOfMessagesToMove: entry?.ApproximateNumberOfMessagesToMove,
    ...(entry?.FailureReason !== undefined ? { failureReason: entry.FailureReason } : {}),
  });

  if (options.dryRun === true) {
    try {
      await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 1 }));
    } catch (error) {
      if (isUnsupportedOperation(error)) return 'the server does not support message move tasks';
      throw error;
    }
    return { ...base, dryRun: true, cancelled: false, moveTask: progress('NOT_STARTED') };
  }

  const go = await confirmed(
    options,
    `Start a message move task: move all ~${info.approximateNumberOfMessages} message(s) of ${options.queueUrl} to ${destination}?`,
  );
  if (!go) return { ...base, dryRun: false, cancelled: true };

  let taskHandle: string | undefined;
  try {
    const output = await sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: sourceArn,
        ...(destinationArn !== undefined ? { DestinationArn: destinationArn } : {}),
        ...(options.ratePerSecond !== undefined ? { MaxNumberOfMessagesPerSecond: options.ratePerSecond } : {}),
      }),
    );
    taskHandle = output.TaskHandle;
  } catch (error) {
    if (isUnsupportedOperation(error)) return 'the server does not support StartMessageMoveTask';
    throw error;
  }
  context.log?.(`started message move task ${taskHandle ?? ''} from ${sourceArn} to ${destinationArn ?? destination}`);
  let last = progress('STARTED', undefined, taskHandle);
  if (options.wait === false) return { ...base, dryRun: false, cancelled: false, moveTask: last };

  const terminal = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
  let reported = '';
  for (;;) {
    const output = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 10 }));
    const entry = output.Results?.find((r) => taskHandle === undefined || r.TaskHandle === taskHandle) ?? output.Results?.[0];
    if (entry !== undefined) last = progress(entry.Status ?? 'UNKNOWN', entry, taskHandle);
    const line = `move task ${last.status}: ${last.approximateNumberOfMessagesMoved ?? 0} of ~${last.approximateNumberOfMessagesToMove ?? '?'} moved`;
    if (line !== reported) context.log?.(line);
    reported = line;
    if (terminal.has(last.status)) break;
    if (context.signal?.aborted === true) {
      context.log?.(
        `stopped waiting; the task goes on in SQS. Cancel it with: aws sqs cancel-message-move-task --task-handle ${taskHandle ?? '<handle>'}`,
      );
      return { ...base, dryRun: false, cancelled: false, moveTask: last, interrupted: true };
    }
    await sleep((options.pollIntervalSeconds ?? 5) * 1000, context.signal);
  }
  if (last.status === 'FAILED') {
    throw new MoveTaskFailedError(
      `message move task failed: ${last.failureReason ?? 'no reason given'}; about ${last.approximateNumberOfMessagesMoved ?? 0} message(s) moved, ` +
        'the rest are still in the dead-letter queue',
    );
  }
  return { ...base, dryRun: false, cancelled: false, moveTask: last };
}

async function queueArnOf(context: DlqContext, queueUrl: string): Promise<string> {
  try {
    const output = await context.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
    const arn = output.Attributes?.QueueArn;
    if (arn === undefined) throw new Error(`GetQueueAttributes returned no QueueArn for ${queueUrl}`);
    return arn;
  } catch (error) {
    if (isQueueDoesNotExist(error)) throw new QueueNotFoundError(queueUrl, { cause: error });
    throw error;
  }
}

async function redriveByCopy(
  context: DlqContext,
  options: RedriveOptions,
  info: QueueInfo,
  fallbackReason: string | undefined,
): Promise<RedriveResult> {
  const { sqs } = context;
  const now = context.now ?? (() => new Date());
  const startedAt = now();
  const selection = options.selection ?? {};
  if (options.to !== undefined) await queueArnOf(context, options.to);
  const resolver = new RedriveTargetResolver(sqs, {
    ...(options.to !== undefined ? { to: options.to } : {}),
    deadLetterQueueUrl: options.queueUrl,
    ...(info.deadLetterSources !== undefined ? { deadLetterSources: info.deadLetterSources } : {}),
  });
  const hold = new MessageHold(sqs, options.queueUrl);
  const selected: RedriveItem[] = [];
  const moved: RedriveItem[] = [];
  const skipped: RedriveItem[] = [];
  const failed: RedriveItem[] = [];
  const notDeleted: RedriveItem[] = [];
  let arrivedDuringRun = 0;
  let cancelled = false;
  let interrupted = false;
  let remaining = options.maxMessages ?? Number.POSITIVE_INFINITY;
  let firstScan = 0;
  const result = (): RedriveResult => ({
    queueUrl: options.queueUrl,
    method: 'receive-send-delete',
    dryRun: options.dryRun === true,
    ...(fallbackReason !== undefined ? { fallbackReason } : {}),
    selected,
    moved,
    skipped,
    failed,
    notDeleted,
    arrivedDuringRun,
    cancelled,
    interrupted,
    warnings: options.dryRun === true ? scanWarnings(info, firstScan, 0) : [],
  });

  /** Receives what is visible now and keeps the messages to move. */
  const nextCandidates = async (first: boolean): Promise<DeadLetterRecord[]> => {
    if (remaining <= 0) return [];
    const records = await hold.scan({ ...options, maxMessages: remaining });
    remaining -= records.length;
    if (first) firstScan = records.length;
    if (first && options.dlqCheck !== false) assertDeadLetterQueue(info, records);
    const candidates: DeadLetterRecord[] = [];
    for (const record of records) {
      // A message that entered the DLQ after the start (the consumer failed it again) waits for
      // the next run: without this, a live consumer and a redrive could pass it back and forth.
      if (record.sentAt !== undefined && record.sentAt.getTime() > startedAt.getTime()) {
        arrivedDuringRun += 1;
      } else if (matchesSelection(record, selection, startedAt)) {
        candidates.push(record);
      }
    }
    return candidates;
  };

  try {
    let candidates = await nextCandidates(true);
    for (const record of candidates) {
      const target = await resolver.resolve(record);
      selected.push({
        messageId: record.messageId,
        reason: reasonOf(record),
        ...('queueUrl' in target ? { target: target.queueUrl } : { detail: target.skip }),
      });
    }
    if (options.dryRun === true || candidates.length === 0) return result();
    const targets = [...new Set(selected.flatMap((item) => (item.target !== undefined ? [item.target] : [])))];
    // With no target at all the loop below only reports the skipped messages: nothing to confirm.
    const go =
      targets.length === 0 ||
      (await confirmed(
        options,
        `Redrive ${candidates.length} message(s) from ${options.queueUrl} to ${targets.length === 1 ? targets[0] : `${targets.length} queues`}` +
          `${info.fifo ? ' (and the messages of their groups revealed behind them)' : ''}? Each is sent, then deleted from the dead-letter queue.`,
      ));
    if (!go) {
      cancelled = true;
      return result();
    }
    const limit = createRateLimiter(options.ratePerSecond);
    const blockedGroups = new Set<string>();
    let stop = false;
    while (candidates.length > 0 && !stop) {
      for (const record of candidates) {
        if (context.signal?.aborted === true) {
          interrupted = true;
          stop = true;
          break;
        }
        const item = { messageId: record.messageId, reason: reasonOf(record) };
        const group = info.fifo ? record.messageGroupId : undefined;
        if (group !== undefined && blockedGroups.has(group)) {
          skipped.push({ ...item, detail: `an earlier message of group ${group} was not moved` });
          continue;
        }
        let input;
        try {
          const target = await resolver.resolve(record);
          if ('skip' in target) throw new NotRedrivableError(target.skip);
          input = buildRedriveMessage(record, target.queueUrl);
        } catch (error) {
          if (group !== undefined) blockedGroups.add(group);
          if (error instanceof NotRedrivableError) {
            skipped.push({ ...item, detail: error.message });
            continue;
          }
          failed.push({ ...item, detail: describe(error) });
          stop = true;
          break;
        }
        const target = input.QueueUrl ?? '';
        await limit();
        try {
          await sqs.send(new SendMessageCommand(input));
        } catch (error) {
          failed.push({ ...item, target, detail: describe(error) });
          stop = true;
          break;
        }
        try {
          await sqs.send(new DeleteMessageCommand({ QueueUrl: options.queueUrl, ReceiptHandle: hold.receiptHandleOf(record.messageId) }));
          hold.forget(record.messageId);
          moved.push({ ...item, target });
          if (moved.length % 100 === 0) context.log?.(`moved ${moved.length} message(s)`);
        } catch (error) {
          notDeleted.push({ ...item, target, detail: describe(error) });
        }
      }
      if (stop) break;
      // On a FIFO queue, moving the head of a group reveals the next message of the group.
      candidates = await nextCandidates(false);
    }
    return result();
  } finally {
    await hold.release();
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
