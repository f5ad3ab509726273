import type { EventBridgeClient, PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import {
  MESSAGE_ID_ATTRIBUTE,
  OutboxMessageError,
  type OutboxDestination,
  type OutboxMessage,
  type PublishReceipt,
} from './OutboxDestination.js';
import { lazyClient } from './lazyClient.js';
import { traceHeaderOrUndefined } from '../observability/traceHeader.js';

/**
 * The most bytes one `PutEvents` entry may have, as EventBridge counts them
 * ({@link putEventsEntrySize}): 256 KiB
 * (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html).
 */
export const MAX_PUT_EVENTS_ENTRY_BYTES = 262_144;

/** The detail key that carries the decision's own message attributes, when it has any. */
export const ATTRIBUTES_DETAIL_KEY = 'outboxAttributes';

/** The `DetailType` of a message that has neither a `type` attribute nor a string `type` field in its body. */
export const DEFAULT_DETAIL_TYPE = 'OutboxMessage';

/**
 * The per-entry error codes of `PutEvents` that AWS documents as retryable
 * (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEventsResultEntry.html);
 * every other code (`AccessDeniedException`, `InvalidArgument`, `MalformedDetail`,
 * `NotAuthorizedForSourceException`, a missing bus…) fails the publish at once.
 */
export const RETRYABLE_PUT_EVENTS_ERROR_CODES: ReadonlySet<string> = new Set(['InternalFailure', 'ThrottlingException']);

/** Options of {@link eventBridgeDestination}. */
export interface EventBridgeDestinationOptions {
  /**
   * The event bus: its name, or its ARN (`arn:aws:events:<region>:<account>:event-bus/<name>`, needed
   * for a bus of another account). `PutEvents` takes either as `EventBusName`.
   */
  readonly eventBusName: string;
  /**
   * The event's `Source` (1 to 256 characters, not starting with `aws.`, which AWS reserves).
   * @default the consumer's name (`message.consumer`)
   */
  readonly source?: string;
  /**
   * The event's `DetailType` (1 to 128 characters): what the rules of the bus match on.
   * @default the message's `type` attribute, else the body's top-level string field `type`, else `'OutboxMessage'`
   */
  readonly detailType?: (message: OutboxMessage) => string;
  /**
   * The EventBridge client, or a function that gives it (called once, at the first publish).
   * @default a new `EventBridgeClient({})` (region and credentials from the environment), created at the first publish
   */
  readonly client?: EventBridgeClient | (() => EventBridgeClient | Promise<EventBridgeClient>);
  /**
   * Attempts of one publish whose entry EventBridge failed with a retryable error code
   * ({@link RETRYABLE_PUT_EVENTS_ERROR_CODES}), in this call, before it throws (and the relay's
   * stream retries the record). A request that fails as a whole (throttled, 5xx) is retried by the
   * SDK's own retry strategy first.
   * @default 3
   */
  readonly maxAttempts?: number;
  /**
   * Base of the delay before a retry of a failed entry, in **milliseconds**: the n-th retry waits
   * a random time up to `retryBaseDelayMs × 2^(n-1)` (exponential backoff with full jitter).
   * @default 100
   */
  readonly retryBaseDelayMs?: number;
}

/**
 * EventBridge failed the entry of an outbox message (`FailedEntryCount` 1, the entry's
 * `ErrorCode`): after the retries of a retryable code, or at once for any other.
 */
export class PutEventsEntryError extends Error {
  constructor(
    /** The outbox message id of the entry. */
    public readonly messageId: string,
    /** The entry's `ErrorCode` (`'Unknown'` when EventBridge gave none). */
    public readonly errorCode: string,
    /** The entry's `ErrorMessage`, when it has one. */
    public readonly errorMessage: string | undefined,
    /** The `PutEvents` calls made for it in this publish. */
    public readonly attempts: number,
  ) {
    super(
      `EventBridge failed outbox message ${messageId} with ${errorCode}${errorMessage === undefined ? '' : `: ${errorMessage}`} (after ${attempts} attempt${attempts === 1 ? '' : 's'})`,
    );
    this.name = 'PutEventsEntryError';
  }

  /** Whether AWS documents the code as retryable (the stream's retry may then succeed). */
  get retryable(): boolean {
    return RETRYABLE_PUT_EVENTS_ERROR_CODES.has(this.errorCode);
  }
}

/**
 * The size of a `PutEvents` entry as EventBridge computes it
 * (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html): 14 bytes for
 * `Time` when set, plus the UTF-8 bytes of `Source`, `DetailType`, `Detail` and each of `Resources`
 * (`EventBusName` and `TraceHeader` do not count).
 *
 * @returns the size in bytes
 */
export function putEventsEntrySize(entry: Pick<PutEventsRequestEntry, 'Time' | 'Source' | 'DetailType' | 'Detail' | 'Resources'>): number {
  const bytes = (text: string | undefined) => (text === undefined ? 0 : Buffer.byteLength(text, 'utf8'));
  let size = entry.Time === undefined ? 0 : 14;
  size += bytes(entry.Source) + bytes(entry.DetailType) + bytes(entry.Detail);
  for (const resource of entry.Resources ?? []) size += bytes(resource);
  return size;
}

/**
 * The event's `Detail` for an outbox message: its body, which must be the JSON text of an object
 * (EventBridge takes nothing else as `Detail`), with the stable message id added as its first field
 * `outboxMessageId` ({@link MESSAGE_ID_ATTRIBUTE}), and the decision's own attributes, when it has
 * any, as `outboxAttributes`. The body's own text is kept byte for byte after them (nothing is
 * parsed and printed again, so large integers and key order survive).
 *
 * EventBridge assigns the event's envelope `id` itself and takes none from the caller: a receiver
 * deduplicates on `detail.outboxMessageId`, which every retry and redrive of the message repeats.
 *
 * @throws OutboxMessageError when the body is not a JSON object, or has a top-level field
 *   `outboxMessageId` or `outboxAttributes` of its own
 */
export function eventBridgeDetail(message: OutboxMessage): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.body);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new OutboxMessageError(
      `outbox message ${message.messageId}: EventBridge takes a JSON object as an event's Detail, and the body is not one`,
    );
  }
  for (const reserved of [MESSAGE_ID_ATTRIBUTE, ATTRIBUTES_DETAIL_KEY]) {
    if (Object.hasOwn(parsed, reserved)) {
      throw new OutboxMessageError(`outbox message ${message.messageId} sets the reserved detail field ${reserved}`);
    }
  }
  const added = [`${JSON.stringify(MESSAGE_ID_ATTRIBUTE)}:${JSON.stringify(message.messageId)}`];
  if (Object.keys(message.attributes).length > 0)
    added.push(`${JSON.stringify(ATTRIBUTES_DETAIL_KEY)}:${JSON.stringify(message.attributes)}`);
  const text = message.body.trim();
  const rest = text.slice(1); // after the object's opening brace
  return Object.keys(parsed).length === 0 ? `{${added.join(',')}}` : `{${added.join(',')},${rest}`;
}

