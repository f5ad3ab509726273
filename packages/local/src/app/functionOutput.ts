/**
 * Reads a consumer function's output as CloudWatch Logs would receive it: the outcome of each
 * delivery from its structured log line (the library's `LogObserver` writes one per delivery:
 * INFO applied and duplicate, WARN retried, ERROR dead-lettered), and each line's level.
 *
 * @module
 */
import { Outcome, type OutcomeRecord } from 'idempotent-consumer/observability';

const outcomes = new Set<string>(Object.values(Outcome));
const outcomeMessages = new Set(['message processed', 'message will be retried', 'message dead-lettered']);

/**
 * The outcome a log line of the consumer reports, or `undefined` for any other line. The line's
 * values are the logged ones: ids capped at 256 characters, the error message at 512, `fields`
 * from its `event`, `countsAsAttempt` only when it says `attemptCounted: false`.
 */
export function outcomeFromLogLine(line: string): OutcomeRecord | undefined {
  if (!line.startsWith('{') || !line.includes('"outcome"')) return undefined;
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (entry === null || typeof entry !== 'object') return undefined;
  const { outcome, messageId } = entry;
  if (typeof outcome !== 'string' || !outcomes.has(outcome) || typeof messageId !== 'string') return undefined;
  if (typeof entry.message !== 'string' || !outcomeMessages.has(entry.message)) return undefined;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const fields = entry.event !== null && typeof entry.event === 'object' ? (entry.event as OutcomeRecord['fields']) : {};
  return {
    outcome: outcome as Outcome,
    messageId,
    idempotencyKey: text(entry.idempotencyKey),
    orderingKey: text(entry.orderingKey),
    fields,
    attempt: typeof entry.attempt === 'number' ? entry.attempt : undefined,
    reason: text(entry.reason),
    errorType: text(entry.errorType),
    errorMessage: text(entry.errorMessage),
    countsAsAttempt: entry.attemptCounted === false ? false : undefined,
    durationMs: typeof entry.durationMs === 'number' ? entry.durationMs : 0,
  };
}

const levels = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'];

/** The rank of a log level (`DEBUG` < `INFO` < `WARN` < `ERROR` < `CRITICAL` < `SILENT`); an unknown one ranks as `INFO`. */
export function logLevelRank(level: string): number {
  const rank = levels.indexOf(level.toUpperCase());
  return rank < 0 ? levels.indexOf('INFO') : rank;
}

/** The level of a structured (JSON) log line (`level`), or `undefined` for a line that is not one. */
export function logLevelOf(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const level = (JSON.parse(line) as { level?: unknown }).level;
    return typeof level === 'string' ? level.toUpperCase() : undefined;
  } catch {
    return undefined;
  }
}
