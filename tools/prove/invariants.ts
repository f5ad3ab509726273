/**
 * The invariants of exactly-once processing, checked after each schedule against what is
 * stored (inbox rows, inbox marks on home items, business items, outbox items, side-effect
 * records, the dead-letter queue, the source), never against what the consumer reported.
 *
 * @module
 */
import { FailureReason } from 'idempotent-consumer';
import { canonicalJson, effectKeyOf, InboxStatus, payloadHash } from 'idempotent-consumer/internal';
import { type DeadLetter, type HomeMarks, print, type StoredInboxRow, type StoredOutboxItem } from './storedState.js';
import { MessageRole, type InputMessage, type ModelResult, type StoredBusinessState, type Workload } from './workload.js';

/** The invariants, by the name the report uses. */
export const Invariant = {
  /** Every input message has exactly one final outcome: applied once, acknowledged as a duplicate, or dead-lettered; none is lost. */
  oneOutcome: 'one-outcome',
  /** No idempotency key is applied twice (its effects in the stored state: history entries, ledger entries, stock movements). */
  appliedOnce: 'applied-once',
  /** The stored state equals the in-order model's (the consumer's pure functions applied in the producer's order). */
  finalState: 'final-state',
  /** A message whose idempotency key was applied (same payload) is never in the dead-letter queue. */
  appliedNotDeadLettered: 'applied-not-dead-lettered',
  /** Every dead letter carries the expected reason, its original message id, and its body byte for byte. */
  deadLetterReason: 'dead-letter-reason',
  /**
   * A message is dead-lettered as `RetriesExhausted` only after its whole budget of real attempts:
   * it was delivered at least `maxAttempts` times without an earlier message of its FIFO group or
   * Kafka partition failing before it in the batch (an upper bound of its real attempts).
   */
  attemptBudget: 'attempt-budget',
  /** A guarded side effect leaves one record per effect key downstream, for applied events only. */
  sideEffectOnce: 'side-effect-once',
  /** Each applied event's outgoing messages are written exactly once, and no other event's. */
  outboxOnce: 'outbox-once',
  /**
   * With inbox marks on home items (`inboxHome`): no idempotency key has two records of being
   * applied (an applied mark and an applied inbox row, but the row a redrive writes beside its
   * mark, which must agree with it); every mark is on its own key's home item
   * and carries the key's payload hash, a message id of the key, and an expiry within the inbox
   * window; a dead-lettered mark has its reason, and its inbox row (the dead-letter tooling's).
   */
  inboxRecord: 'inbox-record',
  /** The source drains: every message deleted (or committed), none moved by the redrive policy or given up by the event source mapping. */
  queueDrains: 'queue-drains',
  /** The handler never throws and always returns a partial batch response AWS accepts. */
  validResponse: 'valid-response',
  /** Delivering every applied event again changes nothing stored and dead-letters nothing. */
  replayUnchanged: 'replay-unchanged',
  /**
   * Each invocation reports exactly one outcome per message of its batch (the handler's
   * `observer`), its metrics count the same outcomes, and a message is `retried` exactly when the
   * batch response reports it as a batch item failure.
   */
  outcomeAgrees: 'outcome-agrees',
  /**
   * No message's attempt is counted for a failure that was not its own: a retried outcome that
   * counts as an attempt, or a dead letter, whose error type (or reason) names a failure of
   * another message's event (a write DynamoDB refused, a decision that cannot be written, a
   * consumer's own error).
   */
  ownAttempts: 'own-attempts',
} as const;
export type Invariant = (typeof Invariant)[keyof typeof Invariant];

/** Every invariant, in report order. */
export const invariants: readonly Invariant[] = Object.values(Invariant);

/** One violation found after a schedule. */
export interface Violation {
  readonly invariant: Invariant;
  readonly detail: string;
}

/** One message as the source got it: an input message under the id the source gave it. */
export interface SentMessage {
  /** The source's id: the SQS message id, or `<topic>-<partition>@<offset>`. */
  readonly sourceId: string;
  readonly input: InputMessage;
  /** Its dead letter was redriven (moved back to the source as a new message). */
  redriven: boolean;
}

