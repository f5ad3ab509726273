/**
 * Execution environments of the consumer under test, each with its own AWS SDK clients (and so
 * its own caches, as a Lambda execution environment has), and the per-invocation control of
 * those clients: every SDK attempt an invocation makes is counted and named (an await point of
 * the engine, see `killPoints.ts`), can be refused from a given point on (the invocation is
 * killed: nothing after it reaches the stores), can fail as AWS fails (throttling,
 * `TransactionConflict`, a 5xx before or after the server), costs time on the suite's clock
 * (so a deadline can pass mid-invocation), and can be paused while another invocation runs.
 *
 * Built on the local runtime's pieces: the strict DynamoDB layer (`installStrictDynamoDb`:
 * one action per item, transaction conflicts between requests in flight), the invocation guard
 * (`guardInvocations` + `createInvocationGuard`: the refusal itself), and the service-shaped
 * error responses of `sdkMiddleware.ts`, which the SDK's own deserializer turns into its own
 * exception classes. Faults are explicit per attempt (not drawn at a rate, as
 * `local/faultInjection.ts` does for a local run), so that a failing schedule shrinks to a
 * readable replay.
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import type {
  DeserializeHandlerOutput,
  DeserializeMiddleware,
  FinalizeRequestMiddleware,
  HandlerExecutionContext,
  RetryErrorInfo,
  RetryStrategyV2,
  RetryToken,
} from '@smithy/types';
import {
  createIdempotentConsumer,
  type IdempotentConsumerHandler,
  type IdempotentConsumerOptions,
  type OutcomeRecord,
} from 'idempotent-consumer';
import { Logger } from '@aws-lambda-powertools/logger';
import { currentInvocationGuard, guardInvocations, type InvocationGuard } from '@idempotent-consumer/local/internal';
import {
  type AnySdkClient,
  errorResponse,
  operationOf,
  type RawResponse,
  serviceOf,
  type ServiceErrorShape,
} from '@idempotent-consumer/local/internal';
import { installStrictDynamoDb } from '@idempotent-consumer/local/internal';
import { localClientConfig, localS3ClientConfig } from '@idempotent-consumer/local/internal';
import { type CallTargets, nameCall } from './killPoints.js';
import { type MetricPoint, RecordingMetrics } from './recordingMetrics.js';
import type { FaultKind, Kill } from './schedule.js';
import type { VirtualClock } from './virtualClock.js';

/** What the suite controls of one running invocation. */
export interface InvocationControl {
  readonly kill: Kill | undefined;
  /** Faults by attempt number (from 0). */
  readonly faults: ReadonlyMap<number, FaultKind>;
  /** Faults of the first attempt at an await point (taken when used). */
  readonly faultsAt: Map<string, FaultKind>;
  /** Milliseconds of the clock each attempt takes. */
  readonly callCostMs: number;
  /** Awaited before the attempt with this number goes out (once). */
  pause: { readonly call: number; readonly run: () => Promise<void> } | undefined;
  /** Attempts made so far (refused ones included). */
  calls: number;
  /** The await points of the attempts that went out, in order. */
  readonly seen: string[];
  /** The await point at which the invocation was stopped (killed, or its deadline passed). */
  stoppedAt: string | undefined;
  /** Faults injected. */
  injected: number;
}

const controls = new WeakMap<InvocationGuard, InvocationControl>();

/** Associates a running invocation (its guard) with its control. */
export function controlInvocation(guard: InvocationGuard, control: InvocationControl): void {
  controls.set(guard, control);
}

/** Answers an SDK call in this process instead of sending it (the simulated source queue's `ChangeMessageVisibilityBatch`, `DeleteMessage(Batch)`). */
export type CallInterceptor = (operation: string, input: Readonly<Record<string, unknown>>) => (() => RawResponse) | undefined;

/** Options of {@link EnvironmentPool}. */
export interface EnvironmentPoolOptions {
  readonly dynamoDbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly consumer: IdempotentConsumerOptions<never>;
  /** The consumer's Lambda environment (`lambdaEnvironment()`). */
  readonly environment: Readonly<Record<string, string>>;
  readonly targets: CallTargets;
  readonly clock: VirtualClock;
  readonly intercept?: CallInterceptor;
}

