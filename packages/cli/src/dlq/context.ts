import type { SQSClient } from '@aws-sdk/client-sqs';
import type { FunctionInvoker } from './functionInvoker.js';
import type { PayloadStore } from './payloadStore.js';
import { serverClockOf, type Clock } from './serverClock.js';

/** What every DLQ command function needs besides its options. */
export interface DlqContext {
  readonly sqs: SQSClient;
  /** Writes one progress line for the operator (the command line sends it to stderr). @default discard */
  readonly log?: (line: string) => void;
  /** Aborted on Ctrl-C: a command stops at the next safe point and restores what it holds. */
  readonly signal?: AbortSignal;
  /**
   * Where bodies the consumer offloaded to S3 are read (`show`, `archive`, `redrive`) and written
   * back (`replay`). @default none: a command that meets an offloaded body reports it cannot read it
   */
  readonly payloads?: PayloadStore;
  /**
   * How Kafka dead letters are redriven: by invoking the consumer's function (`redrive --function`).
   * @default none: a redrive that needs it reports that it cannot invoke
   */
  readonly functions?: FunctionInvoker;
  /**
   * The clock that SQS timestamps and failure times are compared with.
   * @default the SQS server's clock ({@link serverClockOf}), never the local wall clock
   */
  readonly clock?: Clock;
}

/** The clock of a command: `context.clock`, else the SQS server's. */
export function clockOf(context: DlqContext): Clock {
  return context.clock ?? serverClockOf(context.sqs);
}

/**
 * Asks the operator to confirm a change; resolves `true` to go ahead.
 *
 * @throws ConfirmationRequiredError when it cannot ask (no terminal)
 */
export type Confirm = (question: string) => Promise<boolean>;

/** The options of a command that deletes from a queue. */
export interface ConfirmOptions {
  /** Report what would change and change nothing. @default false */
  readonly dryRun?: boolean;
  /** Skip the confirmation (`--yes`). @default false */
  readonly yes?: boolean;
  /** How to ask; required unless `yes` or `dryRun`. */
  readonly confirm?: Confirm;
}

/**
 * Asks for confirmation unless `yes` is set.
 *
 * @returns whether to go ahead
 * @throws Error when neither `yes` nor `confirm` is given (a programming error)
 */
export async function confirmed(options: ConfirmOptions, question: string): Promise<boolean> {
  if (options.yes === true) return true;
  if (options.confirm === undefined) throw new Error('a confirmation is needed: pass yes or confirm');
  return options.confirm(question);
}
