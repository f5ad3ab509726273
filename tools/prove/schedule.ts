/**
 * A fault schedule: plain JSON that says everything one run of the proof suite does — the event
 * streams a producer emits, the order it sends them in, and, invocation by invocation, what goes
 * wrong (a kill at an await point, a deadline, throttling, `TransactionConflict`, a 5xx before or
 * after the server, a concurrent delivery, a lost acknowledgement). The same schedule replays the
 * same run; fast-check generates schedules from a seed and shrinks a failing one to a minimal
 * replay.
 *
 * @module
 */
import fc from 'fast-check';
import { generatedWorkloadArbitrary } from './generated/grammar.js';
import type { GeneratedWorkloadSpec, InboxHomeMode } from './generated/spec.js';
import { checkGeneratedSpec, GeneratedSpecError } from './generated/specCheck.js';
import { KillPoint, killPoints } from './killPoints.js';
import { type PoisonKind, poisonKinds } from './poisonKinds.js';
import { type ProveSource, proveSources } from './proveSources.js';

export { type PoisonKind, poisonKinds };

export { proveSources, type ProveSource } from './proveSources.js';

/** The example consumers under test. */
export const proveConsumers = ['cafe', 'inventory'] as const;
export type ProveConsumer = (typeof proveConsumers)[number];

/**
 * Which consumers the schedules drive: the examples (`--consumer` says which), consumers drawn
 * from the grammar of `generated/grammar.ts`, or both.
 */
export const proveWorkloads = ['examples', 'generated', 'all'] as const;
export type ProveWorkload = (typeof proveWorkloads)[number];

/** How Lambda's Kafka event source mapping retries after a partial batch response (both readings of AWS's rule). */
export const kafkaRetryReadings = ['resume-from-lowest-offset', 'retry-reported-records'] as const;
export type KafkaRetryReading = (typeof kafkaRetryReadings)[number];

/** Valid event sequences of one café order, as a producer emits them. */
export const cafePaths = ['placed', 'paid', 'shipped', 'delivered', 'cancelled', 'paid-cancelled'] as const;
export type CafePath = (typeof cafePaths)[number];

/** One café order's stream. */
export interface CafeOrderSpec {
  readonly path: CafePath;
  /** Loyalty points of its `OrderPaid`. */
  readonly points: number;
  /** Positions (in the path) of the events the producer sends twice. */
  readonly duplicates: readonly number[];
  /** A position whose event is sent malformed instead (the valid event never arrives). */
  readonly poisonAt?: number;
  readonly poisonKind?: PoisonKind;
}

/** The café's streams: orders, and malformed bodies that belong to none. */
export interface CafeWorkloadSpec {
  readonly kind: 'cafe';
  readonly orders: readonly CafeOrderSpec[];
  readonly strayPoison: readonly PoisonKind[];
}

/** One inventory SKU's stream: its stock is received before the run (set-up), then reservations and releases. */
export interface InventorySkuSpec {
  /** Stock beyond what the reservations take: initial stock = Σ quantities + slack. */
  readonly slack: number;
  readonly reservations: readonly { readonly quantity: number; readonly released: boolean }[];
  /** A `StockReceived` of this many during the run (0: none). */
  readonly restock: number;
  /** A reservation larger than all the stock there ever is: always `OutOfStock`. */
  readonly overReserve: boolean;
  /** Positions (in the SKU's run events) the producer sends twice. */
  readonly duplicates: readonly number[];
  readonly poisonAt?: number;
  readonly poisonKind?: PoisonKind;
}

/** The inventory's streams. */
export interface InventoryWorkloadSpec {
  readonly kind: 'inventory';
  readonly skus: readonly InventorySkuSpec[];
  readonly strayPoison: readonly PoisonKind[];
}

export type WorkloadSpec = CafeWorkloadSpec | InventoryWorkloadSpec | GeneratedWorkloadSpec;

