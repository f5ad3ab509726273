/**
 * The event sources the proof suite drives. Apart from `schedule.ts` so that the generated
 * workloads (which `schedule.ts` imports) can name them without an import cycle.
 *
 * @module
 */

/** The event sources the suite drives. */
export const proveSources = ['sqs', 'fifo', 'kafka', 'kinesis', 'dynamodb-streams'] as const;
export type ProveSource = (typeof proveSources)[number];
