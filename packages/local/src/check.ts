import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { OutcomeRecord } from 'idempotent-consumer/observability';

/**
 * What a consumer's own invariant check receives after a local run (`--check MODULE`): a client
 * of the run's DynamoDB Local, the physical names of its business tables, and every outcome the
 * consumer reported.
 */
export interface LocalCheckContext {
  /** A document client of the run's DynamoDB Local (no injected faults), to read what the run stored. */
  readonly documentClient: DynamoDBDocumentClient;
  /** The business tables: logical name → physical name. */
  readonly tables: Readonly<Record<string, string>>;
  /** The physical name of the library's inbox table (inbox rows, attempt records, outbox items). */
  readonly inboxTable: string;
  /** Every outcome the consumer reported during the run, one per delivery, in the order they were reported. */
  readonly outcomes: readonly OutcomeRecord[];
}

/**
 * A consumer's invariant check, the `check` export of the module given to `--check`: returns the
 * problems it finds in what the run stored (an empty list when its invariants hold). The local run
 * adds them to its exactly-once check.
 *
 * @example
 * export const check: LocalCheck = async ({ documentClient, tables }) => {
 *   const problems: string[] = [];
 *   // scan tables.stock, compare reserved with the sum of held reservations, …
 *   return problems;
 * };
 */
export type LocalCheck = (context: LocalCheckContext) => Promise<readonly string[]>;
