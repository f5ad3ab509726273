import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
  type ListMessageMoveTasksResultEntry,
} from '@aws-sdk/client-sqs';
import { clockOf, confirmed, type ConfirmOptions, type DlqContext } from './context.js';
import { reasonOf, type DeadLetterRecord } from 'idempotent-consumer/dlq';
import { isQueueDoesNotExist, isUnsupportedOperation, MoveTaskFailedError, QueueNotFoundError, UsageError } from './errors.js';
import { ownRedrivePolicyWarnings, scanWarnings } from './list.js';
import { readOffloadedBody } from './offloadedBody.js';
import { assertDeadLetterQueue, inspectQueue, MessageHold, type QueueInfo, type ReceiveOptions } from './queueInspector.js';
import { sameQueue } from './queueUrl.js';
import { DEFAULT_INBOX_WINDOW, type InboxWindowOptions, messageTimesOf, moveTaskOutsideWindow, outsideInboxWindow } from './inboxWindow.js';
import { buildRedriveMessage, NotRedrivableError } from './redriveMessage.js';
import { RedriveTargetResolver, targetLabel } from './redriveTarget.js';
import { kafkaCoordinatesOf, kafkaRedriveEvent, type KafkaCoordinates } from './kafkaRedriveEvent.js';
import { redriveKafkaRecord } from './kafkaRedrive.js';
import type { SendMessageCommandInput } from '@aws-sdk/client-sqs';
import type { KafkaEvent } from 'idempotent-consumer/kafka';
import { matchesSelection, reasonWarnings, selectsAll, type MessageSelection } from './selection.js';
import { arrivalCutoff } from './arrivalCutoff.js';
import { createRateLimiter, sleep } from './timing.js';

/**
 * Options of {@link redriveDeadLetters}. A message older than the inbox window (`inboxWindow`, see
 * `inboxWindow.ts`) stays in the DLQ unless `allowOutsideWindow`.
 */
export interface RedriveOptions extends ReceiveOptions, ConfirmOptions, InboxWindowOptions {
  /** The dead-letter queue's URL. */
  readonly queueUrl: string;
  /** Which messages to move. @default all */
  readonly selection?: MessageSelection;
  /** Send every message to this queue URL instead of its source queue. */
  readonly to?: string;
  /**
   * The consumer's Lambda function (name or ARN): a Kafka dead letter is redriven by invoking it
   * with a Kafka event holding the original record (`kafkaRedriveEvent`), through
   * `context.functions`. Without it Kafka dead letters stay in the DLQ. Ignored with `to`.
   */
  readonly functionName?: string;
  /**
   * Messages moved per second: the move task's `MaxNumberOfMessagesPerSecond` (SQS: 1 to 500),
   * or a pause between sends on receive → send → delete.
   * @default as fast as SQS goes
   */
  readonly ratePerSecond?: number;
  /**
   * Move every message with one SQS `StartMessageMoveTask` (server side) instead of receive →
   * send → delete. SQS moves each message as it is: the consumer's `ic.*` attributes stay on it,
   * packed producer attributes stay packed, and an offloaded body stays an S3 pointer. Only with
   * no selection. @default false
   */
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
  /** A Kafka dead letter's original coordinates, kept whatever became of it. */
  readonly coordinates?: KafkaCoordinates;
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
  /** Messages the scan received (before selection). */
  readonly seen: number;
  /**
   * Set when nothing that was asked for moved (or, on a dry run, would move): the sentence saying
   * why. The command line exits 1 then.
   */
  readonly nothingMoved?: string;
  /** `--reason` values that matched nothing; what a dry run may have missed (on FIFO queues: messages behind the first of each group). */
  readonly warnings: readonly string[];
}

