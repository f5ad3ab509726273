/**
 * What one dead letter would do if it were redriven now, decided as the engine decides it and
 * with nothing written: the body parsed by the consumer's own parser, its inbox row and the items
 * its `read` names taken in one consistent snapshot (`TransactGetItems`, as the engine reads before
 * a verdict that dead-letters), its inbox row judged as the engine judges it, then `decide` run on
 * that state and its decision checked as the engine checks it before a commit. Side effects are
 * named, never run.
 *
 * @module
 */
import { ConsumerDefinitionError, IdempotencyConflict } from 'idempotent-consumer';
import {
  type Classification,
  classify,
  cloneValue,
  type Delivery,
  foldDecision,
  inboxId,
  InboxStatus,
  newVersion,
  parseDelivery,
  readSnapshot,
  type ResolvedKey,
  resolveKey,
  toInboxRow,
  homeView,
  markKey,
  markRow,
  marksOf,
  type Unit,
  writeKind,
} from 'idempotent-consumer/internal';
import { tableKeys } from 'idempotent-consumer/settings';
import type { Decision, Item, State } from 'idempotent-consumer';
import type { DryRunConsumer } from './dryRunConsumer.js';
import { formatDuration } from './duration.js';
import { DlqToolError } from './errors.js';

/** What a dead letter would do if redriven now. */
export const DryRunOutcome = {
  /** It would be decided and commit: its writes, outgoing messages and side effects are listed. */
  WouldApply: 'would-apply',
  /** It would fail again: not parsed, its decision throws, or the engine would refuse its decision. */
  WouldFail: 'would-fail',
  /** The inbox holds its key: it would be acknowledged and change nothing. */
  Duplicate: 'duplicate',
  /**
   * The inbox no longer holds its key and it failed longer ago than the inbox window: nothing can
   * tell whether it was applied before, so it would be decided (and applied) as a new message.
   */
  OutsideWindow: 'outside-window',
} as const;
export type DryRunOutcome = (typeof DryRunOutcome)[keyof typeof DryRunOutcome];

/** One write of a decision: its kind, its table (logical and physical) and the item's key. */
export interface PlannedWrite {
  readonly kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck';
  readonly table: string;
  readonly tableName: string;
  /** The item's key, values as JSON (numbers as numbers or their text, binary as base64). */
  readonly key: Readonly<Record<string, unknown>>;
}

/** What a decision would commit and run. */
export interface PlannedDecision {
  readonly writes: readonly PlannedWrite[];
  /** Outgoing messages: the outbox destination of each (`default` when the decision names none). */
  readonly outbox: readonly { readonly destination: string; readonly messageGroupId?: string }[];
  /** The inline side effects it asks for, by name (not run). */
  readonly sideEffects: readonly string[];
}

/** A failure as the engine's classifier names it. */
export interface DryRunFailure {
  /** The failure reason a dead letter would carry (`ValidationError`, `BusinessRuleViolation`, a user's own…); the error type for a retryable failure. */
  readonly reason: string;
  readonly errorType: string;
  readonly errorMessage: string;
  /** `true`: it would be retried until its attempts run out, then dead-lettered again as `RetriesExhausted`. */
  readonly retryable: boolean;
}

/** The verdict on one dead letter. */
export interface DryRunVerdict {
  readonly outcome: DryRunOutcome;
  /** What the messages of one group share: the failure reason, or why it is a duplicate. */
  readonly reason: string;
  /** The operator's sentence. */
  readonly detail: string;
  /** The idempotency key, once the body was parsed. */
  readonly idempotencyKey?: string;
  /** `would-apply`, `outside-window` (when its decision succeeds): what it would write and send. */
  readonly decision?: PlannedDecision;
  /** `would-fail`, `outside-window` (when its decision fails): the failure. */
  readonly failure?: DryRunFailure;
  /** `duplicate`: when the key was applied (or dead-lettered), and when its inbox row expires (ISO 8601). */
  readonly appliedAt?: string;
  readonly expiresAt?: string;
}

/** One dead letter as the dry run needs it. */
export interface DryRunMessage {
  /** Its id in the dead-letter queue (or the archive). */
  readonly messageId: string;
  /** The original body (read back from S3 when the consumer offloaded it); `undefined` when it cannot be redriven. */
  readonly body: string | undefined;
  /** Why it cannot be redriven at all (an unreadable offloaded body, bytes SQS cannot hold). */
  readonly notRedrivable?: string;
  /** The consumer's original message id: a redrive marks the message with it (`ic.redrive`), which applies a key dead-lettered by it. */
  readonly redriveOf: string | undefined;
  /**
   * How old it is: its earliest time (Kafka record timestamp, `failedAt`, `SentTimestamp`), as the
   * redrive's window check measures it (see `messageAge`); `undefined` when it carries none.
   */
  readonly since: { readonly at: Date; readonly what: string } | undefined;
}

