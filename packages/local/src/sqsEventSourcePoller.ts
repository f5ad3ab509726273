/**
 * A local SQS event source mapping: polls a queue and invokes a Lambda handler with batches,
 * with the semantics of Lambda's SQS event source and `ReportBatchItemFailures` on.
 *
 * @module
 */
import { DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { defaultSettings } from 'idempotent-consumer/settings';
import type { ConsumerSettings } from 'idempotent-consumer/settings';
import { guardInvocations } from './aws/invocationGuard.js';
import type { AnySdkClient } from './aws/sdkMiddleware.js';
import { PollerIdleTimeoutError } from './errors.js';
import { judgeBatchResponse } from './judgeBatchResponse.js';
import type { BatchJudgement, InvocationOutcome } from './judgeBatchResponse.js';
import { invokeWithinTimeout } from './invokeWithinTimeout.js';
import { createLambdaContext, newLogStreamName } from './lambdaContext.js';
import { MessageGroupGuard } from './messageGroupGuard.js';
import { buildSqsEvent } from './sqsEvent.js';
import type { FilterPattern } from './matchesFilterPattern.js';
import { assertFilters, sqsRecordPasses } from './recordFilters.js';

export { judgeBatchResponse } from './judgeBatchResponse.js';
export type { BatchJudgement, InvocationOutcome } from './judgeBatchResponse.js';
export { MessageGroupGuard } from './messageGroupGuard.js';

/**
 * A Lambda handler for SQS events. Its result may be anything: the poller judges it as AWS
 * would (see `judgeBatchResponse`). Callback-style handlers are not supported.
 */
export type LocalSqsHandler = (event: SQSEvent, context: Context) => unknown;

/** Options of {@link SqsEventSourcePoller}. */
export interface SqsEventSourcePollerOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  /** ARN of the queue: `eventSourceARN` of the records; its region and account feed the defaults. */
  readonly queueArn: string;
  /**
   * Creates the handler of one execution environment. Called once per worker at start, and
   * again for a worker whose invocation timed out (Lambda replaces that environment).
   */
  readonly createHandler: () => LocalSqsHandler;
  /** Most records per invocation (received 10 at a time). @default defaultSettings.function.batchSize */
  readonly batchSize?: number;
  /**
   * How long to keep gathering a batch after the first message arrived, in seconds; 0 invokes
   * with what one receive returns. @default defaultSettings.function.maxBatchingWindowSeconds
   */
  readonly maxBatchingWindowSeconds?: number;
  /** Workers, i.e. concurrent invocations of the function. @default defaultSettings.function.maxConcurrency */
  readonly concurrency?: number;
  /**
   * How many workers share one execution environment (one handler from `createHandler`), as on
   * Lambda Managed Instances, where one Node.js process serves up to the function's
   * `PerExecutionEnvironmentMaxConcurrency` invocations at once
   * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances.html). `concurrency`
   * workers use `ceil(concurrency / concurrencyPerEnvironment)` environments. An invocation that
   * runs past the timeout replaces its environment for every worker that shares it.
   * @default 1 (an environment serves one invocation at a time, as on Lambda's default compute)
   */
  readonly concurrencyPerEnvironment?: number;
  /** Function timeout in seconds. @default defaultSettings.function.timeoutSeconds */
  readonly functionTimeoutSeconds?: number;
  /** Reported as the context's `memoryLimitInMB`. @default defaultSettings.function.memorySizeMb */
  readonly memorySizeMb?: number;
  /** FIFO semantics (one batch per message group in flight). @default the queue ARN ends in `.fifo` */
  readonly fifo?: boolean;
  /** `awsRegion` of the records and region of the function ARN. @default the queue ARN's region */
  readonly region?: string;
  /** @default 'local-consumer' */
  readonly functionName?: string;
  /** Long-poll wait of each ReceiveMessage, in seconds (0 to 20); `stop()` may wait this long. @default 1 */
  readonly waitTimeSeconds?: number;
  /** Called after each invocation, once its successes are deleted. */
  readonly onInvocation?: (report: InvocationReport) => void;
  /** Called with errors of the poller itself (receive, delete, a throwing `onInvocation`). @default console.error */
  readonly onError?: (error: unknown) => void;
  /**
   * The clients the handlers use (DynamoDB, SQS, …). Each gets the invocation guard
   * (`guardInvocations`): once an invocation has run past the function timeout, every call it
   * still makes on them is refused before it leaves the process, as Lambda stops the function.
   * Without them, a timed-out handler's later writes still land (the poller cannot stop them).
   * @default []
   */
  readonly guardedClients?: readonly AnySdkClient[];
  /**
   * The mapping's filter criteria (`FilterCriteria`, see `sqsRecordPasses`): a received message that
   * matches none of them is deleted without invoking the handler, as Lambda does
   * (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html). Checked at construction.
   * @default undefined: every message invokes the handler
   */
  readonly filters?: readonly FilterPattern[];
  /** Called with the messages a batch's filters dropped, once their deletes are done. */
  readonly onFilteredOut?: (report: FilteredOutReport) => void;
}