/** The kinds of injected failures of one SDK attempt. */
export const faultKinds = ['throttle', 'conflict', '5xx', '5xx-after'] as const;
export type FaultKind = (typeof faultKinds)[number];

/**
 * A failure of the `call`-th SDK attempt (from 0) of an invocation, or of its first attempt at
 * the await point `at`.
 */
export interface Fault {
  readonly call?: number;
  readonly at?: KillPoint;
  /**
   * `throttle`: throttling (DynamoDB `ProvisionedThroughputExceededException`/`ThrottlingException`,
   * SQS `RequestThrottled`), before the server. `conflict`: DynamoDB `TransactionConflict`
   * (a cancelled transaction, or `TransactionConflictException` on a single write), before.
   * `5xx`: `InternalServerError`/`ServiceUnavailable` before the server; `5xx-after`: the
   * request is applied, then its answer is replaced by a 5xx (the ambiguous case).
   */
  readonly kind: FaultKind;
}

/**
 * How an invocation dies: every SDK call from the `afterCalls`-th attempt on (from 0) is refused;
 * or from its first call named `before`; or after it returned, before its response is read.
 */
export type Kill = { readonly afterCalls: number } | { readonly before: KillPoint } | { readonly afterReturn: true };

/**
 * A second invocation started while this one runs, at its `atCall`-th SDK attempt (this one
 * waits there until the other has started, or finished with `resume: 'after'`). With
 * `redeliver`, this invocation's messages become visible again first, as when a visibility
 * timeout expires mid-invocation (or, on Kafka, a rebalance hands its partitions to another
 * poller), so the other invocation gets them too.
 */
export interface Overlap {
  readonly atCall: number;
  readonly redeliver: boolean;
  readonly resume: 'after' | 'during';
}

/** What happens to one invocation of the chaos phase. */
export interface InvocationPlan {
  /** The execution environment (index into the pool) it runs in. */
  readonly environment: number;
  /** Milliseconds left at its start (`getRemainingTimeInMillis()`); its deadline. */
  readonly remainingMs: number;
  /** Milliseconds of the clock each SDK attempt takes. */
  readonly callCostMs: number;
  readonly kill?: Kill;
  readonly faults: readonly Fault[];
  readonly overlap?: Overlap;
  /** The event source's acknowledgement is lost after a success (SQS deletes, Kafka offset commit): the batch comes back. */
  readonly acknowledgementLost?: boolean;
}

/** One run of the proof suite. */
export interface Schedule {
  readonly version: 1;
  readonly source: ProveSource;
  readonly workload: WorkloadSpec;
  /** Sending priorities (a stable sort): any order on a standard queue; FIFO and Kafka keep each group's order. */
  readonly sendOrder: readonly number[];
  /** Records per invocation. */
  readonly batchSize: number;
  /** Execution environments in the pool. */
  readonly environments: number;
  readonly kafka: { readonly partitions: number; readonly retryReading: KafkaRetryReading };
  /** Seed of the standard queue's choice of messages per receive (best-effort order). */
  readonly receiveSeed: number;
  /** Whether a delete with a stale receipt handle deletes the message (SQS: "might not be deleted"). */
  readonly staleReceiptDeletes: boolean;
  /** The chaos phase, invocation by invocation; afterwards invocations run without faults until the source drains. */
  readonly invocations: readonly InvocationPlan[];
  /**
   * The consumer parks out-of-order messages (`retry.parkOutOfOrder: true`): a delivery that fails
   * `PredecessorNotApplied` waits in the inbox table and is taken up by the invocation that applies
   * a message of its ordering key. Standard queues (`source: 'sqs'`) only. @default false
   */
  readonly parkOutOfOrder?: boolean;
  /**
   * A deploy that switches `inboxHome` mid-schedule (generated consumers with an inbox home only;
   * ignored otherwise). Absent: the consumer's options never change.
   */
  readonly homeSwitch?: HomeSwitch;
}