/**
 * What an environment's handler reported through its runtime options: every outcome (the
 * `observer` option) and every metric (a readable Powertools `Metrics`). An environment runs one
 * invocation at a time: the suite empties both before each.
 */
export interface InvocationRecords {
  readonly outcomes: OutcomeRecord[];
  readonly metrics: MetricPoint[];
}

/** One execution environment. */
export interface ExecutionEnvironment {
  readonly handler: IdempotentConsumerHandler;
  /** The deploy whose options it runs: 0 before any {@link EnvironmentPool.deploy}, then 1, 2, … */
  readonly generation: number;
  busy: boolean;
  readonly records: InvocationRecords;
  destroy(): void;
}

/** What every SDK attempt of an invocation costs on the suite's clock, in milliseconds (a DynamoDB or SQS round trip from Lambda). */
export const BASE_CALL_MS = 10;

const FAULT = Symbol('proveFault');
type FaultContext = HandlerExecutionContext & { [FAULT]?: FaultKind | undefined };
const silentLogger = new Logger({ serviceName: 'prove', logLevel: 'SILENT' });

/**
 * The pool of execution environments of one schedule. An environment that was killed or timed
 * out is replaced by a new one (cold caches), as Lambda replaces it.
 */
export class EnvironmentPool {
  readonly #options: EnvironmentPoolOptions;
  readonly #environments: (ExecutionEnvironment | undefined)[] = [];
  readonly #retired: ExecutionEnvironment[] = [];
  /** Environments created (cold starts). */
  created = 0;
  /** The options of the environments created from now on, and their generation. */
  #consumer: IdempotentConsumerOptions<never>;
  #generation = 0;

  constructor(options: EnvironmentPoolOptions) {
    this.#options = options;
    this.#consumer = options.consumer;
  }

  /** The generation of the latest deploy (0: none yet). */
  get generation(): number {
    return this.#generation;
  }

  /**
   * A deploy: the environments created from now on run `consumer`; those that exist keep their
   * options until {@link retire} (or until they are replaced), as Lambda keeps them for a while.
   */
  deploy(consumer: IdempotentConsumerOptions<never>): void {
    this.#consumer = consumer;
    this.#generation += 1;
  }

