/**
 * The malformed bodies a producer may send, each dead-lettered with a reason the workload
 * knows. Apart from `schedule.ts` so that the generated workloads' grammar (which `schedule.ts`
 * imports) can use them without an import cycle.
 *
 * @module
 */

/** Malformed bodies a producer may send, each with the reason it must be dead-lettered with. */
export const poisonKinds = ['not-json', 'array', 'missing-key', 'key-not-string', 'unknown-type', 'bad-field'] as const;
export type PoisonKind = (typeof poisonKinds)[number];