/**
 * The directions of a deploy that switches `inboxHome`: `on` (inbox rows, then `inboxHome` with
 * `rowsUntil` an inbox window ahead), `off` (`inboxHome` with `rowsUntil` ahead, then `inboxHome`
 * with `marks: false`, the documented way off), `off-removed` (`inboxHome` with `rowsUntil` ahead,
 * then no `inboxHome` at all: its stubs and marks become visible to `decide`), and the negative
 * control `on-without-rows-until` (rows, then `inboxHome` alone: a redelivery of an event applied
 * before the switch is applied again). `--switch mixed` draws `on` and `off` only.
 */
export const homeSwitchDirections = ['on', 'off', 'off-removed', 'on-without-rows-until'] as const;
export type HomeSwitchDirection = (typeof homeSwitchDirections)[number];
/** `--switch`: no switch, one direction in every switched schedule, or `on`/`off` drawn per schedule. */
export const homeSwitchModes = ['none', 'on', 'off', 'mixed', 'off-removed', 'on-without-rows-until'] as const;
export type HomeSwitchMode = (typeof homeSwitchModes)[number];

/**
 * A deploy of new consumer options, with the overlap a real deploy has: the execution
 * environments created before it keep running the old options until `overlap` more invocations
 * have run (or until they are replaced: killed, timed out); every environment created after it
 * runs the new options. By the replay of the applied events (the last step) every old one is gone.
 */
export interface HomeSwitch {
  readonly direction: HomeSwitchDirection;
  /** The chaos invocation (index) before which the deploy happens; past the last: before the heal. */
  readonly at: number;
  /** Invocations (of any phase) after the deploy during which the old environments still run. */
  readonly overlap: number;
}

/** Options of {@link scheduleArbitrary}. */
export interface ScheduleArbitraryOptions {
  readonly source: ProveSource;
  /** The examples that `examples` (and `all`) draw from. @default both */
  readonly consumers?: readonly ProveConsumer[];
  /** Which consumers: the examples, generated ones, or both. @default 'examples' */
  readonly workload?: ProveWorkload;
  /**
   * Aim every chaos invocation's kill at this await point, with a workload that reaches it
   * (a payment, a poisoned predecessor, a stray poison body): to cover every kill point.
   */
  readonly target?: KillPoint;
  /**
   * On a standard queue: `true` parks out-of-order messages in every schedule, `false` in none.
   * @default drawn: half the standard-queue schedules (recorded in each as `parkOutOfOrder`)
   */
  readonly parkOutOfOrder?: boolean;
  /**
   * Which generated consumers keep their inbox marks on home items (`inboxHome`, recorded in each
   * generated workload as `inboxHome`): all, none, or about half. @default 'mixed'
   */
  readonly inboxHome?: InboxHomeMode;
  /** Deploys that switch `inboxHome` (generated consumers with an inbox home): none, one direction, or `on`/`off` drawn. @default 'none' */
  readonly homeSwitch?: HomeSwitchMode;
}

/** The switch of a schedule under `mode` (`undefined`: none). */
function homeSwitchArbitrary(mode: HomeSwitchMode): fc.Arbitrary<HomeSwitch> {
  return fc.record({
    direction: mode === 'mixed' ? fc.constantFrom('on' as const, 'off' as const) : fc.constant(mode as HomeSwitchDirection),
    at: fc.integer({ min: 0, max: 12 }),
    overlap: fc.integer({ min: 0, max: 10 }),
  });
}

/** `arbitrary`'s value with probability `p`, else `undefined` (shrinks toward `undefined`). */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | undefined> {
  const scale = 1000;
  return fc.oneof({ weight: Math.round((1 - p) * scale), arbitrary: fc.constant(undefined) }, { weight: Math.round(p * scale), arbitrary });
}

const positions = fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { maxLength: 2 });
const poisonKind = fc.constantFrom(...poisonKinds);