/** The default `DetailType`: the `type` attribute, else the body's string `type`, else {@link DEFAULT_DETAIL_TYPE}. */
function defaultDetailType(message: OutboxMessage): string {
  const attribute = message.attributes.type;
  if (attribute !== undefined && attribute !== '') return attribute;
  try {
    const type = (JSON.parse(message.body) as { type?: unknown } | null)?.type;
    if (typeof type === 'string' && type !== '') return type;
  } catch {
    // not JSON: eventBridgeDetail refuses it
  }
  return DEFAULT_DETAIL_TYPE;
}

/**
 * The `PutEvents` entry of an outbox message for `eventBusName`.
 *
 * @throws OutboxMessageError when the message cannot be an EventBridge event: a body that is not a
 *   JSON object or sets a reserved field, a `Source` or `DetailType` out of its limits, or an entry
 *   larger than {@link MAX_PUT_EVENTS_ENTRY_BYTES}
 */
export function eventBridgeEntry(
  message: OutboxMessage,
  options: Pick<EventBridgeDestinationOptions, 'eventBusName' | 'source' | 'detailType'>,
): PutEventsRequestEntry {
  const source = options.source ?? message.consumer;
  const detailType = (options.detailType ?? defaultDetailType)(message);
  if (source.length < 1 || source.length > 256 || source.startsWith('aws.')) {
    throw new OutboxMessageError(
      `outbox message ${message.messageId}: Source ${JSON.stringify(source)} must be 1 to 256 characters, not starting with "aws."`,
    );
  }
  if (detailType.length < 1 || detailType.length > 128) {
    throw new OutboxMessageError(
      `outbox message ${message.messageId}: DetailType ${JSON.stringify(detailType.slice(0, 40))}… must be 1 to 128 characters`,
    );
  }
  const time = new Date(message.createdAt);
  const traceHeader = traceHeaderOrUndefined(message.traceHeader);
  const entry: PutEventsRequestEntry = {
    EventBusName: options.eventBusName,
    Source: source,
    DetailType: detailType,
    Detail: eventBridgeDetail(message),
    ...(Number.isNaN(time.getTime()) ? {} : { Time: time }),
    ...(traceHeader === undefined ? {} : { TraceHeader: traceHeader }),
  };
  const size = putEventsEntrySize(entry);
  if (size > MAX_PUT_EVENTS_ENTRY_BYTES) {
    throw new OutboxMessageError(
      `outbox message ${message.messageId} makes an EventBridge entry of ${size} bytes; PutEvents takes at most ${MAX_PUT_EVENTS_ENTRY_BYTES} (256 KiB): keep the body smaller, or put it in S3 and publish a pointer`,
    );
  }
  return entry;
}

