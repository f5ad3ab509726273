/**
 * Runs one fault schedule against the real handler, DynamoDB Local and the real dead-letter
 * queue, with the event source simulated in memory on the suite's clock:
 *
 * 1. **set-up**: the workload's set-up messages are applied without faults;
 * 2. **chaos**: the producer sends the run's messages in the schedule's order, and each planned
 *    invocation receives a batch as the event source would and runs with its faults (kills,
 *    deadlines, throttling, conflicts, 5xx, concurrent deliveries, lost acknowledgements);
 * 3. **heal**: invocations without faults until the source drains (the clock jumps over
 *    visibility timeouts and backoff delays);
 * 4. **redrive**: a dead letter `RetriesExhausted` of an event that applies (or fails for a
 *    reason of its own) in producer order — its predecessor came back too late, or faults used
 *    up its attempts — is redriven, as an operator would (marked `ic.redrive` with the dead
 *    letter's original message id, as `dlq redrive` marks it), and the source drained again
 *    (counted in the report); an event whose successors went on without it is not redriven
 *    (`Workload.redrivable`): the model takes it as dead-lettered where it stood;
 * 5. **checks** of every invariant against what is stored (`invariants.ts`);
 * 6. **replay**: every applied event is delivered again: nothing may change.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { FailureReason, type IdempotentConsumerOptions, type OutcomeRecord } from 'idempotent-consumer';
import { canonicalJson } from 'idempotent-consumer/internal';
import { kafkaRetryAttempts, lambdaEnvironment, maxReceiveCount, RECEIVE_ALLOWANCE, withOverrides } from 'idempotent-consumer/settings';
import type { KafkaEvent } from 'idempotent-consumer/kafka';
import { createInvocationGuard } from '@idempotent-consumer/local/internal';
import { errorResponse, type RawResponse } from '@idempotent-consumer/local/internal';
import { judgeBatchResponse } from '@idempotent-consumer/local/internal';
import { createLambdaContext } from '@idempotent-consumer/local/internal';
import { cafeWorkload } from './cafeWorkload.js';
import { type CallInterceptor, controlInvocation, EnvironmentPool, type InvocationControl } from './executionEnvironments.js';
import { generatedWorkload } from './generated/workload.js';
import { inventoryWorkload } from './inventoryWorkload.js';
import {
  checkInvariants,
  Invariant,
  inboxRecords,
  type MarkEvidence,
  type RecordShape,
  type SentMessage,
  type Violation,
} from './invariants.js';
import { checkInvocation } from './invocationChecks.js';
import { KillPoint } from './killPoints.js';
import type { ProveResources } from './ProveResources.js';
import type { HomeSwitch, InvocationPlan, Overlap, Schedule } from './schedule.js';
import { SimulatedKafkaTopic, type KafkaBatch } from './SimulatedKafkaTopic.js';
import { dynamoDbImageOf, SimulatedStreamShards, type StreamBatch, streamResponseProblem } from './SimulatedStreamShards.js';
import { SimulatedSqsQueue } from './SimulatedSqsQueue.js';
import {
  type DeadLetter,
  drainDeadLetters,
  type HomeMarks,
  print,
  readAttemptSkips,
  readHomeMarks,
  readInboxRows,
  readOutboxItems,
} from './storedState.js';
import type { VirtualClock } from './virtualClock.js';
import { type InputMessage, MessageRole, type ModelResult, type Workload } from './workload.js';

/** What every schedule of a run shares. */
export interface ProveEnvironment {
  readonly dynamoDbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly clock: VirtualClock;
  readonly resources: ProveResources;
  /** Clients of the checks (no faults, no guard). */
  readonly documentClient: DynamoDBDocumentClient;
  /** The plain client of the checks (reads values the document client cannot unmarshall). */
  readonly dynamoDb: DynamoDBClient;
  readonly sqs: SQSClient;
  /** Short tag of the run, in every id. */
  readonly runTag: string;
  /** A new number for each schedule (its ids). */
  nextScheduleNumber(): number;
  /** Receives a line per invocation (what it got, met and answered), when set. */
  readonly trace?: (line: string) => void;
}

/** Counts of one schedule. */
export interface ScheduleStats {
  invocations: number;
  /** Invocations stopped: killed at an await point, past their deadline, or their response lost. */
  stopped: number;
  faults: number;
  overlaps: number;
  acknowledgementsLost: number;
  coldStarts: number;
  deliveries: number;
  deadLetters: number;
  /** Dead letters of a message beyond its first (the DLQ is written at least once). */
  duplicateDeadLetters: number;
  /** Messages redriven to converge: dead letters `RetriesExhausted` of events that apply in producer order, and what the safety net took. */
  redriven: number;
  /** Messages the source's safety net took after crashes (the redrive policy moved them; the Kafka mapping gave up on them). */
  safetyNet: number;
  /** Runs of a side effect beyond the first, per effect key (absorbed downstream by its key). */
  repeatedEffectRuns: number;
  /** Schedules whose consumer parks out-of-order messages (`retry.parkOutOfOrder`): 1 or 0 per schedule. */
  parkingSchedules: number;
  /** Deliveries the consumer parked (retried outcomes with `parked: true`). */
  parked: number;
  /** Messages applied from the park (applied outcomes with `fromPark: true`): taken up by the invocation that applied their predecessor. */
  appliedFromPark: number;
  /** Outcomes decided from the park in all (applied, duplicate, dead-lettered, or still waiting). */
  decidedFromPark: number;
  /** Messages the consumer deleted from the source itself (parked ones settled from the park). */
  deletedFromPark: number;
  /** Schedules whose consumer keeps its inbox marks on home items (`inboxHome`): 1 or 0 per schedule. */
  homeSchedules: number;
  /** Applied marks on home items at the checks (each an applied event's record, instead of an inbox row). */
  homeMarks: number;
  /** Dead-lettered marks on home items at the checks. */
  homeDeadLetterMarks: number;
  /** Of a consumer with an inbox home: applied keys with an applied inbox row, though none of their messages was redriven. */
  homeAppliedRows: number;
  /** Of a consumer with an inbox home: applied keys with an applied inbox row after a redrive (the row a redrive writes beside its mark). */
  homeRedriveRows: number;
  /** Home items that are stubs at the checks (only their key, the version attribute and the marks). */
  homeStubs: number;
  /** Schedules with a deploy that switched `inboxHome` (`--switch`): 1 or 0 per schedule. */
  switchedSchedules: number;
  /** Of those, the schedules that turned it off (`off`, `off-removed`; the others turned it on). */
  switchedOff: number;
  /** Schedules drawn with a switch that did not switch: the in-order model depends on `inboxHome` (an event at a transaction's limit). */
  switchBlocked: number;
  /** Invocations that old execution environments ran after the deploy (the overlap). */
  switchOldInvocations: number;
  /** Before the replay: deliveries to environments of the new options of keys applied under the old ones. */
  switchCrossings: number;
  /** In the replay: deliveries, to the new options, of keys applied under the old ones. */
  switchReplayCrossings: number;
  /** Home items flagged as stubs that a consumer without inboxHome gave attributes (taken as items, not absent). */
  switchStaleStubs: number;
}