const cafeOrder: fc.Arbitrary<CafeOrderSpec> = fc.record(
  {
    path: fc.constantFrom(...cafePaths),
    points: fc.integer({ min: 0, max: 100 }),
    duplicates: positions,
    poisonAt: sometimes(fc.integer({ min: 0, max: 3 }), 0.15),
    poisonKind,
  },
  { requiredKeys: ['path', 'points', 'duplicates'] },
);

const inventorySku: fc.Arbitrary<InventorySkuSpec> = fc.record(
  {
    slack: fc.integer({ min: 0, max: 5 }),
    reservations: fc.array(fc.record({ quantity: fc.integer({ min: 1, max: 5 }), released: fc.boolean() }), { minLength: 1, maxLength: 3 }),
    restock: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 5 }) }),
    overReserve: fc.boolean(),
    duplicates: positions,
    poisonAt: sometimes(fc.integer({ min: 0, max: 4 }), 0.15),
    poisonKind,
  },
  { requiredKeys: ['slack', 'reservations', 'restock', 'overReserve', 'duplicates'] },
);

const strayPoison = fc.array(poisonKind, { maxLength: 1 });

const cafeWorkload: fc.Arbitrary<WorkloadSpec> = fc.record({
  kind: fc.constant('cafe' as const),
  orders: fc.array(cafeOrder, { minLength: 1, maxLength: 3 }),
  strayPoison,
});

const inventoryWorkload: fc.Arbitrary<WorkloadSpec> = fc.record({
  kind: fc.constant('inventory' as const),
  skus: fc.array(inventorySku, { minLength: 1, maxLength: 2 }),
  strayPoison,
});

/** The deadlines an invocation may start with: plenty, less than the side-effect margin (5 s), less than the commit margin, none. */
const remainingChoices = [30_000, 30_000, 30_000, 30_000, 8_000, 4_000, 150, 0] as const;

function killArbitrary(target: KillPoint | undefined): fc.Arbitrary<Kill | undefined> {
  if (target !== undefined) return fc.constant(target === 'response' ? { afterReturn: true as const } : { before: target });
  return sometimes(
    fc.oneof(
      { weight: 3, arbitrary: fc.record({ afterCalls: fc.integer({ min: 0, max: 12 }) }) },
      { weight: 3, arbitrary: fc.record({ before: fc.constantFrom(...killPoints.filter((point) => point !== 'response')) }) },
      { weight: 1, arbitrary: fc.constant({ afterReturn: true as const }) },
    ),
    0.3,
  );
}

const faultArbitrary: fc.Arbitrary<Fault> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ call: fc.integer({ min: 0, max: 12 }), kind: fc.constantFrom(...faultKinds) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      at: fc.constantFrom(...killPoints.filter((point) => point !== 'response')),
      kind: fc.constantFrom(...faultKinds),
    }),
  },
);

function invocationArbitrary(target: KillPoint | undefined): fc.Arbitrary<InvocationPlan> {
  if (target !== undefined) {
    // Aimed at one await point: nothing else that could keep the invocation from reaching it.
    return fc.record({
      environment: fc.integer({ min: 0, max: 2 }),
      remainingMs: fc.constant(30_000),
      callCostMs: fc.constant(0),
      kill: killArbitrary(target) as fc.Arbitrary<Kill>,
      faults: fc.constant(target === 'side-effect release' ? [{ at: 'side effect' as const, kind: 'conflict' as const }] : []),
    });
  }
  return fc.record(
    {
      environment: fc.integer({ min: 0, max: 2 }),
      remainingMs: fc.constantFrom(...remainingChoices),
      callCostMs: fc.constantFrom(0, 0, 0, 10, 500, 2_000),
      kill: killArbitrary(target),
      faults: fc.array(faultArbitrary, { maxLength: 3 }),
      overlap: sometimes(
        fc.record({
          atCall: fc.integer({ min: 0, max: 6 }),
          redeliver: fc.boolean(),
          resume: fc.constantFrom('after' as const, 'during' as const),
        }),
        0.15,
      ),
      acknowledgementLost: sometimes(fc.constant(true as const), 0.08),
    },
    { requiredKeys: ['environment', 'remainingMs', 'callCostMs', 'faults'] },
  );
}