/**
 * An EventBridge event bus as the outbox relay's destination: one `PutEvents` call with one entry per
 * message ({@link eventBridgeEntry}):
 *
 * - `Source` the consumer's name (or `source`), `DetailType` the message's type (see `detailType`),
 *   `Time` the item's commit time, `TraceHeader` the X-Ray trace header of the message that emitted
 *   it (when well formed), and `Detail` the body with `outboxMessageId` (and `outboxAttributes`) added
 *   ({@link eventBridgeDetail}). EventBridge has no deduplication id and assigns the event's `id`
 *   itself: receivers deduplicate on `detail.outboxMessageId`, stable across every retry and redrive.
 * - **Partial failures.** `PutEvents` answers 200 even when it failed an entry: it says so in
 *   `FailedEntryCount` and the entry's `ErrorCode`. A retryable code (`InternalFailure`,
 *   `ThrottlingException`) is sent again, up to `maxAttempts` in this call with backoff; any other
 *   code, or the last attempt, throws {@link PutEventsEntryError}, so the relay reports the record
 *   and the stream retries it. The receipt's `destinationMessageId` is the event id EventBridge gave.
 * - **Size.** An entry above 256 KiB, counted as EventBridge counts it ({@link putEventsEntrySize}),
 *   is refused before any call ({@link OutboxMessageError}).
 *
 * One entry per call, not up to 10: the relay guards and marks each message on its own (Powertools
 * idempotency), so there is never a batch to send; EventBridge bills each entry (by 64 KB chunk),
 * not each call, so batching would save round trips, not money.
 *
 * `@aws-sdk/client-eventbridge` (an optional peer) is loaded at the first publish. Rules:
 * https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html and
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html
 *
 * @throws Error at once when `eventBusName` is empty, `maxAttempts` is not a whole number ≥ 1 or
 *   `retryBaseDelayMs` is negative
 * @example
 * export const handler = createOutboxRelay({
 *   destinations: { default: eventBridgeDestination({ eventBusName: process.env.EVENT_BUS_NAME!, source: 'com.example.orders' }) },
 * });
 */
export function eventBridgeDestination(options: EventBridgeDestinationOptions): OutboxDestination {
  const { eventBusName } = options;
  const maxAttempts = options.maxAttempts ?? 3;
  const baseDelayMs = options.retryBaseDelayMs ?? 100;
  if (eventBusName.trim() === '') throw new Error('eventBridgeDestination: eventBusName is empty');
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1)
    throw new Error(`eventBridgeDestination: maxAttempts ${maxAttempts} must be a whole number ≥ 1`);
  if (!(baseDelayMs >= 0)) throw new Error(`eventBridgeDestination: retryBaseDelayMs ${baseDelayMs} must be ≥ 0 milliseconds`);
  const load = lazyClient(options.client, async () => new (await import('@aws-sdk/client-eventbridge')).EventBridgeClient({}));
  return {
    target: eventBusName,
    async publish(message: OutboxMessage): Promise<PublishReceipt> {
      const entry = eventBridgeEntry(message, options);
      const [{ PutEventsCommand }, client] = await Promise.all([import('@aws-sdk/client-eventbridge'), load()]);
      for (let attempt = 1; ; attempt += 1) {
        const output = await client.send(new PutEventsCommand({ Entries: [entry] }));
        const result = output.Entries?.[0];
        if ((output.FailedEntryCount ?? 0) === 0 && result?.ErrorCode === undefined && result?.EventId !== undefined) {
          return { destinationMessageId: result.EventId };
        }
        const errorCode = result?.ErrorCode ?? 'Unknown';
        if (!RETRYABLE_PUT_EVENTS_ERROR_CODES.has(errorCode) || attempt >= maxAttempts) {
          throw new PutEventsEntryError(message.messageId, errorCode, result?.ErrorMessage, attempt);
        }
        await new Promise((resolve) => setTimeout(resolve, Math.random() * baseDelayMs * 2 ** (attempt - 1)));
      }
    },
  };
}