/** Counts all at zero. */
export function emptyStats(): ScheduleStats {
  return {
    invocations: 0,
    stopped: 0,
    faults: 0,
    overlaps: 0,
    acknowledgementsLost: 0,
    coldStarts: 0,
    deliveries: 0,
    deadLetters: 0,
    duplicateDeadLetters: 0,
    redriven: 0,
    safetyNet: 0,
    repeatedEffectRuns: 0,
    parkingSchedules: 0,
    parked: 0,
    appliedFromPark: 0,
    decidedFromPark: 0,
    deletedFromPark: 0,
    homeSchedules: 0,
    homeMarks: 0,
    homeDeadLetterMarks: 0,
    homeAppliedRows: 0,
    homeRedriveRows: 0,
    homeStubs: 0,
    switchedSchedules: 0,
    switchedOff: 0,
    switchBlocked: 0,
    switchOldInvocations: 0,
    switchCrossings: 0,
    switchReplayCrossings: 0,
    switchStaleStubs: 0,
  };
}

/** What one schedule did and found. */
export interface ScheduleResult {
  readonly violations: readonly Violation[];
  /** Input messages (set-up, events, duplicates, poison). */
  readonly messages: number;
  readonly stats: ScheduleStats;
  /** Await points the schedule's invocations met. */
  readonly seen: ReadonlySet<string>;
  /** Await points at which an invocation was stopped. */
  readonly killed: ReadonlySet<string>;
}

/** Most fault-free invocations to drain the source before it counts as not draining. */
const HEAL_LIMIT = 400;
/** Rounds of redriving exhausted events that apply in order. */
const REDRIVE_ROUNDS = 3;
/**
 * The SQS message attribute and Kafka record header that mark a redriven dead letter, with the
 * source id of the dead-lettered message as its value (what `dlq redrive` adds): only a redrive
 * applies a key the inbox holds as dead-lettered.
 */
export const REDRIVE_MARK = 'ic.redrive';
/** The clock between two invocations (the event source's poll and Lambda's invoke), in milliseconds. */
const BETWEEN_INVOCATIONS_MS = 20;

const clean = (environment: number): InvocationPlan => ({ environment, remainingMs: 30_000, callCostMs: 0, faults: [] });

/** A deploy that switches `inboxHome` in a running schedule (see `HomeSwitch`). */
interface SwitchRun {
  readonly plan: HomeSwitch;
  /** The options before the deploy (generation 0) and after it (generation 1). */
  readonly options: readonly [IdempotentConsumerOptions<never>, IdempotentConsumerOptions<never>];
  /** The records each generation's options write for an applied key. */
  readonly shapes: readonly [RecordShape, RecordShape];
  readonly names: readonly [string, string];
  deployed: boolean;
  retired: boolean;
  /** Invocations since the deploy. */
  sinceDeploy: number;
  /** Keys applied under the old options: stored at the deploy, or reported applied by an old environment. */
  readonly appliedOld: Set<string>;
  /** By key: the generations whose environments reported applying it. */
  readonly appliedBy: Map<string, Set<number>>;
}

/** The options of both sides of a deploy that switches `inboxHome` (the workload's options have it). */
function switchRun(plan: HomeSwitch, options: IdempotentConsumerOptions<never>, inboxTtlSeconds: number, nowMs: number): SwitchRun {
  const { inboxHome, ...rows } = options as IdempotentConsumerOptions<never> & { inboxHome: object };
  const window = inboxTtlSeconds * 1000;
  const marks = (rowsUntilMs: number | undefined, more: object = {}) =>
    ({
      ...rows,
      inboxHome: { ...inboxHome, ...(rowsUntilMs === undefined ? {} : { rowsUntil: new Date(rowsUntilMs) }), ...more },
    }) as never;
  const common = { plan, deployed: false, retired: false, sinceDeploy: 0, appliedOld: new Set<string>(), appliedBy: new Map() };
  switch (plan.direction) {
    case 'on':
      // Turning it on: rowsUntil one inbox window after the deploy.
      return {
        ...common,
        options: [rows as never, marks(nowMs + window)],
        shapes: ['row', 'both'],
        names: ['inbox rows', 'inboxHome with rowsUntil'],
      };
    case 'off':
      // Turning it off: rowsUntil at least one inbox window ahead, then marks: false (inboxHome kept, to hide its stubs and marks).
      return {
        ...common,
        options: [marks(nowMs + 2 * window), marks(undefined, { marks: false })],
        shapes: ['both', 'row'],
        names: ['inboxHome with rowsUntil', 'inboxHome with marks: false'],
      };
    case 'off-removed':
      return {
        ...common,
        options: [marks(nowMs + 2 * window), rows as never],
        shapes: ['both', 'row'],
        names: ['inboxHome with rowsUntil', 'inbox rows'],
      };
    case 'on-without-rows-until':
      return {
        ...common,
        options: [rows as never, marks(undefined)],
        shapes: ['row', 'mark'],
        names: ['inbox rows', 'inboxHome without rowsUntil'],
      };
  }
}

/** Runs `schedule`; never throws for a violation (it is in the result). */
export async function runSchedule(schedule: Schedule, env: ProveEnvironment): Promise<ScheduleResult> {
  const number = env.nextScheduleNumber();
  const prefix = `${env.runTag}-${number}`;
  const spec = schedule.workload;
  const workload =
    spec.kind === 'cafe'
      ? cafeWorkload(spec, prefix)
      : spec.kind === 'inventory'
        ? inventoryWorkload(spec, prefix)
        : generatedWorkload(spec, prefix, number);
  const run = new ScheduleRun(schedule, env, workload, `prove-${prefix}`);
  try {
    return await run.execute();
  } finally {
    run.dispose();
  }
}

/** A batch in flight, from either source. */
interface Batch {
  readonly event: SQSEvent | KafkaEvent | StreamBatch['event'];
  readonly ids: readonly string[];
  /** Per record: its FIFO message group or Kafka partition (`undefined` on a standard queue). */
  readonly scopes: readonly (string | undefined)[];
  readonly kafka?: KafkaBatch;
  readonly stream?: StreamBatch;
  readonly records?: readonly SQSRecord[];
}

/** The event source of a schedule. */
interface Source {
  /** Sends a message; `redriveOf`: it redrives the dead letter of that source id (marked `ic.redrive`, as `dlq redrive` marks it). */
  send(message: InputMessage, id: string, redriveOf?: string): string;
  readonly drained: boolean;
  readonly remaining: number;
  readonly deliveries: number;
  /** The next batch; with `wait`, the clock jumps to the next message in flight when nothing is receivable now. */
  take(batchSize: number, wait: boolean): Batch | undefined;
  redeliver(batch: Batch): void;
  /** Acknowledges after a returned response; returns a contract problem of the response, if any, and the ids reported failed. */
  settle(
    batch: Batch,
    outcome: { kind: 'returned'; response: unknown } | { kind: 'failed' },
    acknowledgementLost: boolean,
  ): { problem: string | undefined; failed: readonly string[] };
  readonly policyMoves: readonly string[];
  readonly gaveUp: readonly string[];
  /** Messages the consumer deleted itself (`DeleteMessage(Batch)`: parked messages settled from the park); 0 but on SQS. */
  readonly deletedByConsumer: number;
  readonly intercept?: CallInterceptor;
}