/** A café workload that reaches every await point: a payment, an order whose `OrderPlaced` is poison (its successors wait, then run out of attempts), a stray poison body. */
const targetedWorkload: WorkloadSpec = {
  kind: 'cafe',
  orders: [
    { path: 'paid', points: 10, duplicates: [1] },
    { path: 'paid', points: 20, duplicates: [], poisonAt: 0, poisonKind: 'bad-field' },
  ],
  strayPoison: ['not-json'],
};

/** The await points of the park of out-of-order messages: a schedule aimed at one parks (standard queue). */
const parkPoints: readonly KillPoint[] = [KillPoint.parkRead, KillPoint.parkWrite, KillPoint.parkRelease, KillPoint.parkedDelete];

/** An inventory workload whose over-reservation is refused (`OutOfStock`): the snapshot read before a business-rule dead letter. */
const targetedSnapshotWorkload: WorkloadSpec = {
  kind: 'inventory',
  skus: [{ slack: 1, reservations: [{ quantity: 2, released: false }], restock: 0, overReserve: true, duplicates: [] }],
  strayPoison: [],
};

/**
 * Fault schedules for one event source, as a fast-check arbitrary (it shrinks toward fewer
 * orders, events, invocations and faults).
 */
export function scheduleArbitrary(options: ScheduleArbitraryOptions): fc.Arbitrary<Schedule> {
  const consumers = options.consumers ?? proveConsumers;
  const choice = options.workload ?? 'examples';
  const examples = consumers.map((consumer) => ({ weight: 1, arbitrary: consumer === 'cafe' ? cafeWorkload : inventoryWorkload }));
  const generated = {
    weight: Math.max(1, examples.length),
    arbitrary: generatedWorkloadArbitrary(options.source, options.inboxHome ?? 'mixed') as fc.Arbitrary<WorkloadSpec>,
  };
  const workload =
    options.target !== undefined
      ? fc.constant(options.target === 'snapshot' ? targetedSnapshotWorkload : targetedWorkload)
      : fc.oneof(...(choice === 'examples' ? examples : choice === 'generated' ? [generated] : [...examples, generated]));
  const parkTarget = options.target !== undefined && parkPoints.includes(options.target);
  return fc.record({
    version: fc.constant(1 as const),
    source: fc.constant(options.source),
    workload,
    sendOrder: fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 20 }),
    // Generated consumers often get small batches: an item's events then spread over invocations and execution environments.
    // Aimed at the park: small batches, so that a successor and its predecessor come in different invocations.
    batchSize: parkTarget
      ? fc.integer({ min: 1, max: 2 })
      : choice === 'examples'
        ? fc.integer({ min: 1, max: 10 })
        : fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 10 })),
    environments: fc.integer({ min: 1, max: 3 }),
    kafka: fc.record({ partitions: fc.integer({ min: 1, max: 3 }), retryReading: fc.constantFrom(...kafkaRetryReadings) }),
    receiveSeed: fc.integer({ min: 0, max: 1_000_000 }),
    staleReceiptDeletes: fc.boolean(),
    invocations: fc
      .array(invocationArbitrary(options.target), {
        minLength: options.target !== undefined ? 12 : 0,
        maxLength: options.target !== undefined ? 16 : 12,
      })
      // A lock's record is read only when another invocation left the lock: every other invocation crashes after taking one.
      .map((plans) =>
        options.target === 'side-effect record read'
          ? plans.map((plan, i) => (i % 2 === 0 ? { ...plan, kill: { before: 'side effect' as const } } : plan))
          : plans,
      ),
    // Last, so that the fields before it draw what they drew before it existed. Half the standard-queue schedules park.
    ...(options.source === 'sqs'
      ? {
          parkOutOfOrder: parkTarget
            ? fc.constant(true)
            : options.parkOutOfOrder !== undefined
              ? fc.constant(options.parkOutOfOrder)
              : fc.boolean(),
        }
      : {}),
    // After everything else: without a switch, a run draws what it drew before switches existed.
    ...(options.homeSwitch !== undefined && options.homeSwitch !== 'none' && options.target === undefined
      ? { homeSwitch: homeSwitchArbitrary(options.homeSwitch) }
      : {}),
  });
}