/** The inbox marks of a consumer with an inbox home (`inboxHome`), with where each key's belong. */
export interface MarkEvidence extends HomeMarks {
  /** The id of the home item of an idempotency key's events (`undefined`: no key of the schedule). */
  homeOf(key: string): string | undefined;
  /** The suite's clock at the checks, in milliseconds. */
  readonly nowMs: number;
  /** The consumer's inbox window (`idempotency.inboxTtlSeconds`). */
  readonly inboxTtlSeconds: number;
  /**
   * A deploy switched `inboxHome` during the schedule: the records an applied key may have, by
   * the options it may have been applied under (see {@link RecordShape}).
   */
  readonly switched?: {
    /** The shapes the key's records may take, and the options (for the message) they come from. */
    allowed(key: string): { readonly shapes: ReadonlySet<RecordShape>; readonly under: string };
  };
}

/**
 * The records of an applied key: an applied inbox row alone (inbox rows), an applied mark alone
 * (`inboxHome`), or both, agreeing (`inboxHome` before `rowsUntil`; and a redrive's row beside its mark).
 */
export type RecordShape = 'row' | 'mark' | 'both';

/**
 * The inbox record of each idempotency key: its inbox row, or its mark on its home item
 * (`inboxHome`). An applied mark is the key's record (an applied row beside it is a second one,
 * which `inbox-record` reports); a dead-lettered mark stands for the key only without a row (the
 * row of a dead letter, and of a redrive that applied it, is the record). A mark on another key's
 * home item is no record (`inbox-record` reports it).
 */
export function inboxRecords(rows: ReadonlyMap<string, StoredInboxRow>, marks: MarkEvidence | undefined): Map<string, StoredInboxRow> {
  const records = new Map(rows);
  if (marks === undefined) return records;
  for (const [home, entries] of marks.byHome) {
    for (const [key, mark] of entries) {
      if (marks.homeOf(key) !== home) continue;
      const record = { status: mark.status, messageId: mark.messageId, payloadHash: mark.payloadHash };
      if (mark.status === InboxStatus.Applied) records.set(key, record);
      else if (!rows.has(key)) records.set(key, record);
    }
  }
  return records;
}

/** What the checks read. */
export interface Evidence {
  readonly workload: Workload;
  readonly model: ModelResult;
  readonly sent: readonly SentMessage[];
  /** The inbox rows of the workload's idempotency keys. */
  readonly inbox: ReadonlyMap<string, StoredInboxRow>;
  /** The inbox marks on home items, when the consumer has an inbox home (`inboxHome`). */
  readonly marks?: MarkEvidence;
  readonly outbox: ReadonlyMap<string, readonly StoredOutboxItem[]>;
  readonly business: StoredBusinessState;
  /** What the dead-letter queue holds (what was redriven is no longer there). */
  readonly deadLetters: readonly DeadLetter[];
  /** Messages the source's redrive policy moved (no reason). */
  readonly policyMoves: readonly string[];
  /** Source ids the Kafka event source mapping gave up on. */
  readonly gaveUp: readonly string[];
  /** Messages still on the source. */
  readonly remaining: number;
  /** By source id: deliveries that may have been attempts (see {@link Invariant.attemptBudget}). */
  readonly possibleAttempts: ReadonlyMap<string, number>;
  /**
   * Whether the source's safety net (the redrive policy; the Kafka mapping's retry limit) may
   * take this message without a reason: its deliveries crashed or were skipped more often than
   * the settings leave room for.
   */
  readonly excused: (sourceId: string) => boolean;
  /** Deliveries of this message that were not attempts, as the safety net's excuse counts them (crashed, and the skips the consumer recorded). */
  readonly crashes: (sourceId: string) => number;
  /** The consumer's `retry.maxAttempts`. */
  readonly maxAttempts: number;
  /**
   * The body a message's dead letter carries, from the body sent: itself, but for a DynamoDB
   * stream, whose messages are item images (the dead letter holds the image in DynamoDB JSON).
   * @default the body itself
   */
  readonly deadLetterBody?: (body: string) => string;
}