class ScheduleRun {
  readonly #schedule: Schedule;
  readonly #env: ProveEnvironment;
  readonly #workload: Workload;
  readonly #consumerName: string;
  readonly #violations: Violation[] = [];
  readonly #sent: SentMessage[] = [];
  readonly #chaos: InvocationPlan[];
  readonly #background: Promise<unknown>[] = [];
  readonly #seen = new Set<string>();
  readonly #killed = new Set<string>();
  readonly #stats: ScheduleStats = emptyStats();
  #source!: Source;
  #pool!: EnvironmentPool;
  #replaying = false;
  /** By source id: deliveries that may have been attempts. */
  readonly #possibleAttempts = new Map<string, number>();
  /** By source id: deliveries to an invocation that was stopped (killed, timed out, response lost). */
  readonly #crashed = new Map<string, number>();
  /** By source id: receives the consumer recorded as not attempts (its attempt log's skips, SQS; its reported outcomes, Kafka). */
  #recordedSkips = new Map<string, number>();
  /** By source id: Kafka deliveries the consumer reported as batch item failures without attempting them (`countsAsAttempt: false`). */
  readonly #kafkaSkips = new Map<string, number>();
  #maxAttempts = 0;
  #resources!: Awaited<ReturnType<ProveResources['get']>>;
  /** The deploy that switches `inboxHome`, when this schedule has one that runs. */
  #switch: SwitchRun | undefined;

  constructor(schedule: Schedule, env: ProveEnvironment, workload: Workload, consumerName: string) {
    this.#schedule = schedule;
    this.#env = env;
    this.#workload = workload;
    this.#consumerName = consumerName;
    this.#chaos = [...schedule.invocations];
  }

  dispose(): void {
    this.#pool?.destroy();
  }

