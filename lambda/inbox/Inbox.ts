import type { Decision, Order } from '../domain/order.js';

/** A processed message as the inbox records it. */
export interface InboxEntry {
  /** The idempotency key: the event's `eventId`. */
  readonly idempotencyKey: string;
  /** SHA-256 (hex) of the payload's canonical JSON. */
  readonly payloadHash: string;
  /** The source's id of the message that was applied (SQS `messageId`, Kafka `<topic>-<partition>@<offset>`). */
  readonly messageId: string;
  /** When it was applied (ISO 8601, UTC). */
  readonly processedAt: string;
}

/** What the store holds for one message before it is processed. */
export interface StoredState {
  /** The inbox row of this idempotency key, if it was processed before. */
  readonly inbox: InboxEntry | undefined;
  /** The order's current state, if it has one. */
  readonly order: Order | undefined;
}

/** One message's changes: its inbox row and the business update, committed together. */
export interface UnitOfWork {
  readonly entry: Omit<InboxEntry, 'processedAt'>;
  readonly decision: Decision;
}

/** How a commit ended. */
export type CommitResult =
  | { readonly status: 'committed' }
  /** The inbox already had this idempotency key: nothing was written. */
  | { readonly status: 'duplicate'; readonly existing: InboxEntry };

/**
 * The inbox port: the processor sees this interface; `DynamoDBInbox` is the adapter.
 *
 * `commit` writes the inbox row and the business changes atomically: either all of them or
 * none. Implementations must refuse to write an inbox row whose key exists (the conditional
 * write that makes processing idempotent) and report it as `duplicate` with the stored row.
 */
export interface Inbox {
  /**
   * Reads the inbox row of `idempotencyKey` and the state of `orderId` (strongly consistent).
   */
  read(idempotencyKey: string, orderId: string): Promise<StoredState>;
  /**
   * Reads ahead, in as few requests as it can, what `read` will ask for the messages of one
   * batch; each prefetched item serves the first `read` of its key only (a later read of the
   * same key, e.g. after a commit, goes to the store). Optional: an inbox without it reads one
   * message at a time.
   */
  prefetch?(keys: readonly { readonly idempotencyKey: string; readonly orderId: string }[]): Promise<void>;
  /** Drops whatever `prefetch` read and `read` has not used (call it at the end of a batch). */
  forget?(): void;
  /**
   * Commits one unit of work atomically.
   *
   * @throws TransactionConflict when the order changed since it was read (retryable)
   * @throws BusinessRuleViolation when a ledger entry the unit adds already exists
   */
  commit(unit: UnitOfWork): Promise<CommitResult>;
}