const cut = (text: string, length = 300) => (text.length <= length ? text : `${text.slice(0, length - 1)}…`);

/** Checks every invariant but `valid-response`, `replay-unchanged`, `outcome-agrees` and `own-attempts` (those are checked while the schedule runs). */
export function checkInvariants(evidence: Evidence): Violation[] {
  const violations: Violation[] = [];
  const add = (invariant: Invariant, detail: string) => violations.push({ invariant, detail: cut(detail, 600) });
  const { workload, model, deadLetters } = evidence;
  // Each key's record: its inbox row, or its mark on its home item.
  const inbox = inboxRecords(evidence.inbox, evidence.marks);
  const hashes = new Map<string, string>();
  const hashOf = (body: string) => {
    let hash = hashes.get(body);
    if (hash === undefined) hashes.set(body, (hash = payloadHash(JSON.parse(body))));
    return hash;
  };
  const lettersOf = new Map<string, DeadLetter[]>();
  for (const letter of deadLetters) {
    const id = letter.originalMessageId ?? '(none)';
    lettersOf.set(id, [...(lettersOf.get(id) ?? []), letter]);
  }
  const known = new Set(evidence.sent.map((s) => s.sourceId));
  for (const letter of deadLetters) {
    if (letter.originalMessageId === undefined || !known.has(letter.originalMessageId)) {
      add(
        Invariant.deadLetterReason,
        `a dead letter names no message of the schedule (originalMessageId ${String(letter.originalMessageId)}, reason ${String(letter.reason)})`,
      );
    }
  }
  const moved = new Set(evidence.policyMoves);
  const gaveUp = new Set(evidence.gaveUp);
  const sourceIdsOfKey = new Map<string, Set<string>>();
  for (const s of evidence.sent)
    if (s.input.key !== undefined) sourceIdsOfKey.set(s.input.key, (sourceIdsOfKey.get(s.input.key) ?? new Set()).add(s.sourceId));

  // Every message: exactly one final outcome.
  for (const s of evidence.sent) {
    if (s.redriven) continue;
    const what = `message ${s.sourceId} (${s.input.role}${s.input.key === undefined ? '' : ` ${s.input.key}`})`;
    const letters = lettersOf.get(s.sourceId) ?? [];
    for (const letter of letters) {
      if (letter.reason === undefined) add(Invariant.deadLetterReason, `${what} is in the dead-letter queue without a reason`);
      const body = letter.bodyEncoding === 'empty' ? '' : letter.body;
      const sentBody = evidence.deadLetterBody?.(s.input.body) ?? s.input.body;
      if (body !== sentBody)
        add(
          Invariant.deadLetterReason,
          `${what}: its dead letter's body is not the original body byte for byte (${body.length} vs ${sentBody.length} characters)`,
        );
    }
    // The source's safety net (the redrive policy; the Kafka mapping's retry limit) may fire for a
    // message whose deliveries crashed or were skipped more often than the settings allow for.
    const crashed = evidence.crashes(s.sourceId);
    const excused = evidence.excused(s.sourceId);
    if (moved.has(s.sourceId) && !excused)
      add(
        Invariant.queueDrains,
        `${what} was moved to the dead-letter queue by the queue's redrive policy, without a reason (only ${crashed} of its deliveries crashed or were not attempts)`,
      );
    if (gaveUp.has(s.sourceId) && !excused)
      add(
        Invariant.oneOutcome,
        `${what} was given up by the Kafka event source mapping (its retries ran out; only ${crashed} of its deliveries crashed or were not attempts): it was neither applied nor dead-lettered`,
      );

    if (s.input.role === MessageRole.Poison) {
      if (letters.length === 0 && !moved.has(s.sourceId) && !gaveUp.has(s.sourceId))
        add(Invariant.oneOutcome, `${what} was lost: not in the dead-letter queue`);
      for (const letter of letters) {
        if (letter.reason !== undefined && letter.reason !== s.input.expectedReason)
          add(Invariant.deadLetterReason, `${what} was dead-lettered as ${letter.reason}, expected ${String(s.input.expectedReason)}`);
      }
      continue;
    }
    const key = s.input.key!;
    const row = inbox.get(key);
    const applied = row?.status === 'applied' && row.messageId === s.sourceId;
    const duplicate = row?.status === 'applied' && row.messageId !== s.sourceId && row.payloadHash === hashOf(s.input.body);
    // A producer's copy of a dead-lettered event is acknowledged as a duplicate of the dead letter
    // (the inbox row names another message); an engine that dead-letters it again is not wrong either.
    const copyOfDeadLetter = row?.status === 'dead-lettered' && row.messageId !== s.sourceId && row.payloadHash === hashOf(s.input.body);
    if ((applied || duplicate) && letters.length > 0) {
      add(
        Invariant.appliedNotDeadLettered,
        `${what} is in the dead-letter queue as ${letters.map((l) => String(l.reason)).join(', ')} although its key was applied ${applied ? 'by it' : `by ${row.messageId}`}`,
      );
    }
    if (!applied && !duplicate && !copyOfDeadLetter && letters.length === 0 && !moved.has(s.sourceId) && !gaveUp.has(s.sourceId)) {
      add(
        Invariant.oneOutcome,
        `${what} was lost: its key is ${row === undefined ? 'not in the inbox' : `${row.status} by ${row.messageId}`} and it is not in the dead-letter queue`,
      );
    }
    const expected = model.outcomes.get(key);
    for (const letter of letters) {
      if (letter.reason === undefined || applied || duplicate) continue;
      const want = expected?.kind === 'dead-lettered' ? expected.reason : 'RetriesExhausted';
      if (letter.reason !== want) {
        add(
          Invariant.deadLetterReason,
          `${what} was dead-lettered as ${letter.reason} (${String(letter.errorType)}); in producer order it ${expected?.kind === 'applied' ? 'applies' : `is dead-lettered as ${want}`}`,
        );
      }
    }
  }

  // Every key: the in-order verdict, applied by one of its own messages.
  for (const [key, expected] of model.outcomes) {
    const row = inbox.get(key);
    if (row?.status === 'applied' && !(sourceIdsOfKey.get(key)?.has(row.messageId) ?? false)) {
      add(Invariant.oneOutcome, `key ${key} was applied by ${row.messageId}, which is no message of it`);
    }
    if (expected.kind === 'applied' && row?.status !== 'applied') {
      add(
        Invariant.finalState,
        `key ${key} applies in producer order but was not applied (inbox: ${row === undefined ? 'no row' : row.status})`,
      );
    }
    if (expected.kind === 'dead-lettered' && row?.status === 'applied') {
      add(Invariant.finalState, `key ${key} was applied, but in producer order it is dead-lettered as ${expected.reason}`);
    }
  }

  // The business items equal the model's.
  const ids = new Set([...model.items.keys(), ...evidence.business.items.keys()]);
  for (const id of ids) {
    const want = model.items.get(id);
    const have = evidence.business.items.get(id);
    if (print(want) !== print(have))
      add(Invariant.finalState, `item ${id}: expected ${cut(print(want), 250)}, stored ${cut(print(have), 250)}`);
  }
  const appliedKeys = new Set([...inbox].filter(([, row]) => row.status === 'applied').map(([key]) => key));
  for (const problem of workload.appliedTwice(evidence.business, appliedKeys)) add(Invariant.appliedOnce, problem);

  // Side effects: one record per effect key of an applied event, none for another.
  const expectedEffects = new Set<string>();
  for (const [key, requests] of model.sideEffects) {
    if (!appliedKeys.has(key)) continue;
    requests.forEach((request, position) => expectedEffects.add(effectKeyOf(key, request, position)));
  }
  for (const effectKey of expectedEffects) {
    const records = evidence.business.effectRecords.get(effectKey) ?? 0;
    if (records !== 1)
      add(Invariant.sideEffectOnce, `side effect ${effectKey} of an applied event left ${records} records downstream, expected 1`);
  }
  for (const [effectKey, records] of evidence.business.effectRecords) {
    if (!expectedEffects.has(effectKey) && !(model.effectsAllowed?.has(effectKey) ?? false)) {
      add(
        Invariant.sideEffectOnce,
        `side effect ${effectKey} left ${records} record(s) downstream, but its event was not applied or never asks for it`,
      );
    }
  }

  // Outbox: exactly the applied events' outgoing messages.
  for (const key of new Set([...model.outcomes.keys(), ...evidence.outbox.keys()])) {
    const stored = evidence.outbox.get(key) ?? [];
    const want = appliedKeys.has(key) ? (model.outbox.get(key) ?? []) : [];
    const wantBodies = want.map((message) => (typeof message.body === 'string' ? message.body : JSON.stringify(message.body)));
    const haveBodies = stored.map((item) => item.body);
    if (canonicalJson(wantBodies) !== canonicalJson(haveBodies)) {
      add(
        Invariant.outboxOnce,
        `key ${key} (${appliedKeys.has(key) ? 'applied' : 'not applied'}): outbox holds ${haveBodies.length} message(s) ${cut(JSON.stringify(haveBodies), 200)}, expected ${cut(JSON.stringify(wantBodies), 200)}`,
      );
    }
  }

  for (const letter of deadLetters) {
    if (letter.reason !== FailureReason.RetriesExhausted || letter.originalMessageId === undefined) continue;
    const possible = evidence.possibleAttempts.get(letter.originalMessageId) ?? 0;
    if (possible < evidence.maxAttempts) {
      add(
        Invariant.attemptBudget,
        `message ${letter.originalMessageId} was dead-lettered as RetriesExhausted after at most ${possible} real attempts (budget ${evidence.maxAttempts}; its dead letter says ${String(letter.attempts)})`,
      );
    }
  }

  if (evidence.remaining > 0) add(Invariant.queueDrains, `${evidence.remaining} message(s) are still on the source after the schedule`);
  if (evidence.marks !== undefined) {
    const bodyOf = new Map<string, string>();
    for (const s of evidence.sent)
      if (s.input.key !== undefined && s.input.role !== MessageRole.Poison && !bodyOf.has(s.input.key))
        bodyOf.set(s.input.key, s.input.body);
    // A redrive writes its inbox row beside its mark (over its dead letter's row, which the DLQ tooling reads).
    const redriven = new Set(evidence.sent.flatMap((s) => (s.redriven && s.input.key !== undefined ? [s.input.key] : [])));
    for (const problem of checkMarks(evidence.marks, evidence.inbox, bodyOf, sourceIdsOfKey, redriven, hashOf))
      add(Invariant.inboxRecord, problem);
  }
  return violations;
}