  async execute(): Promise<ScheduleResult> {
    const schedule = this.#schedule;
    const workload = this.#workload;
    let model: ModelResult = workload.model(schedule.source);
    const shared = await this.#env.resources.get(
      schedule.source,
      workload.consumer,
      schedule.workload.kind === 'generated' ? {} : workload.tables,
    );
    const tables =
      schedule.workload.kind === 'generated' ? await this.#env.resources.generatedTables(schedule.workload.tables) : shared.tables;
    this.#resources = { ...shared, tables };
    const resources = this.#resources;
    const settings = withOverrides({
      consumerName: this.#consumerName,
      queue: { fifo: schedule.source === 'fifo' },
      function: { batchSize: schedule.batchSize },
      kafka: { batchSize: schedule.batchSize, topic: workload.consumer },
      ...(schedule.parkOutOfOrder === true ? { retry: { parkOutOfOrder: true } } : {}),
    });
    if (schedule.parkOutOfOrder === true) this.#stats.parkingSchedules = 1;
    if (workload.inboxHome !== undefined) this.#stats.homeSchedules = 1;
    if (schedule.homeSwitch !== undefined && workload.inboxHome !== undefined && workload.homeSwitchBlocker !== undefined) {
      const blocker = workload.homeSwitchBlocker(schedule.source);
      if (blocker === undefined) {
        this.#switch = switchRun(schedule.homeSwitch, workload.options, settings.idempotency.inboxTtlSeconds, this.#env.clock.now());
        this.#stats.switchedSchedules = 1;
        if (schedule.homeSwitch.direction.startsWith('off')) this.#stats.switchedOff = 1;
      } else {
        this.#stats.switchBlocked = 1;
        this.#env.trace?.(`no inboxHome switch: the in-order model depends on inboxHome (${blocker})`);
      }
    }
    this.#env.trace?.(
      `schedule ${this.#consumerName}: ${schedule.source}, ${schedule.workload.kind} workload, batch size ${schedule.batchSize}, ` +
        `${schedule.environments} environment(s), ${schedule.invocations.length} chaos invocation(s)` +
        (schedule.source === 'sqs' || schedule.source === 'fifo'
          ? `, stale receipt handles ${schedule.staleReceiptDeletes ? 'delete' : 'do not delete'}${schedule.parkOutOfOrder === true ? ', parkOutOfOrder' : ''}`
          : schedule.source === 'kafka'
            ? `, ${schedule.kafka.partitions} partition(s), ${schedule.kafka.retryReading}`
            : ''),
    );
    this.#maxAttempts = settings.retry.maxAttempts;
    this.#source =
      schedule.source === 'kafka'
        ? this.#kafkaSource(kafkaRetryAttempts(settings))
        : schedule.source === 'kinesis' || schedule.source === 'dynamodb-streams'
          ? // The stream mappings' retries leave the same room as Kafka's (maxAttempts × batchSize − 1 + 5).
            this.#streamSource(schedule.source, kafkaRetryAttempts(settings))
          : this.#sqsSource(maxReceiveCount(settings), settings.queue.visibilityTimeoutSeconds);
    this.#pool = new EnvironmentPool({
      dynamoDbEndpoint: this.#env.dynamoDbEndpoint,
      sqsEndpoint: this.#env.sqsEndpoint,
      consumer: this.#switch?.options[0] ?? workload.options,
      environment: lambdaEnvironment(settings, resources),
      targets: {
        inboxTable: resources.inboxTable,
        idempotencyTable: resources.idempotencyTable,
        businessTables: new Set(Object.values(resources.tables)),
        deadLetterQueueUrl: resources.deadLetterQueueUrl,
      },
      clock: this.#env.clock,
      ...(this.#source.intercept === undefined ? {} : { intercept: this.#source.intercept }),
    });

    // 1. Set-up, without faults.
    for (const message of workload.messages.filter((m) => m.role === MessageRole.Setup)) this.#send(message, message.id);
    await this.#heal();
    // 2. Chaos.
    for (const message of this.#sendOrder(workload.messages.filter((m) => m.role !== MessageRole.Setup))) this.#send(message, message.id);
    for (let i = 0; this.#chaos.length > 0; i += 1) {
      if (i === this.#switch?.plan.at) await this.#deploy();
      const plan = this.#chaos.shift()!;
      if (!(await this.#invoke(plan, false))) break;
    }
    if (this.#switch !== undefined && !this.#switch.deployed) await this.#deploy();
    // 3. Heal.
    await this.#heal();
    let deadLetters = await this.#drainDeadLetters();
    // A key whose successors went on without it (no gate, on a source that keeps its order) is not
    // redriven when faults used up its attempts: the model takes it as dead-lettered where it stood.
    const forced = new Set(
      deadLetters.flatMap((letter) => {
        const key = this.#sent.find((s) => s.sourceId === letter.originalMessageId)?.input.key;
        return letter.reason === FailureReason.RetriesExhausted &&
          key !== undefined &&
          !workload.redrivable(key) &&
          !exhaustedInOrder(model, key)
          ? [key]
          : [];
      }),
    );
    if (forced.size > 0) model = workload.model(schedule.source, forced);
    // 4. Redrive what applies in order but ran out of attempts, and what the source's safety net
    // took after crashes (the redrive policy's moves; records the Kafka mapping gave up on).
    const excused = (sourceId: string) => (this.#crashed.get(sourceId) ?? 0) + (this.#recordedSkips.get(sourceId) ?? 0) > RECEIVE_ALLOWANCE;
    for (let round = 1; round <= REDRIVE_ROUNDS; round += 1) {
      await this.#readRecordedSkips();
      const redrive = deadLetters.filter((letter) => {
        if (letter.reason !== FailureReason.RetriesExhausted) return false;
        const sent = this.#sent.find((s) => s.sourceId === letter.originalMessageId);
        return sent?.input.key !== undefined && !exhaustedInOrder(model, sent.input.key) && workload.redrivable(sent.input.key);
      });
      const safetyNet = [...this.#source.policyMoves, ...this.#source.gaveUp].filter(
        (id) => excused(id) && !this.#sent.find((s) => s.sourceId === id)?.redriven,
      );
      if (redrive.length === 0 && safetyNet.length === 0) break;
      deadLetters = deadLetters.filter((letter) => !redrive.includes(letter));
      const again = [...redrive.map((letter) => letter.originalMessageId!), ...safetyNet];
      this.#stats.safetyNet += safetyNet.length;
      for (const id of again) {
        const sent = this.#sent.find((s) => s.sourceId === id)!;
        sent.redriven = true;
        this.#stats.redriven += 1;
        // Marked as a redrive of its dead letter (the original message's id), as `dlq redrive` marks it.
        this.#send(sent.input, `${sent.input.id}-r${round}-${this.#stats.redriven}`, id);
      }
      await this.#heal();
      deadLetters = [...deadLetters, ...(await this.#drainDeadLetters())];
    }

    // 5. Checks.
    await this.#readRecordedSkips();
    const keys = [...new Set(workload.messages.flatMap((m) => (m.key === undefined ? [] : [m.key])))];
    const home = workload.inboxHome;
    const readMarks = async (): Promise<HomeMarks | undefined> =>
      home === undefined
        ? undefined
        : readHomeMarks(
            this.#env.dynamoDb,
            home.homes.map((item) => ({ id: item.id, tableName: resources.tables[item.table]!, key: item.key })),
            home.attribute,
            home.versionAttribute,
            this.#consumerName,
          );
    const read = async () => ({
      inbox: await readInboxRows(this.#env.documentClient, resources.inboxTable, this.#consumerName, keys),
      marks: await readMarks(),
      outbox: await readOutboxItems(this.#env.documentClient, resources.inboxTable, this.#consumerName, keys, workload.outboxPositions),
      business: await workload.readStored({ document: this.#env.documentClient, dynamoDb: this.#env.dynamoDb }, resources.tables),
    });
    const stored = await read();
    // A consumer without inboxHome, or with `marks: false` (one side of the switch), updates a stub as any
    // item: the item keeps its flag and holds attributes; the engine takes it for the item it is (not absent).
    if (stored.marks !== undefined && this.#switch?.names.some((name) => name === 'inbox rows' || name.endsWith('marks: false')) === true)
      for (const [id, problem] of stored.marks.problems)
        if (problem.startsWith('it is flagged a stub (absent to decide) but holds attributes of its own')) {
          (stored.marks.problems as Map<string, string>).delete(id);
          this.#stats.switchStaleStubs += 1;
        }
    const marks: MarkEvidence | undefined =
      stored.marks === undefined
        ? undefined
        : {
            ...stored.marks,
            homeOf: (key) => home?.homeOf(key)?.id,
            nowMs: this.#env.clock.now(),
            inboxTtlSeconds: settings.idempotency.inboxTtlSeconds,
            ...(this.#switch === undefined ? {} : { switched: { allowed: (key: string) => this.#allowedShapes(key) } }),
          };
    const records = inboxRecords(stored.inbox, marks);
    if (marks !== undefined) this.#countHomeRecords(marks, stored.inbox, records);
    const checked = checkInvariants({
      workload,
      model,
      sent: this.#sent,
      inbox: stored.inbox,
      ...(marks === undefined ? {} : { marks }),
      outbox: stored.outbox,
      business: stored.business,
      deadLetters,
      policyMoves: this.#source.policyMoves,
      gaveUp: this.#source.gaveUp,
      remaining: this.#source.remaining,
      possibleAttempts: this.#possibleAttempts,
      excused,
      crashes: (sourceId) => (this.#crashed.get(sourceId) ?? 0) + (this.#recordedSkips.get(sourceId) ?? 0),
      maxAttempts: this.#maxAttempts,
      ...(schedule.source === 'dynamodb-streams' ? { deadLetterBody: (body: string) => JSON.stringify(dynamoDbImageOf(body)) } : {}),
    });
    const byOriginal = new Map<string, number>();
    for (const letter of deadLetters)
      byOriginal.set(letter.originalMessageId ?? '', (byOriginal.get(letter.originalMessageId ?? '') ?? 0) + 1);
    this.#stats.deadLetters = deadLetters.length;
    this.#stats.duplicateDeadLetters = [...byOriginal.values()].reduce((sum, n) => sum + n - 1, 0);
    this.#stats.repeatedEffectRuns = [...workload.effectRuns.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);

    // 6. Replay every applied event: nothing may change.
    const applied = keys.filter((key) => records.get(key)?.status === 'applied');
    if (applied.length > 0 && this.#source.drained) {
      this.#replaying = true;
      // The deploy is over: only environments of the new options remain.
      if (this.#switch !== undefined && !this.#switch.retired) {
        this.#pool.retire();
        this.#switch.retired = true;
      }
      const before = snapshot(stored);
      for (const key of applied) {
        const message = workload.messages.find((m) => m.key === key && m.role !== MessageRole.Poison)!;
        this.#send(message, `${message.id}-again`);
      }
      await this.#heal();
      const letters = await this.#drainDeadLetters();
      for (const letter of letters)
        this.#violate(
          Invariant.replayUnchanged,
          `delivering ${String(letter.originalMessageId)} again put it in the dead-letter queue as ${String(letter.reason)}`,
        );
      const after = snapshot(await read());
      for (const [id, value] of before) {
        if (after.get(id) !== value)
          this.#violate(
            Invariant.replayUnchanged,
            `delivering the applied events again changed ${id}: ${value.slice(0, 200)} → ${(after.get(id) ?? '(absent)').slice(0, 200)}`,
          );
      }
      for (const id of after.keys())
        if (!before.has(id)) this.#violate(Invariant.replayUnchanged, `delivering the applied events again created ${id}`);
      if (!this.#source.drained)
        this.#violate(Invariant.replayUnchanged, 'the source did not drain after the applied events were delivered again');
    }
    await Promise.allSettled(this.#background);
    this.#stats.coldStarts = this.#pool.created;
    this.#stats.deliveries = this.#source.deliveries;
    this.#stats.deletedFromPark = this.#source.deletedByConsumer;
    return {
      violations: dedupe([...this.#violations, ...checked]),
      messages: workload.messages.length,
      stats: this.#stats,
      seen: this.#seen,
      killed: this.#killed,
    };
  }

  /** Counts the inbox marks on home items and the applied keys whose record is an inbox row instead. */
  #countHomeRecords(
    marks: MarkEvidence,
    rows: ReadonlyMap<string, { status: string }>,
    records: ReadonlyMap<string, { status: string }>,
  ): void {
    for (const [home, entries] of marks.byHome) {
      for (const [key, mark] of entries) {
        if (marks.homeOf(key) !== home) continue;
        if (mark.status === 'applied') this.#stats.homeMarks += 1;
        else this.#stats.homeDeadLetterMarks += 1;
      }
    }
    this.#stats.homeStubs = marks.stubs.size;
    const redriven = new Set(this.#sent.flatMap((s) => (s.redriven && s.input.key !== undefined ? [s.input.key] : [])));
    // Under a switch, rows beside marks are what rowsUntil writes: not counted here.
    if (this.#switch !== undefined) return;
    for (const [key, record] of records) {
      if (record.status !== 'applied' || rows.get(key)?.status !== 'applied') continue;
      if (redriven.has(key)) this.#stats.homeRedriveRows += 1;
      else this.#stats.homeAppliedRows += 1;
    }
  }

  /**
   * The deploy: environments created from now on run the new options; the keys applied so far
   * (read from the inbox rows and marks) were applied under the old ones.
   */
  async #deploy(): Promise<void> {
    const run = this.#switch!;
    const keys = [...new Set(this.#workload.messages.flatMap((m) => (m.key === undefined ? [] : [m.key])))];
    const home = this.#workload.inboxHome!;
    const rows = await readInboxRows(this.#env.documentClient, this.#resources.inboxTable, this.#consumerName, keys);
    const marks = await readHomeMarks(
      this.#env.dynamoDb,
      home.homes.map((item) => ({ id: item.id, tableName: this.#resources.tables[item.table]!, key: item.key })),
      home.attribute,
      home.versionAttribute,
      this.#consumerName,
    );
    for (const [key, row] of rows) if (row.status === 'applied') run.appliedOld.add(key);
    for (const [homeId, entries] of marks.byHome)
      for (const [key, mark] of entries) if (mark.status === 'applied' && home.homeOf(key)?.id === homeId) run.appliedOld.add(key);
    this.#pool.deploy(run.options[1]);
    run.deployed = true;
    this.#env.trace?.(
      `deploy: ${run.names[0]} → ${run.names[1]} (old environments run ${run.plan.overlap} more invocation(s)); ${run.appliedOld.size} key(s) applied before it`,
    );
  }

  /** The record shapes an applied key may have under a switch, by the options it was (or may have been) applied under. */
  #allowedShapes(key: string): { shapes: ReadonlySet<RecordShape>; under: string } {
    const run = this.#switch!;
    const generations = run.appliedBy.get(key) ?? (run.appliedOld.has(key) ? new Set([0]) : new Set([0, 1]));
    return {
      shapes: new Set([...generations].map((g) => run.shapes[g]!)),
      under: [...generations].map((g) => run.names[g]).join(' or '),
    };
  }

  #violate(invariant: Invariant, detail: string): void {
    this.#violations.push({ invariant, detail });
  }

  #send(message: InputMessage, id: string, redriveOf?: string): void {
    const sourceId = this.#source.send(message, id, redriveOf);
    this.#sent.push({ sourceId, input: this.#asSent(message), redriven: false });
  }

  /**
   * The message as the consumer gets it. On a DynamoDB stream a message is an item: a poison body
   * that is not a JSON object is written as `{"body": "<text>"}` (`dynamoDbImageOf`), and the
   * consumer judges that item, not the text: one whose idempotency key is a field dead-letters it
   * as `MissingIdempotencyKey` (that check comes first); one with a `parse` function of its own
   * as what its `parse` throws for `{ body: text }` (a generated consumer: `UnknownMessageType`,
   * the item having no step); one with a schema as the schema's `ValidationError`.
   */
  #asSent(message: InputMessage): InputMessage {
    if (this.#schedule.source !== 'dynamodb-streams' || message.role !== MessageRole.Poison) return message;
    if (dynamoDbImageOf(message.body).body?.S !== message.body) return message;
    const { idempotencyKey, parse } = this.#workload.options;
    if (typeof idempotencyKey === 'string') return { ...message, expectedReason: FailureReason.MissingIdempotencyKey };
    if (typeof parse === 'function') {
      try {
        parse({ body: message.body });
      } catch (error) {
        if (error instanceof Error) return { ...message, expectedReason: error.name };
      }
    }
    return message;
  }

  /** The producer's order: the schedule's priorities; FIFO and Kafka keep each group's own order. */
  #sendOrder(messages: readonly InputMessage[]): InputMessage[] {
    const priorities = this.#schedule.sendOrder;
    const sorted = messages
      .map((message, i) => ({ message, priority: priorities[i] ?? 0, i }))
      .sort((a, b) => a.priority - b.priority || a.i - b.i);
    if (this.#schedule.source === 'sqs') return sorted.map(({ message }) => message);
    const queues = new Map<string, InputMessage[]>();
    for (const message of messages) queues.set(message.group, [...(queues.get(message.group) ?? []), message]);
    return sorted.map(({ message }) => queues.get(message.group)!.shift()!);
  }

  async #heal(): Promise<void> {
    const environments = Math.max(1, this.#schedule.environments);
    for (let i = 0; i < HEAL_LIMIT && !this.#source.drained; i += 1) {
      if (!(await this.#invoke(clean(i % environments), false))) break;
    }
  }

  /**
   * The receives each SQS message had that were not attempts, as the consumer recorded them (its
   * attempt log's skips: behind a failed message of its FIFO group, a side-effect lock held
   * elsewhere, too little time left). With the crashed deliveries the suite saw, they say whether
   * the source's safety net may take a message without a reason: the settings leave room for
   * `RECEIVE_ALLOWANCE` receives that are not attempts (`config/settings.ts`). The Kafka mapping
   * counts failing invocations per offset, which the consumer does not record in a store: there
   * the same skips are the records it reported as not attempted (its outcomes with
   * `countsAsAttempt: false`: too little time left, a batch that did not settle), as the suite saw
   * them, so a record's non-attempts count alike on every source.
   */
  async #readRecordedSkips(): Promise<void> {
    if (this.#countsInLog) {
      this.#recordedSkips = new Map(this.#kafkaSkips);
      return;
    }
    const ids = [...new Set(this.#sent.map((s) => s.sourceId))];
    this.#recordedSkips = await readAttemptSkips(this.#env.documentClient, this.#resources.inboxTable, this.#consumerName, ids);
  }

  async #drainDeadLetters(): Promise<DeadLetter[]> {
    return drainDeadLetters(this.#env.sqs, this.#resources.deadLetterQueueUrl);
  }

  /** Runs one invocation with `plan` on the next batch; `false` when there was nothing to deliver. */
  async #invoke(plan: InvocationPlan, nested: boolean): Promise<boolean> {
    // A concurrent invocation takes what is there now; it does not wait for the first one's messages.
    const batch = this.#source.take(this.#schedule.batchSize, !nested);
    if (batch === undefined) return false;
    const clock = this.#env.clock;
    const environments = Math.max(1, this.#schedule.environments);
    const switched = this.#switch;
    if (switched?.deployed === true && !switched.retired && switched.sinceDeploy >= switched.plan.overlap) {
      this.#pool.retire();
      switched.retired = true;
      this.#env.trace?.('deploy done: the old environments are retired');
    }
    const { index, environment } = this.#pool.acquire(plan.environment % environments);
    if (switched?.deployed === true) {
      switched.sinceDeploy += 1;
      if (environment.generation === 0) this.#stats.switchOldInvocations += 1;
    }
    environment.busy = true;
    this.#stats.invocations += 1;
    const deadline = clock.now() + plan.remainingMs;
    const guard = createInvocationGuard({ deadlineMs: deadline, now: clock.now });
    const kill = plan.kill !== undefined && !('afterReturn' in plan.kill) ? plan.kill : undefined;
    const control: InvocationControl = {
      kill,
      faults: new Map(plan.faults.flatMap((fault) => (fault.call === undefined ? [] : [[fault.call, fault.kind] as const]))),
      faultsAt: new Map(plan.faults.flatMap((fault) => (fault.at === undefined ? [] : [[fault.at, fault.kind] as const]))),
      callCostMs: plan.callCostMs,
      pause: undefined,
      calls: 0,
      seen: [],
      stoppedAt: undefined,
      injected: 0,
    };
    const overlap = plan.overlap;
    if (overlap !== undefined && !nested) control.pause = { call: overlap.atCall, run: () => this.#overlap(overlap, batch) };
    controlInvocation(guard, control);

    let outcome: { kind: 'returned'; response: unknown } | { kind: 'threw'; error: unknown };
    environment.records.outcomes.length = 0;
    environment.records.metrics.length = 0;
    try {
      const response = await guard.run(() =>
        environment.handler(batch.event as never, lambdaContext(plan.remainingMs, this.#consumerName, clock)),
      );
      const json = JSON.stringify(response);
      outcome = { kind: 'returned', response: json === undefined ? null : (JSON.parse(json) as unknown) };
    } catch (error) {
      outcome = { kind: 'threw', error };
    }
    environment.busy = false;
    for (const record of switched === undefined ? [] : environment.records.outcomes) {
      const key = this.#sent.find((s) => s.sourceId === record.messageId)?.input.key;
      if (key === undefined) continue;
      const generation = environment.generation;
      if (switched!.deployed && generation >= 1 && switched!.appliedOld.has(key)) {
        if (this.#replaying) this.#stats.switchReplayCrossings += 1;
        else this.#stats.switchCrossings += 1;
      }
      if (record.outcome !== 'applied') continue;
      switched!.appliedBy.set(key, (switched!.appliedBy.get(key) ?? new Set()).add(generation));
      if (generation === 0) switched!.appliedOld.add(key);
    }
    for (const record of environment.records.outcomes) {
      if (record.parked === true) this.#stats.parked += 1;
      if (record.fromPark === true) this.#stats.decidedFromPark += 1;
      if (record.fromPark === true && record.outcome === 'applied') this.#stats.appliedFromPark += 1;
    }
    for (const point of control.seen) this.#seen.add(point);
    this.#stats.faults += control.injected;
    const stopped = guard.stopped;
    if (control.stoppedAt !== undefined) {
      this.#seen.add(control.stoppedAt);
      this.#killed.add(control.stoppedAt);
    }
    const responseLost = plan.kill !== undefined && 'afterReturn' in plan.kill && outcome.kind === 'returned' && !stopped;
    if (outcome.kind === 'returned' && !stopped) this.#seen.add(KillPoint.response);
    if (responseLost) this.#killed.add(KillPoint.response);
    if (outcome.kind === 'threw' && !stopped) {
      this.#violate(
        Invariant.validResponse,
        `the handler threw: ${outcome.error instanceof Error ? `${outcome.error.name}: ${outcome.error.message}` : String(outcome.error)}`,
      );
    }
    this.#env.trace?.(
      `${this.#replaying ? 'replay ' : ''}invocation ${this.#stats.invocations} env ${index}${switched === undefined ? '' : ` (${switched.names[environment.generation]})`}${nested ? ' (concurrent)' : ''} t=${clock.now() - deadline + plan.remainingMs}ms ` +
        `[${batch.ids.join(' ')}] plan ${JSON.stringify(plan)} → ${stopped ? `stopped at ${String(control.stoppedAt)}` : responseLost ? 'response lost' : outcome.kind === 'returned' ? JSON.stringify(outcome.response) : 'threw'}; met ${control.seen.join(', ')}${parkTrace(environment.records.outcomes)}`,
    );
    let reported: ReadonlySet<string> = new Set();
    if (stopped || responseLost || outcome.kind === 'threw') {
      this.#stats.stopped += 1;
      this.#pool.replace(index, environment);
      this.#source.settle(batch, { kind: 'failed' }, false);
    } else {
      if (plan.acknowledgementLost === true) this.#stats.acknowledgementsLost += 1;
      const { problem, failed } = this.#source.settle(batch, outcome, plan.acknowledgementLost === true);
      reported = new Set(failed);
      if (problem !== undefined) this.#violate(Invariant.validResponse, problem);
      if (this.#countsInLog) {
        for (const record of environment.records.outcomes) {
          if (reported.has(record.messageId) && record.outcome === 'retried' && record.countsAsAttempt === false)
            this.#kafkaSkips.set(record.messageId, (this.#kafkaSkips.get(record.messageId) ?? 0) + 1);
        }
      }
      for (const violation of checkInvocation({
        batchIds: batch.ids,
        failed: reported,
        outcomes: environment.records.outcomes,
        metrics: environment.records.metrics,
        keyOf: (messageId) => this.#sent.find((s) => s.sourceId === messageId)?.input.key,
        attributable: this.#workload.attributableErrors,
        ownErrors: (key) => this.#workload.ownErrors(key),
      })) {
        this.#violate(violation.invariant, violation.detail);
      }
      if (this.#replaying && failed.length > 0)
        this.#violate(Invariant.replayUnchanged, `delivered again, ${failed.join(', ')} was reported as a batch item failure`);
    }
    // A delivery behind a reported message of its FIFO group or Kafka partition was not an attempt.
    const stoppedScopes = new Set<string>();
    const lost = stopped || responseLost || outcome.kind === 'threw';
    batch.ids.forEach((id, i) => {
      const scope = batch.scopes[i];
      const skipped = scope !== undefined && stoppedScopes.has(scope);
      if (lost) this.#crashed.set(id, (this.#crashed.get(id) ?? 0) + 1);
      if (skipped) return;
      this.#possibleAttempts.set(id, (this.#possibleAttempts.get(id) ?? 0) + 1);
      if (scope !== undefined && reported.has(id)) stoppedScopes.add(scope);
    });
    clock.advance(BETWEEN_INVOCATIONS_MS);
    if (!nested) {
      await Promise.allSettled(this.#background.splice(0));
    }
    return true;
  }

  /** A second invocation while `batch` is in flight (see `Overlap`). */
  async #overlap(overlap: Overlap, batch: Batch): Promise<void> {
    this.#stats.overlaps += 1;
    if (overlap.redeliver) this.#source.redeliver(batch);
    const plan = this.#chaos.shift() ?? clean(0);
    const other = this.#invoke(plan, true);
    if (overlap.resume === 'after') await other;
    else this.#background.push(other);
  }

  #sqsSource(maxReceives: number, visibilityTimeoutSeconds: number): Source {
    const fifo = this.#schedule.source === 'fifo';
    const queue = new SimulatedSqsQueue({
      fifo,
      queueArn: this.#resources.queueArn,
      visibilityTimeoutSeconds,
      maxReceiveCount: maxReceives,
      clock: this.#env.clock,
      seed: this.#schedule.receiveSeed,
      staleReceiptDeletes: this.#schedule.staleReceiptDeletes,
    });
    const queueUrl = this.#resources.queueUrl;
    const clock = this.#env.clock;
    return {
      send: (message, id, redriveOf) => {
        queue.send(id, message.body, message.group, redriveOf === undefined ? {} : { [REDRIVE_MARK]: redriveOf });
        return id;
      },
      get drained() {
        return queue.drained;
      },
      get remaining() {
        return queue.size;
      },
      get deliveries() {
        return queue.deliveries;
      },
      take: (batchSize, wait) => {
        let records = queue.receive(batchSize);
        // Nothing receivable now: wait (on the clock) for the next message in flight to come back.
        while (records.length === 0 && wait) {
          const next = queue.nextVisibleAt();
          if (next === undefined) return undefined;
          clock.advanceTo(next);
          records = queue.receive(batchSize);
        }
        if (records.length === 0) return undefined;
        return {
          event: { Records: records },
          ids: records.map((record) => record.messageId),
          scopes: records.map((record) => (fifo ? record.attributes.MessageGroupId : undefined)),
          records,
        };
      },
      redeliver: (batch) => queue.expireVisibility(batch.ids),
      settle: (batch, outcome, acknowledgementLost) => {
        if (outcome.kind === 'failed') return { problem: undefined, failed: batch.ids };
        const problem = sqsResponseProblem(outcome.response, batch.records!, fifo);
        const judgement = judgeBatchResponse({ kind: 'returned', response: outcome.response }, batch.ids);
        queue.acknowledge(batch.records!, new Set(judgement.failedIds), acknowledgementLost);
        return { problem, failed: judgement.failedIds };
      },
      get policyMoves() {
        return queue.moved.map((move) => move.messageId);
      },
      get deletedByConsumer() {
        return queue.deletedByConsumer;
      },
      gaveUp: [],
      intercept: (operation, input) => {
        if (input.QueueUrl !== queueUrl) return undefined;
        // The consumer's own deletes: parked messages another invocation settled (`retry.parkOutOfOrder`).
        if (operation === 'DeleteMessageBatch')
          return () => {
            const entries = (input.Entries as { Id: string; ReceiptHandle: string }[] | undefined) ?? [];
            const successful: { Id: string }[] = [];
            const failedEntries: { Id: string; SenderFault: boolean; Code: string; Message: string }[] = [];
            for (const entry of entries) {
              if (queue.deleteMessage(entry.ReceiptHandle) !== 'invalid') successful.push({ Id: entry.Id });
              else
                failedEntries.push({
                  Id: entry.Id,
                  SenderFault: true,
                  Code: 'ReceiptHandleIsInvalid',
                  Message: 'The receipt handle is not valid',
                });
            }
            return jsonResponse({ Successful: successful, Failed: failedEntries });
          };
        if (operation === 'DeleteMessage')
          return () =>
            queue.deleteMessage(String(input.ReceiptHandle)) === 'invalid'
              ? errorResponse('sqs', { statusCode: 400, code: 'ReceiptHandleIsInvalid', message: 'The receipt handle is not valid' })
              : jsonResponse({});
        if (operation !== 'ChangeMessageVisibilityBatch') return undefined;
        return () => {
          const entries = (input.Entries as { Id: string; ReceiptHandle: string; VisibilityTimeout: number }[] | undefined) ?? [];
          const successful: { Id: string }[] = [];
          const failedEntries: { Id: string; SenderFault: boolean; Code: string; Message: string }[] = [];
          for (const entry of entries) {
            if (queue.changeVisibility(entry.ReceiptHandle, entry.VisibilityTimeout)) successful.push({ Id: entry.Id });
            else
              failedEntries.push({
                Id: entry.Id,
                SenderFault: true,
                Code: 'ReceiptHandleIsInvalid',
                Message: 'The receipt handle is not the latest one of a message in flight',
              });
          }
          return jsonResponse({ Successful: successful, Failed: failedEntries });
        };
      },
    };
  }

  /** Whether the source has no receive count (Kafka, Kinesis, DynamoDB Streams): the consumer counts attempts in its log. */
  get #countsInLog(): boolean {
    return this.#schedule.source !== 'sqs' && this.#schedule.source !== 'fifo';
  }

  #streamSource(kind: 'kinesis' | 'dynamodb-streams', retryAttempts: number): Source {
    const shards = new SimulatedStreamShards({
      kind,
      name: this.#workload.consumer,
      // As many shards as the Kafka topic has partitions; each group keeps to one shard.
      shards: this.#schedule.kafka.partitions,
      batchSize: this.#schedule.batchSize,
      retryAttempts,
      clock: this.#env.clock,
    });
    return {
      send: (message, id, redriveOf) => shards.append(message.group, message.body, id, redriveOf),
      get drained() {
        return shards.drained;
      },
      get remaining() {
        return shards.lag;
      },
      get deliveries() {
        return shards.deliveries;
      },
      take: () => {
        const batch = shards.poll();
        if (batch === undefined) return undefined;
        return {
          event: batch.event,
          ids: batch.records.map((r) => r.eventId),
          scopes: batch.records.map((r) => r.shardId),
          stream: batch,
        };
      },
      redeliver: (batch) => shards.rebalance(batch.stream!),
      settle: (batch, outcome, acknowledgementLost) => {
        const records = batch.stream!.records;
        if (outcome.kind === 'failed') {
          shards.settle(batch.stream!, { kind: 'failed' }, false);
          return { problem: undefined, failed: batch.ids };
        }
        const problem = streamResponseProblem(
          outcome.response,
          records.map((r) => r.sequenceNumber),
        );
        shards.settle(batch.stream!, outcome, acknowledgementLost);
        const failures = (outcome.response as { batchItemFailures?: { itemIdentifier?: unknown }[] } | null)?.batchItemFailures ?? [];
        const reported = new Set(failures.map((f) => f.itemIdentifier));
        return { problem, failed: records.filter((r) => reported.has(r.sequenceNumber)).map((r) => r.eventId) };
      },
      policyMoves: [],
      deletedByConsumer: 0,
      get gaveUp() {
        return shards.gaveUp.map((r) => r.eventId);
      },
    };
  }

  #kafkaSource(retryAttempts: number): Source {
    const topic = new SimulatedKafkaTopic({
      topic: this.#workload.consumer,
      partitions: this.#schedule.kafka.partitions,
      batchSize: this.#schedule.batchSize,
      retryAttempts,
      retryReading: this.#schedule.kafka.retryReading,
      clock: this.#env.clock,
    });
    const groups: string[] = [];
    return {
      send: (message, _id, redriveOf) => {
        let group = groups.indexOf(message.group);
        if (group === -1) group = groups.push(message.group) - 1;
        const { partition, offset } = topic.append(
          message.group,
          message.body,
          group,
          redriveOf === undefined ? {} : { [REDRIVE_MARK]: redriveOf },
        );
        return `${topic.log.topic}-${partition}@${offset}`;
      },
      get drained() {
        return topic.drained;
      },
      get remaining() {
        return topic.lag;
      },
      get deliveries() {
        return topic.deliveries;
      },
      take: () => {
        const batch = topic.poll();
        if (batch === undefined) return undefined;
        return {
          event: batch.event,
          ids: batch.records.map((r) => `${r.topic}-${r.partition}@${r.offset}`),
          scopes: batch.records.map((r) => `${r.topic}-${r.partition}`),
          kafka: batch,
        };
      },
      redeliver: (batch) => topic.rebalance(batch.kafka!),
      settle: (batch, outcome, acknowledgementLost) => {
        if (outcome.kind === 'failed') {
          topic.settle(batch.kafka!, { kind: 'failed' }, false);
          return { problem: undefined, failed: batch.ids };
        }
        const problem = kafkaResponseProblem(outcome.response, batch.event as KafkaEvent);
        topic.settle(batch.kafka!, outcome, acknowledgementLost);
        const failures =
          (outcome.response as { batchItemFailures?: { itemIdentifier?: { partition?: string; offset?: number } }[] } | null)
            ?.batchItemFailures ?? [];
        return { problem, failed: failures.map((f) => `${String(f.itemIdentifier?.partition)}@${String(f.itemIdentifier?.offset)}`) };
      },
      policyMoves: [],
      deletedByConsumer: 0,
      get gaveUp() {
        return topic.gaveUp.map((r) => `${r.topic}-${r.partition}@${r.offset}`);
      },
    };
  }
}

/** The trace's note of what an invocation parked and decided from the park. */
function parkTrace(outcomes: readonly OutcomeRecord[]): string {
  const parked = outcomes.filter((record) => record.parked === true).map((record) => record.messageId);
  const taken = outcomes.filter((record) => record.fromPark === true).map((record) => `${record.messageId} ${record.outcome}`);
  return `${parked.length === 0 ? '' : `; parked ${parked.join(' ')}`}${taken.length === 0 ? '' : `; from the park: ${taken.join(', ')}`}`;
}

/**
 * Whether the model, too, has this key run out of attempts. A `RetriesExhausted` dead letter of
 * any other key (one that applies, or fails for a reason of its own, in producer order) ran out
 * waiting for its predecessor or by faults, and is redriven as an operator would.
 */
function exhaustedInOrder(model: ModelResult, key: string): boolean {
  const outcome = model.outcomes.get(key);
  return outcome?.kind === 'dead-lettered' && outcome.reason === FailureReason.RetriesExhausted;
}

function dedupe(violations: readonly Violation[]): Violation[] {
  const seen = new Set<string>();
  return violations.filter((v) => {
    const id = `${v.invariant}\u0000${v.detail}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** What is stored, as comparable prints by id. */
function snapshot(stored: {
  inbox: ReadonlyMap<string, unknown>;
  marks: HomeMarks | undefined;
  outbox: ReadonlyMap<string, unknown>;
  business: { items: ReadonlyMap<string, unknown>; effectRecords: ReadonlyMap<string, number> };
}): Map<string, string> {
  const prints = new Map<string, string>();
  for (const [key, row] of stored.inbox) prints.set(`inbox ${key}`, print(row));
  for (const [home, entries] of stored.marks?.byHome ?? [])
    for (const [key, mark] of entries) prints.set(`mark ${key} on ${home}`, print(mark));
  for (const [key, items] of stored.outbox) prints.set(`outbox ${key}`, print(items));
  for (const [id, item] of stored.business.items) prints.set(`item ${id}`, print(item));
  for (const [key, records] of stored.business.effectRecords) prints.set(`side effect ${key}`, String(records));
  return prints;
}

/** A Lambda context (the local runtime's) whose deadline is `remainingMs` from now on the suite's clock. */
function lambdaContext(remainingMs: number, functionName: string, clock: VirtualClock): Context {
  return createLambdaContext({
    functionName,
    region: 'us-east-1',
    accountId: '000000000000',
    timeoutSeconds: remainingMs / 1000,
    memorySizeMb: 1024,
    logStreamName: 'prove',
    now: clock.now,
  });
}

/** A JSON answer of the SQS service (AWS JSON 1.0). */
function jsonResponse(body: unknown): RawResponse {
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() },
    body: new TextEncoder().encode(JSON.stringify(body)),
  };
}

/**
 * What is wrong with an SQS partial batch response, per AWS's contract: exactly
 * `{"batchItemFailures":[{"itemIdentifier":"<messageId>"}…]}`, each a message of the batch, once;
 * on a FIFO queue, every message of a group after a reported one reported too.
 */
export function sqsResponseProblem(response: unknown, records: readonly SQSRecord[], fifo: boolean): string | undefined {
  if (response === null || typeof response !== 'object' || Array.isArray(response))
    return `the response is not an object: ${JSON.stringify(response)}`;
  const keys = Object.keys(response);
  if (canonicalJson(keys) !== '["batchItemFailures"]')
    return `the response has keys ${JSON.stringify(keys)}, not exactly "batchItemFailures"`;
  const failures = (response as { batchItemFailures: unknown }).batchItemFailures;
  if (!Array.isArray(failures)) return 'batchItemFailures is not a list';
  const ids = new Set(records.map((record) => record.messageId));
  const reported = new Set<string>();
  for (const failure of failures as unknown[]) {
    const entry = failure as { itemIdentifier?: unknown } | null;
    if (entry === null || typeof entry !== 'object' || canonicalJson(Object.keys(entry)) !== '["itemIdentifier"]')
      return `a batch item failure is not {"itemIdentifier":…}: ${JSON.stringify(failure)}`;
    if (typeof entry.itemIdentifier !== 'string' || !ids.has(entry.itemIdentifier))
      return `itemIdentifier ${JSON.stringify(entry.itemIdentifier)} is not a messageId of the batch`;
    if (reported.has(entry.itemIdentifier)) return `${entry.itemIdentifier} is reported twice`;
    reported.add(entry.itemIdentifier);
  }
  if (fifo) {
    const stopped = new Set<string>();
    for (const record of records) {
      const group = record.attributes.MessageGroupId ?? '';
      if (stopped.has(group) && !reported.has(record.messageId))
        return `FIFO: ${record.messageId} of group ${group} follows a reported message but is not reported`;
      if (reported.has(record.messageId)) stopped.add(group);
    }
  }
  return undefined;
}

/**
 * What is wrong with a Kafka partial batch response, per AWS's contract and case C12: each item
 * `{"itemIdentifier":{"partition":"<topic>-<partition>","offset":n}}` of a record of the batch,
 * and in each partition every record after a reported one reported too.
 */
export function kafkaResponseProblem(response: unknown, event: KafkaEvent): string | undefined {
  if (response === null || typeof response !== 'object' || Array.isArray(response))
    return `the response is not an object: ${JSON.stringify(response)}`;
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (!Array.isArray(failures)) return 'batchItemFailures is not a list';
  const reported = new Map<string, Set<number>>();
  for (const failure of failures as unknown[]) {
    const identifier = (failure as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)?.itemIdentifier;
    const partition = identifier?.partition;
    const offset = identifier?.offset;
    if (
      typeof partition !== 'string' ||
      typeof offset !== 'number' ||
      !(event.records[partition] ?? []).some((record) => record.offset === offset)
    ) {
      return `a batch item failure is not a record of the batch: ${JSON.stringify(failure)}`;
    }
    reported.set(partition, (reported.get(partition) ?? new Set()).add(offset));
  }
  for (const [partition, offsets] of reported) {
    const first = Math.min(...offsets);
    const missing = (event.records[partition] ?? []).filter((record) => record.offset > first && !offsets.has(record.offset));
    if (missing.length > 0)
      return `partition ${partition}: offsets ${missing.map((r) => r.offset).join(', ')} follow reported offset ${first} but are not reported`;
  }
  return undefined;
}