/**
 * Moves dead-letter messages back to their source queue (or to `to`); Kafka dead letters back to
 * the consumer by invoking its function (`functionName`).
 *
 * - A Kafka dead letter (its `ic.context` holds the record's topic, partition and offset) cannot
 *   be sent back to its topic (the tool is no Kafka producer, and a record produced again would
 *   get a new offset, and reach every consumer group of the topic). It is redriven by a
 *   synchronous Lambda `Invoke` of the consumer's function with the event its Kafka event source
 *   mapping would send for that record alone (`kafkaRedriveEvent`: its original coordinates, value,
 *   key and headers, and the redrive mark `ic.redrive`), so the consumer decides it with its
 *   normal code path; it is deleted from the DLQ only when the function's response reports no
 *   failure (applied, a duplicate, or dead-lettered again with a new reason). A reported retry,
 *   an error or a timeout stops the redrive, as a failed send does. Its item keeps its
 *   `coordinates`.
 *
 * - By default, receive → send → delete, one message at a time: receive (held invisible), send
 *   the original body (read back from S3 when the consumer offloaded it) with the producer's
 *   attributes restored exactly and the FIFO group kept (see `buildRedriveMessage`), and delete
 *   from the DLQ only after the send succeeded. A message that cannot go back as it was (its
 *   body cannot be read, it does not fit the target, its source is not an SQS queue) stays in
 *   the DLQ and is reported. A send failure stops the redrive; every message not moved is made
 *   visible again. An interruption between send and delete leaves a duplicate in the target,
 *   never a loss. On a FIFO DLQ, messages of a group are moved in order, and a group stops at
 *   its first message that stays: one that cannot move, one the selection (`--reason`, `--id`,
 *   `--older-than`) leaves out, or one that entered the DLQ during the run; a later message of
 *   the group, selected or not, never overtakes it. Messages that enter the DLQ after the redrive's first
 *   send (a live consumer failing a redriven message again) are left for a later run: that is
 *   decided on the SQS server's clock (see `arrivalCutoff`), never the local one.
 * - With `useMoveTask` and no selection: one `StartMessageMoveTask` (server side, at
 *   `ratePerSecond`), then its progress until it ends. SQS moves each message as it is. Falls
 *   back to receive → send → delete when the server does not support move tasks (fauxqs) or when
 *   no queue names the DLQ in its redrive policy (SQS refuses a move task then).
 * - A message older than the inbox window (`options.inboxWindow`, see `inboxWindow.ts`) stays in
 *   the DLQ with the reason, unless `allowOutsideWindow`: the consumer would apply it again. A
 *   move task, which cannot leave a message behind, falls back to receive → send → delete when the
 *   DLQ's retention is longer than the window.
 *
 * @throws UsageError when `to` is the dead-letter queue itself, or `useMoveTask` comes with a selection
 * @throws QueueNotFoundError for the DLQ or `to`; NotADeadLetterQueueError;
 *   MoveTaskFailedError when the move task ends `FAILED`; the SDK's errors otherwise
 */
export async function redriveDeadLetters(context: DlqContext, options: RedriveOptions): Promise<RedriveResult> {
  if (options.to !== undefined && sameQueue(options.to, options.queueUrl)) {
    throw new UsageError('--to is the dead-letter queue itself');
  }
  if (options.useMoveTask === true && !selectsAll(options.selection ?? {})) {
    throw new UsageError('--move-task moves every message: it cannot be combined with --reason, --id or --older-than');
  }
  clockOf(context); // attached before the first request, so the server's time is known from it on
  return explainNothingMoved(await redrive(context, options), options.selection ?? {});
}