/** What is wrong with the inbox marks on home items (see {@link Invariant.inboxRecord}). */
function checkMarks(
  marks: MarkEvidence,
  rows: ReadonlyMap<string, StoredInboxRow>,
  bodyOf: ReadonlyMap<string, string>,
  sourceIdsOfKey: ReadonlyMap<string, ReadonlySet<string>>,
  redriven: ReadonlySet<string>,
  hashOf: (body: string) => string,
): string[] {
  const problems: string[] = [];
  for (const [home, problem] of marks.problems) problems.push(`home item ${home}: ${problem}`);
  const nowSeconds = marks.nowMs / 1000;
  for (const [home, entries] of marks.byHome) {
    for (const [key, mark] of entries) {
      const what = `the mark of ${key} on ${home}`;
      const own = marks.homeOf(key);
      if (own === undefined) {
        problems.push(`${what} names no idempotency key of the schedule`);
        continue;
      }
      if (own !== home) {
        problems.push(`${what} is not on its key's home item (${own})`);
        continue;
      }
      if (mark.malformed !== undefined) problems.push(`${what} is malformed: ${mark.malformed}`);
      const body = bodyOf.get(key);
      if (body !== undefined && mark.payloadHash !== hashOf(body))
        problems.push(`${what} carries payload hash ${mark.payloadHash.slice(0, 16)}…, not its body's ${hashOf(body).slice(0, 16)}…`);
      if (!(sourceIdsOfKey.get(key)?.has(mark.messageId) ?? false))
        problems.push(`${what} names message ${mark.messageId || '(none)'}, which is no message of it`);
      if (!Number.isInteger(mark.expiresAt) || mark.expiresAt <= nowSeconds || mark.expiresAt > nowSeconds + marks.inboxTtlSeconds + 1)
        problems.push(
          `${what} expires at ${String(mark.expiresAt)}, not within the inbox window (${Math.floor(nowSeconds)} to ${Math.floor(nowSeconds) + marks.inboxTtlSeconds})`,
        );
      const row = rows.get(key);
      if (mark.status === InboxStatus.Applied) {
        if (marks.switched !== undefined) continue; // checkSwitchedRecords
        if (
          row?.status === InboxStatus.Applied &&
          !(redriven.has(key) && row.messageId === mark.messageId && row.payloadHash === mark.payloadHash)
        )
          problems.push(
            `${key} has two records of being applied: ${what} (by ${mark.messageId}) and an inbox row (by ${row.messageId})${redriven.has(key) ? ' that disagree' : ', and it was never redriven'}`,
          );
      } else if (mark.status === InboxStatus.DeadLettered) {
        if (mark.reason === undefined || mark.reason === '') problems.push(`${what} is dead-lettered without a reason`);
        if (row === undefined) problems.push(`${what} is dead-lettered, but the key has no inbox row (the dead-letter tooling reads it)`);
      } else problems.push(`${what} has status ${JSON.stringify(mark.status)}`);
    }
  }
  if (marks.switched !== undefined) problems.push(...checkSwitchedRecords(marks, marks.switched, rows, redriven));
  return problems;
}