  /** Retires every environment of an earlier generation (one in flight finishes its invocation); returns how many. */
  retire(): number {
    let retired = 0;
    this.#environments.forEach((environment, index) => {
      if (environment !== undefined && environment.generation < this.#generation) {
        this.replace(index);
        retired += 1;
      }
    });
    return retired;
  }

  /** The environment at `index`, or another idle one when it is busy (Lambda scales out). */
  acquire(index: number): { readonly index: number; readonly environment: ExecutionEnvironment } {
    for (let i = index; ; i += 1) {
      const existing = this.#environments[i];
      if (existing === undefined) {
        const environment = this.#create();
        this.#environments[i] = environment;
        return { index: i, environment };
      }
      if (!existing.busy) return { index: i, environment: existing };
    }
  }

  /** Replaces the environment at `index` (after a timeout or crash); its clients live until {@link destroy}. */
  replace(index: number, environment?: ExecutionEnvironment): void {
    const old = this.#environments[index];
    // Already replaced (retired by a deploy while it ran): the environment in its place stays.
    if (environment !== undefined && old !== environment) return;
    if (old !== undefined) this.#retired.push(old);
    this.#environments[index] = undefined;
  }

  /** Destroys every client. */
  destroy(): void {
    for (const environment of [...this.#environments, ...this.#retired]) environment?.destroy();
  }

  #create(): ExecutionEnvironment {
    const { clock } = this.#options;
    const retryStrategy = new SuiteClockRetryStrategy(clock);
    const dynamoDb = new DynamoDBClient({ ...localClientConfig(this.#options.dynamoDbEndpoint), retryStrategy });
    const sqs = new SQSClient({ ...localClientConfig(this.#options.sqsEndpoint), retryStrategy });
    const s3 = new S3Client({ ...localS3ClientConfig(this.#options.sqsEndpoint), retryStrategy });
    installStrictDynamoDb(dynamoDb);
    for (const client of [dynamoDb, sqs, s3] as AnySdkClient[]) {
      guardInvocations(client);
      client.middlewareStack.add(controlMiddleware(this.#options.targets, clock), {
        step: 'finalizeRequest',
        priority: 'normal',
        name: 'proveControl',
      });
      client.middlewareStack.add(faultMiddleware(this.#options.intercept), { step: 'deserialize', priority: 'low', name: 'proveFaults' });
    }
    this.created += 1;
    const records: InvocationRecords = { outcomes: [], metrics: [] };
    const generation = this.#generation;
    const handler = createIdempotentConsumer(this.#consumer, {
      environment: this.#options.environment,
      clients: { dynamoDb, sqs, s3 },
      logger: silentLogger,
      observer: { onOutcome: (record) => records.outcomes.push(record) },
      metrics: new RecordingMetrics(records.metrics, { namespace: 'IdempotentConsumerProve', serviceName: 'prove' }),
      // The engine's pauses (waiting for a side-effect lock to expire) pass on the suite's clock.
      sleep: async (ms) => clock.advance(ms),
    });
    return {
      handler,
      generation,
      busy: false,
      records,
      destroy: () => {
        dynamoDb.destroy();
        sqs.destroy();
        s3.destroy();
      },
    };
  }
}

/** Counts and names each attempt, advances the clock, pauses, kills, and marks the attempt's fault. */
function controlMiddleware(targets: CallTargets, clock: VirtualClock): FinalizeRequestMiddleware<object, object> {
  return (next, context) => async (args) => {
    const guard = currentInvocationGuard();
    const control = guard === undefined ? undefined : controls.get(guard);
    // The strict layer's own DescribeTable is emulation machinery, not an await point of the engine.
    if (guard === undefined || control === undefined || context.commandName === 'DescribeTableCommand') return next(args);
    const point = nameCall(
      String(context.clientName ?? ''),
      String(context.commandName ?? ''),
      args.input as Record<string, unknown>,
      targets,
    );
    const call = control.calls;
    control.calls += 1;
    clock.advance(BASE_CALL_MS + control.callCostMs);
    const pause = control.pause;
    if (pause !== undefined && pause.call <= call) {
      control.pause = undefined;
      await pause.run();
    }
    const kill = control.kill;
    if (kill !== undefined && (('afterCalls' in kill && call >= kill.afterCalls) || ('before' in kill && kill.before === point)))
      guard.kill(`killed before ${point}`);
    if (guard.stopped) control.stoppedAt ??= point;
    else control.seen.push(point);
    let fault = control.faults.get(call);
    const atPoint = control.faultsAt.get(point);
    if (atPoint !== undefined && !guard.stopped) {
      control.faultsAt.delete(point);
      fault ??= atPoint;
    }
    (context as FaultContext)[FAULT] = guard.stopped ? undefined : fault;
    return next(args);
  };
}

/** Injects the attempt's fault, or answers an intercepted call; otherwise sends. */
function faultMiddleware(intercept: CallInterceptor | undefined): DeserializeMiddleware<object, object> {
  return (next, context) => async (args) => {
    const kind = (context as FaultContext)[FAULT];
    (context as FaultContext)[FAULT] = undefined;
    const service = serviceOf(context);
    const operation = operationOf(context);
    const input = args.input as Record<string, unknown>;
    const answer = intercept?.(operation, input);
    const send = async () => (answer !== undefined ? { response: answer(), output: undefined } : next(args));
    const error = kind === undefined || service === 'other' ? undefined : faultError(kind, service, operation, input);
    if (error === undefined) return send() as Promise<DeserializeHandlerOutput<object>>;
    const control = controlOf();
    if (control !== undefined) control.injected += 1;
    if (kind === '5xx-after') await send();
    return { response: errorResponse(service, error), output: undefined } as unknown as DeserializeHandlerOutput<object>;
  };
}

function controlOf(): InvocationControl | undefined {
  const guard = currentInvocationGuard();
  return guard === undefined ? undefined : controls.get(guard);
}

const dynamoDbDataOperations = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchGetItem',
  'BatchWriteItem',
  'TransactGetItems',
  'TransactWriteItems',
  'Query',
  'Scan',
]);
const sqsDataOperations = new Set([
  'SendMessage',
  'SendMessageBatch',
  'ChangeMessageVisibility',
  'ChangeMessageVisibilityBatch',
  'DeleteMessage',
  'DeleteMessageBatch',
  'GetQueueUrl',
]);
const marker = '[prove fault]';

/** The error an attempt fails with, shaped as the service sends it; `undefined` when the kind does not apply to the call. */
function faultError(
  kind: FaultKind,
  service: 'dynamodb' | 'sqs',
  operation: string,
  input: Readonly<Record<string, unknown>>,
): ServiceErrorShape | undefined {
  const data = service === 'dynamodb' ? dynamoDbDataOperations.has(operation) : sqsDataOperations.has(operation);
  if (!data) return undefined;
  switch (kind) {
    case 'throttle':
      return service === 'sqs'
        ? { statusCode: 403, code: 'RequestThrottled', message: `${marker} Request is throttled.` }
        : {
            statusCode: 400,
            code: 'ProvisionedThroughputExceededException',
            message: `${marker} The level of configured provisioned throughput for the table was exceeded.`,
          };
    case 'conflict': {
      if (service !== 'dynamodb') return undefined;
      if (operation === 'PutItem' || operation === 'UpdateItem' || operation === 'DeleteItem') {
        return { statusCode: 400, code: 'TransactionConflictException', message: `${marker} Transaction is ongoing for the item` };
      }
      if (operation !== 'TransactWriteItems' && operation !== 'TransactGetItems') return undefined;
      const actions = Array.isArray(input.TransactItems) ? input.TransactItems.length : 1;
      const reasons = Array.from({ length: Math.max(1, actions) }, (_, index) =>
        index === 0 ? { Code: 'TransactionConflict', Message: `${marker} Transaction is ongoing for the item` } : { Code: 'None' },
      );
      return {
        statusCode: 400,
        code: 'TransactionCanceledException',
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
        members: { CancellationReasons: reasons },
      };
    }
    case '5xx':
    case '5xx-after':
      return {
        statusCode: 500,
        code: service === 'dynamodb' ? 'InternalServerError' : 'InternalFailure',
        message: `${marker} The request processing has failed because of an unknown error.`,
      };
  }
}

/**
 * The SDK's standard retry decisions (3 attempts; throttling, transient and server errors are
 * retried, client errors are not) with the backoff delay spent on the suite's clock instead of
 * waited for: a retried call costs no real time, but the invocation's deadline comes closer.
 */
export class SuiteClockRetryStrategy implements RetryStrategyV2 {
  readonly #clock: VirtualClock;
  readonly #maxAttempts: number;

  constructor(clock: VirtualClock, maxAttempts = 3) {
    this.#clock = clock;
    this.#maxAttempts = maxAttempts;
  }

  async acquireInitialRetryToken(): Promise<RetryToken> {
    return token(0);
  }

  async refreshRetryTokenForRetry(previous: RetryToken, info: RetryErrorInfo): Promise<RetryToken> {
    const count = previous.getRetryCount();
    if (info.errorType === 'CLIENT_ERROR' || count + 1 >= this.#maxAttempts) throw info.error ?? new Error('not retried');
    const base = info.errorType === 'THROTTLING' ? 500 : 100;
    this.#clock.advance(Math.min(20_000, base * 2 ** count));
    return token(count + 1);
  }

  recordSuccess(): void {}
}

function token(count: number): RetryToken {
  return { getRetryCount: () => count, getRetryDelay: () => 0 };
}