/** The messages of a received batch that the filter criteria dropped (deleted, never invoked). */
export interface FilteredOutReport {
  /** `messageId` of each message dropped, in receive order. */
  readonly messageIds: readonly string[];
  /** Ids whose delete SQS confirmed. */
  readonly deletedIds: readonly string[];
  /** Ids whose delete SQS refused, with its code (they come back after the visibility timeout and are filtered again). */
  readonly deleteFailures: ReadonlyArray<{ readonly messageId: string; readonly code: string }>;
}

/** What one invocation did, for progress output and tests. */
export interface InvocationReport {
  /** 1-based number of the worker (execution environment slot) that ran it. */
  readonly workerId: number;
  readonly awsRequestId: string;
  /** Records in the batch. */
  readonly batchSize: number;
  /** `messageId` of every record, in batch order. */
  readonly messageIds: readonly string[];
  /** FIFO: the message groups in the batch (empty for a standard queue). */
  readonly messageGroupIds: readonly string[];
  /** How the handler ended; `error` is set when it threw. */
  readonly outcome: InvocationOutcome['kind'];
  readonly error?: unknown;
  /** How the response was judged: kind, ids left on the queue, and why. */
  readonly judgement: BatchJudgement;
  /** Ids whose delete SQS confirmed. */
  readonly deletedIds: readonly string[];
  /** Ids whose delete SQS refused (e.g. a receipt handle that expired), with its code. */
  readonly deleteFailures: ReadonlyArray<{ readonly messageId: string; readonly code: string }>;
  /** Start of the handler call, epoch milliseconds. */
  readonly startedAt: number;
  /** Handler call time in milliseconds (up to the timeout when it timed out). */
  readonly durationMs: number;
}

/** Options of {@link SqsEventSourcePoller.runUntilIdle}. */
export interface RunUntilIdleOptions {
  /** The queue and the poller must stay idle this long, in milliseconds. @default 500 */
  readonly idleMs?: number;
  /** Give up after this long, in milliseconds. @default 30000 */
  readonly timeoutMs?: number;
}

/**
 * The batch settings of the event source mapping, from the one source of settings.
 *
 * @example
 * new SqsEventSourcePoller({ sqs, queueUrl, queueArn, createHandler, ...pollerOptionsFromSettings(settings) });
 */
export function pollerOptionsFromSettings(
  settings: ConsumerSettings,
): Required<
  Pick<
    SqsEventSourcePollerOptions,
    'batchSize' | 'maxBatchingWindowSeconds' | 'concurrency' | 'functionTimeoutSeconds' | 'memorySizeMb' | 'fifo' | 'functionName'
  >
> &
  Pick<SqsEventSourcePollerOptions, 'filters'> {
  return {
    ...(settings.function.filters === undefined ? {} : { filters: settings.function.filters }),
    batchSize: settings.function.batchSize,
    maxBatchingWindowSeconds: settings.function.maxBatchingWindowSeconds,
    concurrency: settings.function.maxConcurrency,
    functionTimeoutSeconds: settings.function.timeoutSeconds,
    memorySizeMb: settings.function.memorySizeMb,
    fifo: settings.queue.fifo,
    functionName: settings.consumerName,
  };
}