/**
 * Under a deploy that switched `inboxHome`: each applied key's records take a shape the options
 * it was applied under write (a row; a mark; both before `rowsUntil`), and a row and a mark that
 * both say applied agree (one message, one payload): two that disagree are two applications.
 */
function checkSwitchedRecords(
  marks: MarkEvidence,
  switched: NonNullable<MarkEvidence['switched']>,
  rows: ReadonlyMap<string, StoredInboxRow>,
  redriven: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  const applied = new Map<string, { messageId: string; payloadHash: string }>();
  for (const [home, entries] of marks.byHome)
    for (const [key, mark] of entries) if (marks.homeOf(key) === home && mark.status === InboxStatus.Applied) applied.set(key, mark);
  for (const key of new Set([
    ...applied.keys(),
    ...[...rows].filter(([, row]) => row.status === InboxStatus.Applied).map(([key]) => key),
  ])) {
    const mark = applied.get(key);
    const row = rows.get(key)?.status === InboxStatus.Applied ? rows.get(key) : undefined;
    const shape: RecordShape = mark !== undefined && row !== undefined ? 'both' : row !== undefined ? 'row' : 'mark';
    if (mark !== undefined && row !== undefined && (row.messageId !== mark.messageId || row.payloadHash !== mark.payloadHash)) {
      problems.push(
        `${key} has two records of being applied that disagree: a mark (by ${mark.messageId}) and an inbox row (by ${row.messageId})`,
      );
      continue;
    }
    const { shapes, under } = switched.allowed(key);
    // A redrive writes its row beside its mark.
    if (shapes.has(shape) || (shape === 'both' && shapes.has('mark') && redriven.has(key))) continue;
    problems.push(
      `${key} (applied under ${under}) has ${shape === 'both' ? 'an applied row and mark' : shape === 'row' ? 'an applied row and no applied mark' : 'an applied mark and no applied row'}; those options write ${[...shapes].join(' or ')}`,
    );
  }
  return problems;
}