/** A schedule file or text that cannot be replayed; the message says what is wrong. */
export class ScheduleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScheduleError';
  }
}

/**
 * Reads a schedule (as printed by a failing run) and checks its shape, so that a replay of a
 * hand-edited file fails with a clear message instead of a confusing run.
 *
 * @throws ScheduleError naming the first field that is wrong
 */
export function parseSchedule(value: unknown): Schedule {
  const fail = (path: string, expected: string): never => {
    throw new ScheduleError(`schedule.${path} must be ${expected}`);
  };
  const object = (v: unknown, path: string): Record<string, unknown> => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(path, 'an object');
    return v as Record<string, unknown>;
  };
  const int = (v: unknown, path: string, min: number, max: number): number => {
    if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) fail(path, `an integer from ${min} to ${max}`);
    return v as number;
  };
  const oneOf = <T extends string>(v: unknown, path: string, choices: readonly T[]): T => {
    if (!choices.includes(v as T)) fail(path, `one of ${choices.join(', ')}`);
    return v as T;
  };
  const list = (v: unknown, path: string): unknown[] => {
    if (!Array.isArray(v)) fail(path, 'a list');
    return v as unknown[];
  };
  const s = object(value, '(root)');
  if (s.version !== 1) fail('version', '1');
  oneOf(s.source, 'source', proveSources);
  const workload = object(s.workload, 'workload');
  oneOf(workload.kind, 'workload.kind', ['cafe', 'inventory', 'generated'] as const);
  if (workload.kind === 'generated') {
    try {
      checkGeneratedSpec(workload, 'workload');
    } catch (error) {
      if (error instanceof GeneratedSpecError) fail(error.path.replace(/^workload/, 'workload'), error.expected);
      throw error;
    }
  }
  list(workload.strayPoison, 'workload.strayPoison').forEach((kind, i) => oneOf(kind, `workload.strayPoison[${i}]`, poisonKinds));
  const checkPoison = (spec: Record<string, unknown>, path: string) => {
    if (spec.poisonAt !== undefined) int(spec.poisonAt, `${path}.poisonAt`, 0, 10);
    if (spec.poisonKind !== undefined) oneOf(spec.poisonKind, `${path}.poisonKind`, poisonKinds);
    list(spec.duplicates, `${path}.duplicates`).forEach((d, i) => int(d, `${path}.duplicates[${i}]`, 0, 10));
  };
  if (workload.kind === 'generated') {
    // checked above
  } else if (workload.kind === 'cafe') {
    list(workload.orders, 'workload.orders').forEach((o, i) => {
      const order = object(o, `workload.orders[${i}]`);
      oneOf(order.path, `workload.orders[${i}].path`, cafePaths);
      int(order.points, `workload.orders[${i}].points`, 0, 1_000_000);
      checkPoison(order, `workload.orders[${i}]`);
    });
  } else {
    list(workload.skus, 'workload.skus').forEach((k, i) => {
      const sku = object(k, `workload.skus[${i}]`);
      int(sku.slack, `workload.skus[${i}].slack`, 0, 1000);
      int(sku.restock, `workload.skus[${i}].restock`, 0, 1000);
      if (typeof sku.overReserve !== 'boolean') fail(`workload.skus[${i}].overReserve`, 'true or false');
      list(sku.reservations, `workload.skus[${i}].reservations`).forEach((r, j) => {
        const reservation = object(r, `workload.skus[${i}].reservations[${j}]`);
        int(reservation.quantity, `workload.skus[${i}].reservations[${j}].quantity`, 1, 100);
        if (typeof reservation.released !== 'boolean') fail(`workload.skus[${i}].reservations[${j}].released`, 'true or false');
      });
      checkPoison(sku, `workload.skus[${i}]`);
    });
  }
  list(s.sendOrder, 'sendOrder').forEach((p, i) => int(p, `sendOrder[${i}]`, 0, 1_000_000));
  int(s.batchSize, 'batchSize', 1, 10);
  int(s.environments, 'environments', 1, 10);
  const kafka = object(s.kafka, 'kafka');
  int(kafka.partitions, 'kafka.partitions', 1, 10);
  oneOf(kafka.retryReading, 'kafka.retryReading', kafkaRetryReadings);
  int(s.receiveSeed, 'receiveSeed', 0, Number.MAX_SAFE_INTEGER);
  if (typeof s.staleReceiptDeletes !== 'boolean') fail('staleReceiptDeletes', 'true or false');
  if (s.parkOutOfOrder !== undefined && typeof s.parkOutOfOrder !== 'boolean') fail('parkOutOfOrder', 'true or false (or absent)');
  if (s.parkOutOfOrder === true && s.source !== 'sqs')
    fail('parkOutOfOrder', 'false or absent unless source is "sqs" (the park is for standard queues)');
  if (s.homeSwitch !== undefined) {
    const homeSwitch = object(s.homeSwitch, 'homeSwitch');
    oneOf(homeSwitch.direction, 'homeSwitch.direction', homeSwitchDirections);
    int(homeSwitch.at, 'homeSwitch.at', 0, 10_000);
    int(homeSwitch.overlap, 'homeSwitch.overlap', 0, 10_000);
  }
  list(s.invocations, 'invocations').forEach((p, i) => {
    const plan = object(p, `invocations[${i}]`);
    const at = `invocations[${i}]`;
    int(plan.environment, `${at}.environment`, 0, 100);
    int(plan.remainingMs, `${at}.remainingMs`, 0, 900_000);
    int(plan.callCostMs, `${at}.callCostMs`, 0, 900_000);
    list(plan.faults, `${at}.faults`).forEach((f, j) => {
      const fault = object(f, `${at}.faults[${j}]`);
      if (fault.at !== undefined) oneOf(fault.at, `${at}.faults[${j}].at`, killPoints);
      else int(fault.call, `${at}.faults[${j}].call`, 0, 10_000);
      oneOf(fault.kind, `${at}.faults[${j}].kind`, faultKinds);
    });
    if (plan.kill !== undefined) {
      const kill = object(plan.kill, `${at}.kill`);
      if ('afterCalls' in kill) int(kill.afterCalls, `${at}.kill.afterCalls`, 0, 10_000);
      else if ('before' in kill) oneOf(kill.before, `${at}.kill.before`, killPoints);
      else if (kill.afterReturn !== true) fail(`${at}.kill`, '{"afterCalls":n}, {"before":"<kill point>"} or {"afterReturn":true}');
    }
    if (plan.overlap !== undefined) {
      const overlap = object(plan.overlap, `${at}.overlap`);
      int(overlap.atCall, `${at}.overlap.atCall`, 0, 10_000);
      if (typeof overlap.redeliver !== 'boolean') fail(`${at}.overlap.redeliver`, 'true or false');
      oneOf(overlap.resume, `${at}.overlap.resume`, ['after', 'during'] as const);
    }
    if (plan.acknowledgementLost !== undefined && typeof plan.acknowledgementLost !== 'boolean')
      fail(`${at}.acknowledgementLost`, 'true or false');
  });
  return value as Schedule;
}