/** The failure reason named for a message a redrive cannot send back (it stays in the dead-letter queue). */
export const NOT_REDRIVABLE = 'NotRedrivable';

/**
 * Decides what `message` would do if redriven now (see the module's description). Writes nothing.
 *
 * @param now - the time ages are measured at (the SQS server's)
 * @throws DlqToolError when the consumer's tables cannot be read (missing, no access): no verdict can be given
 */
export async function decideDeadLetter(message: DryRunMessage, consumer: DryRunConsumer, now: Date): Promise<DryRunVerdict> {
  const { definition, tables } = consumer;
  if (message.body === undefined) {
    const why = message.notRedrivable ?? 'its body cannot be read';
    return {
      outcome: DryRunOutcome.WouldFail,
      reason: NOT_REDRIVABLE,
      detail: `would stay in the dead-letter queue: ${why}`,
      failure: { reason: NOT_REDRIVABLE, errorType: 'NotRedrivableError', errorMessage: why, retryable: false },
    };
  }
  const delivery: Delivery = {
    messageId: `dry-run:${message.messageId}`,
    body: message.body,
    attempts: { kind: 'receive-count', receiveCount: 1, sourceId: message.messageId },
    deadLetter: { source: 'dry-run' },
    ...(message.redriveOf !== undefined ? { redriveOf: message.redriveOf } : {}),
  };
  const parsed = parseDelivery(delivery, definition, tables);
  if (!parsed.ok) return failed(toFailure(classify(parsed.error, definition.classifyError)), parsed.idempotencyKey);
  const unit: Unit = {
    ...parsed,
    index: 0,
    verified: false,
    snapshot: false,
    losses: 0,
    solo: false,
    verdict: undefined,
    settledAt: undefined,
    // As the engine: before inboxHome.rowsUntil, and with inboxHome.marks false, the key's inbox
    // row counts beside its mark.
    ...(parsed.home !== undefined &&
    (definition.home?.writeMarks === false || now.getTime() < (definition.home?.rowsUntilMs ?? Number.NEGATIVE_INFINITY))
      ? { checkRow: true }
      : {}),
  };
  const { idempotencyKey } = unit;

  const read = await readSnapshot([unit], {
    client: consumer.client,
    config: { consumerName: consumer.consumerName, inboxTable: consumer.inboxTable, tables },
    tables: definition.tables,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  });
  const unread = read.unread.get(unit);
  if (unread !== undefined) {
    const e = unread as { name?: string; message?: string };
    throw new StateUnreadableError(
      `cannot read the consumer's inbox table ${consumer.inboxTable} and tables ${Object.values(tables).join(', ') || '(none)'}: ` +
        `${e?.name ?? 'Error'}: ${e?.message ?? String(unread)}. Check INBOX_TABLE_NAME and TABLE_NAME_* (or --outputs-file), ` +
        'AWS_ENDPOINT_URL_DYNAMODB and the credentials.',
      { cause: unread },
    );
  }

  // Under inboxHome the key's record is its mark on the home item (its expiry as the row's TTL).
  const home = definition.home;
  const homeItem = home !== undefined && unit.home !== undefined ? read.found.get(unit.home.id) : undefined;
  const marked =
    home !== undefined && unit.home !== undefined
      ? marksOf(homeItem, home.attribute)[markKey(consumer.consumerName, idempotencyKey)]
      : undefined;
  // As the engine, before rowsUntil: an applied row wins over a dead letter's mark (redriven by a
  // consumer with rows only).
  const appliedRow = unit.checkRow === true ? toInboxRow(read.found.get(inboxId(unit))) : undefined;
  const mark = marked?.s !== undefined && appliedRow?.status === InboxStatus.Applied ? undefined : marked;
  const rowItem =
    home !== undefined && unit.home !== undefined
      ? mark === undefined
        ? unit.checkRow === true
          ? read.found.get(inboxId(unit))
          : undefined
        : {
            [tableKeys.inbox.ttlAttribute]: mark.x,
            // A mark holds no time of its own: it was written one inbox window before its expiry.
            [mark.s === undefined ? 'processedAt' : 'deadLetteredAt']: new Date((mark.x - consumer.inboxTtlSeconds) * 1000).toISOString(),
          }
      : read.found.get(inboxId(unit));
  const row =
    home !== undefined && unit.home !== undefined && mark !== undefined
      ? markRow(homeItem, home.attribute, consumer.consumerName, idempotencyKey)
      : toInboxRow(rowItem);
  if (row !== undefined) {
    const redriven = row.status === InboxStatus.DeadLettered && row.messageId === message.redriveOf;
    if (!redriven || row.payloadHash !== unit.payloadHash) {
      if (row.payloadHash !== unit.payloadHash) {
        const conflict = new IdempotencyConflict(idempotencyKey, row.payloadHash, unit.payloadHash);
        return failed(toFailure(classify(conflict, definition.classifyError)), idempotencyKey);
      }
      return duplicate(row, rowItem ?? {}, idempotencyKey, now, mark === undefined ? 'row' : 'mark');
    }
  }

  const since = message.since;
  const outside = row === undefined && since !== undefined && now.getTime() - since.at.getTime() > consumer.inboxTtlSeconds * 1000;
  const decided = decideOn(unit, read.found, consumer);
  if (outside) {
    const what =
      'failure' in decided
        ? `its decision would fail: ${failureText(decided.failure)}`
        : `would apply again: ${describeDecision(decided.decision)}`;
    return {
      outcome: DryRunOutcome.OutsideWindow,
      reason: 'outside the inbox window',
      detail:
        `outside the inbox window: it is ${formatDuration(now.getTime() - since.at.getTime())} old (by its ${since.what}), ` +
        `longer than the inbox keeps a key (${formatDuration(consumer.inboxTtlSeconds * 1000)}), and the inbox no longer holds ` +
        `${JSON.stringify(idempotencyKey)}; a redrive leaves it in the dead-letter queue unless --allow-outside-window, with which it ${what}`,
      idempotencyKey,
      ...decided,
    };
  }
  if ('failure' in decided) return failed(decided.failure, idempotencyKey);
  return {
    outcome: DryRunOutcome.WouldApply,
    reason: 'would apply',
    detail: `would apply: ${describeDecision(decided.decision)}`,
    idempotencyKey,
    decision: decided.decision,
  };
}