const receiveLimit = 10;
const receiveErrorBackoffMs = 500;

interface ExecutionEnvironment {
  handler: LocalSqsHandler;
  logStreamName: string;
}

/** Where the workers that share one execution environment find it (replaced when an invocation in it times out). */
interface EnvironmentSlot {
  environment: ExecutionEnvironment | undefined;
}

/**
 * Polls an SQS queue and invokes handlers with batches, as Lambda's SQS event source mapping
 * does with `ReportBatchItemFailures`:
 *
 * - `concurrency` workers; each is one execution environment with its own handler instance, or
 *   `concurrencyPerEnvironment` of them share one (Lambda Managed Instances).
 * - A worker receives up to `batchSize` messages (10 per ReceiveMessage, long polling
 *   `waitTimeSeconds`, all system and message attributes), gathering more for up to
 *   `maxBatchingWindowSeconds` after the first arrives, and invokes its handler with the SQS
 *   event and a Lambda context whose `getRemainingTimeInMillis()` counts down from
 *   `functionTimeoutSeconds`.
 * - The result is judged by `judgeBatchResponse`; only the succeeded messages are deleted
 *   (DeleteMessageBatch). Failed messages are left alone: they come back when their visibility
 *   timeout ends (or earlier if the handler changed it), and the queue's redrive policy moves
 *   them to the dead-letter queue after `maxReceiveCount` receives.
 * - FIFO: a {@link MessageGroupGuard} keeps at most one batch per message group in flight.
 * - With `filters` (the mapping's filter criteria), a received message that matches none of them is
 *   deleted and never reaches the handler; a batch left empty is not invoked.
 *
 * - Past the function timeout the invocation is stopped: its batch counts as failed (back after
 *   the visibility timeout), the worker gets a fresh handler from `createHandler`, and the
 *   handler's later calls on `guardedClients` are refused before they reach the stores.
 * - `start()` / `run(signal)` keep polling for new messages until stopped; `runUntilIdle()`
 *   resolves once the queue is drained.
 *
 * Differences from Lambda: a timed-out handler's code is not terminated (its promise is
 * abandoned; only its calls through the guarded clients are stopped); there is no 6 MB payload
 * limit, no scaling, and no backoff after function errors.
 *
 * @example
 * const poller = new SqsEventSourcePoller({
 *   sqs, queueUrl, queueArn, createHandler: () => handler, ...pollerOptionsFromSettings(settings),
 * });
 * await poller.runUntilIdle({ idleMs: 300, timeoutMs: 20_000 });
 * await poller.stop();
 */
export class SqsEventSourcePoller {
  private readonly options: SqsEventSourcePollerOptions;
  private readonly batchSize: number;
  private readonly batchingWindowMs: number;
  private readonly concurrency: number;
  private readonly concurrencyPerEnvironment: number;
  private readonly functionTimeoutSeconds: number;
  private readonly memorySizeMb: number;
  private readonly fifo: boolean;
  private readonly region: string;
  private readonly accountId: string;
  private readonly functionName: string;
  private readonly waitTimeSeconds: number;
  private readonly guard = new MessageGroupGuard();
  private running = false;
  private workers: Promise<void>[] = [];
  private busyBatches = 0;

