import { parseOrderEvent, type OrderEvent, type ParsedMessage } from '../domain/events.js';
import { decide } from '../domain/order.js';
import { IdempotencyConflict } from '../errors.js';
import type { Inbox, InboxEntry } from '../inbox/Inbox.js';
import type { Notifier } from '../sideEffects/Notifier.js';

/** A message as any event source delivers it to the processor. */
export interface InboundMessage {
  /** The body, as received (SQS `body`, a decoded Kafka `value`). */
  readonly body: string;
  /** The source's id of the message (SQS `messageId`, Kafka `<topic>-<partition>@<offset>`). */
  readonly messageId: string;
}

/** A message that was processed without error. */
export interface ProcessResult {
  /** `applied`: its effects were committed now; `duplicate`: the inbox already had it (nothing written). */
  readonly outcome: 'applied' | 'duplicate';
  readonly event: OrderEvent;
}

/** What the processor needs. */
export interface OrderEventProcessorDeps {
  readonly inbox: Inbox;
  /** The guarded notifier (see `createGuardedNotifier`). */
  readonly notifier: Notifier;
}

/**
 * Applies one order event exactly once. The same for every event source.
 *
 * 1. Parse and validate the body.
 * 2. Read the inbox row of its `eventId` and the order's state. A row with the same payload
 *    hash is a duplicate: acknowledged with no write at all. A different hash is an
 *    `IdempotencyConflict`.
 * 3. Decide with the order state machine.
 * 4. Perform the guarded side effect (the payment notification), *before* the commit: a crash
 *    after it is replayed from the idempotency record, not sent again; a crash before it
 *    leaves nothing to undo.
 * 5. Commit the inbox row and the business changes in one transaction. If the inbox row
 *    appeared meanwhile (a concurrent delivery of the same message, case C9), the commit
 *    writes nothing and the message is a duplicate.
 *
 * @throws ValidationError, MissingIdempotencyKey, UnknownMessageType (from parsing)
 * @throws IdempotencyConflict when the key was processed with a different payload
 * @throws PredecessorNotApplied, BusinessRuleViolation (from the state machine)
 * @throws TransactionConflict when the order changed between read and commit
 * @throws whatever the store or the notifier throw (AWS SDK errors; Powertools'
 *   `IdempotencyAlreadyInProgressError` when another invocation holds the side-effect lock)
 */
export class OrderEventProcessor {
  constructor(private readonly deps: OrderEventProcessorDeps) {}

  async process(message: InboundMessage): Promise<ProcessResult> {
    const parsed = parseOrderEvent(message.body);
    const { event } = parsed;
    const stored = await this.deps.inbox.read(event.eventId, event.orderId);
    if (stored.inbox !== undefined) return duplicateOf(stored.inbox, parsed);

    const decision = decide(stored.order, event);
    if (decision.notification !== undefined) {
      await this.deps.notifier.paymentReceived(decision.notification);
    }
    const result = await this.deps.inbox.commit({
      entry: { idempotencyKey: event.eventId, payloadHash: parsed.payloadHash, messageId: message.messageId },
      decision,
    });
    if (result.status === 'duplicate') return duplicateOf(result.existing, parsed);
    return { outcome: 'applied', event };
  }
}

function duplicateOf(existing: InboxEntry, parsed: ParsedMessage): ProcessResult {
  if (existing.payloadHash !== parsed.payloadHash) {
    throw new IdempotencyConflict(parsed.event.eventId, existing.payloadHash, parsed.payloadHash);
  }
  return { outcome: 'duplicate', event: parsed.event };
}