/** The consumer's tables cannot be read: no verdict can be given. Exit code 1. */
export class StateUnreadableError extends DlqToolError {}

/** Runs `decide` on the snapshot and checks its decision as the engine does before a commit. */
function decideOn(
  unit: Unit,
  found: ReadonlyMap<string, Item | undefined>,
  consumer: DryRunConsumer,
): { decision: PlannedDecision } | { failure: DryRunFailure } {
  const { definition, tables } = consumer;
  const reads = new Map(unit.reads.map((key) => [key.id, key]));
  // What decide sees: under inboxHome, the home table's items without their marks (a stub: absent).
  const home = definition.home;
  const itemOf = (key: ResolvedKey): Item | undefined =>
    home !== undefined && key.table === home.table ? homeView(found.get(key.id), home) : found.get(key.id);
  const state: State = {
    get: <T extends Item = Item>(table: string, key: Readonly<Item>): T | undefined => {
      const resolved = resolveKey(definition.tables, tables, table, key, 'state.get()');
      const named = reads.get(resolved.id);
      if (named === undefined)
        throw new ConsumerDefinitionError(`decide() asked state.get() for an item of ${table} that read() did not name`);
      const item = itemOf(named);
      return item === undefined ? undefined : (cloneValue(item) as T);
    },
  };
  try {
    const decision = (definition.decide(unit.event, state) ?? {}) as Decision;
    if (typeof decision !== 'object') throw new ConsumerDefinitionError(`decide() returned a ${typeof decision}, not a decision object`);
    foldDecision(unit, decision, new Map(), reads, {
      definition,
      tableNames: tables,
      believed: (key) => {
        const item = itemOf(key);
        return { exists: item !== undefined, item, verified: true };
      },
      newVersion,
    });
    return { decision: plan(decision, consumer) };
  } catch (error) {
    return { failure: toFailure(classify(error, definition.classifyError)) };
  }
}