  /** @throws {RangeError} when an option is out of Lambda's range or the queue ARN is malformed */
  constructor(options: SqsEventSourcePollerOptions) {
    this.options = options;
    for (const client of options.guardedClients ?? []) guardInvocations(client);
    const arn = /^arn:[^:]+:sqs:([^:]+):([^:]+):(.+)$/.exec(options.queueArn);
    if (!arn) throw new RangeError(`queueArn "${options.queueArn}" is not an SQS queue ARN`);
    const [, arnRegion = '', arnAccount = '', queueName = ''] = arn;
    const fn = defaultSettings.function;
    this.batchSize = options.batchSize ?? fn.batchSize;
    this.batchingWindowMs = (options.maxBatchingWindowSeconds ?? fn.maxBatchingWindowSeconds) * 1_000;
    this.concurrency = options.concurrency ?? fn.maxConcurrency;
    this.concurrencyPerEnvironment = options.concurrencyPerEnvironment ?? 1;
    this.functionTimeoutSeconds = options.functionTimeoutSeconds ?? fn.timeoutSeconds;
    this.memorySizeMb = options.memorySizeMb ?? fn.memorySizeMb;
    this.fifo = options.fifo ?? queueName.endsWith('.fifo');
    this.region = options.region ?? arnRegion;
    this.accountId = arnAccount;
    this.functionName = options.functionName ?? 'local-consumer';
    this.waitTimeSeconds = options.waitTimeSeconds ?? 1;

    const check = (ok: boolean, message: string): void => {
      if (!ok) throw new RangeError(message);
    };
    const maxBatchSize = this.fifo ? 10 : 10_000;
    const isIntegerIn = (value: number, min: number, max: number): boolean => Number.isInteger(value) && value >= min && value <= max;
    check(isIntegerIn(this.batchSize, 1, maxBatchSize), `batchSize ${this.batchSize} is outside 1..${maxBatchSize}`);
    check(this.batchingWindowMs >= 0 && this.batchingWindowMs <= 300_000, 'maxBatchingWindowSeconds must be 0..300');
    check(isIntegerIn(this.concurrency, 1, Number.MAX_SAFE_INTEGER), `concurrency ${this.concurrency} must be a positive integer`);
    check(
      isIntegerIn(this.concurrencyPerEnvironment, 1, Number.MAX_SAFE_INTEGER),
      `concurrencyPerEnvironment ${this.concurrencyPerEnvironment} must be a positive integer`,
    );
    check(this.functionTimeoutSeconds > 0 && this.functionTimeoutSeconds <= 900, 'functionTimeoutSeconds must be in (0, 900]');
    check(isIntegerIn(this.waitTimeSeconds, 0, 20), 'waitTimeSeconds must be an integer 0..20');
    assertFilters(options.filters);
  }

  /** Whether the workers are polling. */
  get isRunning(): boolean {
    return this.running;
  }

  /** Starts the workers; does nothing when they already run. */
  start(): void {
    if (this.running) return;
    this.running = true;
    const slots: EnvironmentSlot[] = Array.from({ length: Math.ceil(this.concurrency / this.concurrencyPerEnvironment) }, () => ({
      environment: undefined,
    }));
    this.workers = Array.from({ length: this.concurrency }, (_, index) =>
      this.runWorker(index + 1, slots[Math.floor(index / this.concurrencyPerEnvironment)]!),
    );
  }

  /**
   * Polls until `signal` aborts (e.g. Ctrl-C with `--keep-running`), then stops as {@link stop}
   * does. Messages sent to the queue meanwhile are consumed as they arrive.
   *
   * @returns once the poller has stopped
   */
  async run(signal: AbortSignal): Promise<void> {
    this.start();
    if (!signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    }
    await this.stop();
  }