async function redrive(context: DlqContext, options: RedriveOptions): Promise<RedriveResult> {
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  let fallbackReason: string | undefined;
  if (options.useMoveTask === true) {
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
async function redriveWithMoveTask(context: DlqContext, options: RedriveOptions, info: QueueInfo): Promise<RedriveResult | string> {
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
    seen: 0,
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

  const window = options.inboxWindow ?? DEFAULT_INBOX_WINDOW;
  const outsideWindow = await moveTaskOutsideWindow(sqs, options.queueUrl, window, options.allowOutsideWindow === true);
  if (outsideWindow !== undefined) return outsideWindow;

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
  const clock = clockOf(context);
  const now = clock.now();
  const allowOutsideWindow = options.allowOutsideWindow === true;
  const window = options.inboxWindow ?? DEFAULT_INBOX_WINDOW;
  /** Why the record is older than the inbox window (said even when allowed), or `undefined`. */
  const outsideWindow = (record: DeadLetterRecord): string | undefined =>
    outsideInboxWindow(messageTimesOf(record.messageAttributes, record.systemAttributes), now, window, allowOutsideWindow);
  const selection = options.selection ?? {};
  if (options.to !== undefined) await queueArnOf(context, options.to);
  const resolver = new RedriveTargetResolver(sqs, {
    ...(options.to !== undefined ? { to: options.to } : {}),
    deadLetterQueueUrl: options.queueUrl,
    ...(info.deadLetterSources !== undefined ? { deadLetterSources: info.deadLetterSources } : {}),
    ...(options.functionName !== undefined ? { functionName: options.functionName } : {}),
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
  let firstScan: DeadLetterRecord[] = [];
  let seen = 0;
  /** Messages sent to the DLQ after this (server time, ms) may be our own redrives failing again. */
  let cutoff: number | undefined;
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
    seen,
    warnings: [
      ...reasonWarnings(selection, firstScan),
      ...(options.dryRun === true ? scanWarnings(info, firstScan.length, 0) : []),
      ...ownRedrivePolicyWarnings(info, firstScan),
    ],
  });

  /**
   * On a FIFO queue: the groups of the run with a message that stays in the dead-letter queue
   * because the run does not take it (not selected, or it entered the queue during the run), by
   * what their later messages are told. A later message of such a group stays too, selected or
   * not: moved, it would overtake the earlier one, which a later redrive would then send behind it.
   */
  const heldGroups = new Map<string, string>();
  /** Selected messages that stay behind an earlier message of their group (see `heldGroups`), with why. */
  const heldBehind = new Map<DeadLetterRecord, string>();
  /** Receives what is visible now and keeps the messages to move, in the order received (a FIFO group's order). */
  const nextCandidates = async (first: boolean): Promise<DeadLetterRecord[]> => {
    if (remaining <= 0) return [];
    const records = await hold.scan({ ...options, maxMessages: remaining });
    remaining -= records.length;
    seen += records.length;
    if (first) firstScan = records;
    if (first && options.dlqCheck !== false) assertDeadLetterQueue(info, records);
    const candidates: DeadLetterRecord[] = [];
    for (const record of records) {
      const group = info.fifo ? record.messageGroupId : undefined;
      const earlier = group !== undefined ? heldGroups.get(group) : undefined;
      // A message that entered the DLQ after the first send (the consumer failed it again) waits
      // for the next run: without this, a live consumer and a redrive could pass it back and forth.
      if (!first && cutoff !== undefined && record.sentAt !== undefined && record.sentAt.getTime() > cutoff) {
        arrivedDuringRun += 1;
        if (group !== undefined && earlier === undefined)
          heldGroups.set(
            group,
            `an earlier message of group ${group} (${record.messageId}) entered the dead-letter queue during the run and stays`,
          );
      } else if (matchesSelection(record, selection, now)) {
        candidates.push(record);
        if (earlier !== undefined) heldBehind.set(record, earlier);
      } else if (group !== undefined && earlier === undefined) {
        heldGroups.set(group, `an earlier message of group ${group} (${record.messageId}) is not selected and stays`);
      }
    }
    return candidates;
  };

  try {
    let candidates = await nextCandidates(true);
    for (const record of candidates) {
      const target = await resolver.resolve(record);
      const late = outsideWindow(record);
      const stays = heldBehind.get(record) ?? ('skip' in target ? target.skip : allowOutsideWindow ? undefined : late);
      const label = targetLabel(target);
      selected.push({
        ...itemOf(record),
        ...(label !== undefined && stays === undefined
          ? { target: label, ...(late !== undefined ? { detail: late } : {}) }
          : { detail: stays }),
      });
    }
    if (options.dryRun === true || candidates.length === 0) return result();
    const targets = [...new Set(selected.flatMap((item) => (item.target !== undefined ? [item.target] : [])))];
    // With no target at all the loop below only reports the skipped messages: nothing to confirm.
    const go =
      targets.length === 0 ||
      (await confirmed(
        options,
        `Redrive ${candidates.length - heldBehind.size} message(s) from ${options.queueUrl} to ${targets.length === 1 ? targets[0] : `${targets.length} queues`}` +
          `${info.fifo ? ' (and the messages of their groups revealed behind them)' : ''}? Each is sent, then deleted from the dead-letter queue.`,
      ));
    if (!go) {
      cancelled = true;
      return result();
    }
    const limit = createRateLimiter(options.ratePerSecond);
    const blockedGroups = new Set<string>();
    let stop = false;
    cutoff = arrivalCutoff(clock, firstScan);
    while (candidates.length > 0 && !stop) {
      for (const record of candidates) {
        if (context.signal?.aborted === true) {
          interrupted = true;
          stop = true;
          break;
        }
        const item = itemOf(record);
        const group = info.fifo ? record.messageGroupId : undefined;
        const heldBy = heldBehind.get(record);
        if (heldBy !== undefined) {
          skipped.push({ ...item, detail: heldBy });
          continue;
        }
        if (group !== undefined && blockedGroups.has(group)) {
          skipped.push({ ...item, detail: `an earlier message of group ${group} was not moved` });
          continue;
        }
        let input: SendMessageCommandInput | undefined;
        let invocation: { functionName: string; event: KafkaEvent } | undefined;
        const late = outsideWindow(record);
        try {
          const target = await resolver.resolve(record);
          if ('skip' in target) throw new NotRedrivableError(target.skip);
          if (late !== undefined && !allowOutsideWindow) throw new NotRedrivableError(late);
          let body: string | undefined;
          if (record.offloaded !== undefined) {
            const read = await readOffloadedBody(context, record.offloaded);
            if ('error' in read) throw new NotRedrivableError(read.error);
            body = read.body;
          }
          if ('functionName' in target) {
            if (context.functions === undefined) throw new NotRedrivableError('the tool has no way to invoke the function here');
            invocation = { functionName: target.functionName, event: kafkaRedriveEvent(record, body !== undefined ? { body } : {}) };
          } else {
            const maxMessageSizeBytes = await resolver.maxMessageSizeOf(target.queueUrl);
            input = buildRedriveMessage(record, target.queueUrl, {
              ...(body !== undefined ? { body } : {}),
              ...(maxMessageSizeBytes !== undefined ? { maxMessageSizeBytes } : {}),
            });
          }
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
        const target = invocation !== undefined ? `lambda:${invocation.functionName}` : (input?.QueueUrl ?? '');
        await limit();
        try {
          if (invocation !== undefined) {
            // The function decides the record now; only a record it settled leaves the DLQ.
            const outcome = await redriveKafkaRecord(context.functions!, invocation.functionName, invocation.event);
            if (!outcome.acknowledged) {
              failed.push({ ...item, target, detail: outcome.detail });
              stop = true;
              break;
            }
          } else if (input !== undefined) {
            await sqs.send(new SendMessageCommand(input));
          }
        } catch (error) {
          failed.push({ ...item, target, detail: describe(error) });
          stop = true;
          break;
        }
        try {
          await sqs.send(new DeleteMessageCommand({ QueueUrl: options.queueUrl, ReceiptHandle: hold.receiptHandleOf(record.messageId) }));
          hold.forget(record.messageId);
          moved.push({ ...item, target, ...(late !== undefined ? { detail: late } : {}) });
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

/** Adds {@link RedriveResult.nothingMoved} when nothing that was asked for moved. */
function explainNothingMoved(result: RedriveResult, selection: MessageSelection): RedriveResult {
  if (result.cancelled || result.interrupted) return result;
  let why: string | undefined;
  if (result.method === 'move-task') {
    const task = result.moveTask;
    if (!result.dryRun && task?.status === 'COMPLETED' && (task.approximateNumberOfMessagesMoved ?? 0) === 0) {
      why = 'the message move task completed without moving a message: the dead-letter queue was empty';
    }
  } else {
    const movable = result.selected.filter((item) => item.target !== undefined).length;
    const done = result.dryRun ? movable : result.moved.length + result.notDeleted.length;
    if (done === 0) {
      if (result.seen === 0) why = 'the dead-letter queue has no visible message';
      else if (result.selected.length === 0) {
        why = selectsAll(selection)
          ? `none of the ${result.seen} message(s) seen can be redriven now (they entered the queue during the run)`
          : `no message matched the selection among the ${result.seen} seen` +
            (result.warnings.length > 0 ? ` (${result.warnings.filter((w) => w.startsWith('--reason')).join('; ')})` : '');
      } else if (result.failed.length > 0) why = 'the first send failed (see above); every message is still in the dead-letter queue';
      else why = `every one of the ${result.selected.length} selected message(s) has to stay in the dead-letter queue (see why above)`;
    }
  }
  return why !== undefined ? { ...result, nothingMoved: `nothing ${result.dryRun ? 'would move' : 'moved'}: ${why}` } : result;
}

/** The item of a record in a redrive's result: its ids, its reason, and a Kafka dead letter's coordinates. */
function itemOf(record: DeadLetterRecord): RedriveItem {
  const coordinates = kafkaCoordinatesOf(record);
  return { messageId: record.messageId, reason: reasonOf(record), ...(coordinates !== undefined ? { coordinates } : {}) };
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