function plan(decision: Decision, consumer: DryRunConsumer): PlannedDecision {
  const { definition, tables } = consumer;
  const writes = (decision.writes ?? []).map((write): PlannedWrite => {
    const { kind, action } = writeKind(write);
    const table = action.TableName ?? '';
    const key = resolveKey(definition.tables, tables, table, (kind === 'Put' ? action.Item : action.Key) ?? {}, `a ${kind}`);
    return { kind, table, tableName: key.tableName, key: jsonKey(key.key) };
  });
  return {
    writes,
    outbox: (decision.outbox ?? []).map((message) => ({
      destination: message.destination ?? 'default',
      ...(message.messageGroupId !== undefined ? { messageGroupId: message.messageGroupId } : {}),
    })),
    sideEffects: (decision.sideEffects ?? []).map((effect) => effect.name),
  };
}

function jsonKey(key: Item): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(key)) {
    if (value instanceof Uint8Array) json[name] = Buffer.from(value).toString('base64');
    else if (typeof value === 'bigint') json[name] = value.toString();
    else if (typeof value === 'object' && value !== null && 'value' in value) json[name] = String((value as { value: unknown }).value);
    else json[name] = value;
  }
  return json;
}

function duplicate(
  row: NonNullable<ReturnType<typeof toInboxRow>>,
  item: Readonly<Record<string, unknown>>,
  idempotencyKey: string,
  now: Date,
  record: 'row' | 'mark' = 'row',
): DryRunVerdict {
  const at =
    typeof item.processedAt === 'string' ? item.processedAt : typeof item.deadLetteredAt === 'string' ? item.deadLetteredAt : undefined;
  const ttl = item[tableKeys.inbox.ttlAttribute];
  const expires = typeof ttl === 'number' || typeof ttl === 'bigint' || typeof ttl === 'string' ? Number(ttl) : Number.NaN;
  const expiresAt = Number.isFinite(expires) ? new Date(expires * 1000).toISOString() : undefined;
  const expiry =
    expiresAt === undefined
      ? ''
      : expires * 1000 <= now.getTime()
        ? record === 'mark'
          ? `; its inbox mark expired at ${expiresAt}: the next write of its home item removes it, after which it would apply again`
          : `; its inbox row expired at ${expiresAt}: DynamoDB's TTL deletes it within days, after which it would apply again`
        : `; its inbox ${record} keeps the key until ${expiresAt}`;
  const applied = row.status === InboxStatus.Applied;
  return {
    outcome: DryRunOutcome.Duplicate,
    reason: applied ? 'already applied' : 'dead letter of another message',
    detail: applied
      ? `duplicate: already applied at ${at ?? 'an unknown time'}${expiry}`
      : `duplicate: the inbox holds the key as dead-lettered by message ${row.messageId} (at ${at ?? 'an unknown time'}); ` +
        `only a redrive of that message applies it${expiry}`,
    idempotencyKey,
    ...(at !== undefined ? { appliedAt: at } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
}

function toFailure(classification: Classification): DryRunFailure {
  return {
    reason: classification.reason ?? classification.errorType,
    errorType: classification.errorType,
    errorMessage: classification.errorMessage,
    retryable: classification.retryable,
  };
}

function failed(failure: DryRunFailure, idempotencyKey: string | undefined): DryRunVerdict {
  return {
    outcome: DryRunOutcome.WouldFail,
    reason: failure.reason,
    detail: `would fail: ${failureText(failure)}`,
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
    failure,
  };
}

function failureText(failure: DryRunFailure): string {
  return (
    `${failure.reason} (${failure.errorType}: ${failure.errorMessage})` +
    (failure.retryable ? '; retryable: it would be retried until its attempts run out, then dead-lettered as RetriesExhausted' : '')
  );
}

/** `2 writes (Put accounts accountId=a-1, …), 1 outgoing message (default), 1 side effect (notify, not run)`. */
export function describeDecision(decision: PlannedDecision): string {
  const writes = decision.writes.map((w) => `${w.kind} ${w.table} ${keyText(w.key)}`);
  const outbox = decision.outbox.map((m) => m.destination);
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  return (
    `${plural(writes.length, 'write')}${writes.length > 0 ? ` (${writes.join(', ')})` : ''}, ` +
    `${plural(outbox.length, 'outgoing message')}${outbox.length > 0 ? ` (${outbox.join(', ')})` : ''}, ` +
    `${plural(decision.sideEffects.length, 'side effect')}${decision.sideEffects.length > 0 ? ` (${decision.sideEffects.join(', ')}, not run)` : ''}`
  );
}

function keyText(key: Readonly<Record<string, unknown>>): string {
  return Object.entries(key)
    .map(([name, value]) => `${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
}