  /**
   * Stops polling and waits for the running invocations (and the deletes after them) to end.
   * A long poll in progress ends within `waitTimeSeconds`; messages it returns are still
   * processed. Idempotent.
   */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
    this.workers = [];
  }

  /**
   * Starts the poller if needed and resolves once the queue has no visible, in-flight or delayed
   * message (GetQueueAttributes `ApproximateNumberOfMessages`, `...NotVisible`, `...Delayed`) and
   * no batch is being processed, continuously for `idleMs`. The poller keeps running.
   *
   * Failed messages count as in flight until they come back and are processed again, so the
   * queue's visibility timeout bounds how long this takes when handlers fail.
   *
   * @throws {PollerIdleTimeoutError} when not idle within `timeoutMs`; the message gives the counts
   */
  async runUntilIdle(options: RunUntilIdleOptions = {}): Promise<void> {
    const idleMs = options.idleMs ?? 500;
    const timeoutMs = options.timeoutMs ?? 30_000;
    this.start();
    const deadline = Date.now() + timeoutMs;
    let idleSince: number | undefined;
    for (;;) {
      const counts = await this.queueCounts();
      const now = Date.now();
      if (counts.visible + counts.inFlight + counts.delayed === 0 && this.busyBatches === 0) {
        idleSince ??= now;
        if (now - idleSince >= idleMs) return;
      } else {
        idleSince = undefined;
      }
      if (now >= deadline) {
        throw new PollerIdleTimeoutError(
          `The queue ${this.options.queueUrl} was not idle for ${idleMs} ms within ${timeoutMs} ms: ` +
            `${counts.visible} visible, ${counts.inFlight} in flight and ${counts.delayed} delayed messages, ` +
            `${this.busyBatches} batches being processed.`,
        );
      }
      await sleep(50);
    }
  }

  private async queueCounts(): Promise<{ visible: number; inFlight: number; delayed: number }> {
    const { Attributes = {} } = await this.options.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.options.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
      }),
    );
    return {
      visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }

  private newEnvironment(): ExecutionEnvironment {
    return { handler: this.options.createHandler(), logStreamName: newLogStreamName() };
  }

  /** One worker: never rejects (errors go to `onError`); ends when stopped or when `createHandler` throws. */
  private async runWorker(workerId: number, slot: EnvironmentSlot): Promise<void> {
    while (this.running) {
      if (slot.environment === undefined) {
        try {
          slot.environment = this.newEnvironment();
        } catch (error) {
          this.reportError(new Error(`createHandler() threw: worker ${workerId} stops`, { cause: error }));
          return;
        }
      }
      let messages: Message[];
      try {
        messages = await this.receiveBatch();
      } catch (error) {
        this.reportError(error);
        if (this.running) await sleep(receiveErrorBackoffMs);
        continue;
      }
      if (messages.length === 0) continue;

      this.busyBatches += 1;
      const groups = this.fifo ? unique(messages.map((message) => message.Attributes?.MessageGroupId ?? '')) : [];
      try {
        await this.guard.acquire(groups);
        try {
          // Another worker of the slot may have dropped a timed-out environment while this one received.
          const environment = slot.environment ?? this.newEnvironment();
          slot.environment = environment;
          const outcome = await this.invoke(workerId, environment, messages, groups);
          // Lambda replaces a timed-out environment (once, when workers share it).
          if (outcome === 'timed-out' && slot.environment === environment) slot.environment = undefined;
        } finally {
          this.guard.release(groups);
        }
      } catch (error) {
        this.reportError(error);
      } finally {
        this.busyBatches -= 1;
      }
    }
  }

  /** Receives up to `batchSize` messages; with a batching window, keeps gathering after the first. */
  private async receiveBatch(): Promise<Message[]> {
    const messages = await this.receive(Math.min(receiveLimit, this.batchSize), this.waitTimeSeconds);
    if (messages.length === 0 || this.batchingWindowMs === 0) return messages;
    const deadline = Date.now() + this.batchingWindowMs;
    while (this.running && messages.length < this.batchSize) {
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) break;
      const waitSeconds = Math.min(this.waitTimeSeconds, Math.floor(remainingMs / 1_000));
      try {
        const more = await this.receive(Math.min(receiveLimit, this.batchSize - messages.length), waitSeconds);
        messages.push(...more);
        if (more.length === 0 && waitSeconds === 0) await sleep(Math.min(remainingMs, 100));
      } catch (error) {
        this.reportError(error); // keep what was received: it is in flight and must be processed
        break;
      }
    }
    return messages;
  }

  private async receive(maxNumberOfMessages: number, waitTimeSeconds: number): Promise<Message[]> {
    const { Messages = [] } = await this.options.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.options.queueUrl,
        MaxNumberOfMessages: maxNumberOfMessages,
        WaitTimeSeconds: waitTimeSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    return Messages;
  }

  private async invoke(
    workerId: number,
    environment: ExecutionEnvironment,
    messages: Message[],
    messageGroupIds: string[],
  ): Promise<InvocationOutcome['kind']> {
    const received = buildSqsEvent(messages, { eventSourceArn: this.options.queueArn, awsRegion: this.region });
    const event = await this.dropFilteredOut(received);
    if (event.Records.length === 0) return 'returned'; // every message was filtered out: no invocation
    const messageIds = event.Records.map((record) => record.messageId);
    const context = createLambdaContext({
      functionName: this.functionName,
      region: this.region,
      accountId: this.accountId,
      timeoutSeconds: this.functionTimeoutSeconds,
      memorySizeMb: this.memorySizeMb,
      logStreamName: environment.logStreamName,
    });

    const startedAt = Date.now();
    const outcome = await invokeWithinTimeout(environment.handler, event, context, this.functionTimeoutSeconds);
    const durationMs = Date.now() - startedAt;
    const judgement = judgeBatchResponse(outcome, messageIds);

    const failed = new Set(judgement.failedIds);
    const succeeded = event.Records.filter((record) => !failed.has(record.messageId));
    const { deletedIds, deleteFailures } = await this.deleteMessages(succeeded);

    if (this.options.onInvocation) {
      try {
        this.options.onInvocation({
          workerId,
          awsRequestId: context.awsRequestId,
          batchSize: messageIds.length,
          messageIds,
          messageGroupIds,
          outcome: outcome.kind,
          ...(outcome.kind === 'threw' ? { error: outcome.error } : {}),
          judgement,
          deletedIds,
          deleteFailures,
          startedAt,
          durationMs,
        });
      } catch (error) {
        this.reportError(error);
      }
    }
    return outcome.kind;
  }

  /**
   * The event without the records the filter criteria drop, which are deleted first (Lambda deletes a
   * filtered-out message, https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html).
   */
  private async dropFilteredOut(event: SQSEvent): Promise<SQSEvent> {
    const filters = this.options.filters;
    if (filters === undefined || filters.length === 0) return event;
    const kept = event.Records.filter((record) => sqsRecordPasses(filters, record));
    if (kept.length === event.Records.length) return event;
    const dropped = event.Records.filter((record) => !kept.includes(record));
    const { deletedIds, deleteFailures } = await this.deleteMessages(dropped);
    try {
      this.options.onFilteredOut?.({ messageIds: dropped.map((record) => record.messageId), deletedIds, deleteFailures });
    } catch (error) {
      this.reportError(error);
    }
    return { Records: kept };
  }

  private async deleteMessages(
    records: ReadonlyArray<{ messageId: string; receiptHandle: string }>,
  ): Promise<{ deletedIds: string[]; deleteFailures: Array<{ messageId: string; code: string }> }> {
    const deletedIds: string[] = [];
    const deleteFailures: Array<{ messageId: string; code: string }> = [];
    for (let start = 0; start < records.length; start += receiveLimit) {
      const chunk = records.slice(start, start + receiveLimit);
      try {
        const { Successful = [], Failed = [] } = await this.options.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.options.queueUrl,
            Entries: chunk.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
          }),
        );
        const messageIdOf = (entryId: string | undefined): string => chunk[Number(entryId)]?.messageId ?? '';
        for (const entry of Successful) deletedIds.push(messageIdOf(entry.Id));
        for (const entry of Failed) deleteFailures.push({ messageId: messageIdOf(entry.Id), code: entry.Code ?? 'Unknown' });
      } catch (error) {
        this.reportError(error);
        for (const record of chunk) deleteFailures.push({ messageId: record.messageId, code: errorName(error) });
      }
    }
    return { deletedIds, deleteFailures };
  }

  private reportError(error: unknown): void {
    const onError = this.options.onError ?? ((failure: unknown) => console.error('[SqsEventSourcePoller]', failure));
    try {
      onError(error);
    } catch {
      // an error reporter that throws must not stop the worker
    }
  }
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'Error';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
