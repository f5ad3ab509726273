/**
 * Fault injection for the local runtime and the tests: AWS SDK v3 middleware that makes a
 * client's calls fail as DynamoDB and SQS sometimes do, at given rates, from a seed.
 *
 * Kinds (`--fault <kind>=<rate>` on the command line):
 *
 * | kind | calls | error (HTTP status) |
 * |---|---|---|
 * | `throttle` | DynamoDB and SQS data calls | DynamoDB `ProvisionedThroughputExceededException` or `ThrottlingException` (400); SQS `RequestThrottled` (403) |
 * | `transaction-conflict` | DynamoDB `TransactWriteItems`, `TransactGetItems` / `PutItem`, `UpdateItem`, `DeleteItem` | `TransactionCanceledException` with one `TransactionConflict` reason (400) / `TransactionConflictException` (400) |
 * | `dynamodb-5xx` | DynamoDB data calls | `InternalServerError` (500) or `ServiceUnavailable` (503) |
 * | `sqs-5xx` | SQS data calls | `InternalFailure` (500) or `ServiceUnavailable` (503) |
 *
 * How:
 * - A fault is an HTTP response shaped as the service sends it, handed to the SDK's own
 *   deserializer, so the caller gets the SDK's exception class with `$metadata`, and the SDK's
 *   retry strategy sees it: faults are drawn **per attempt**, inside the SDK's retries, as a
 *   server's errors are (a throttled attempt is retried by the SDK with backoff; the caller sees
 *   the fault only when every attempt drew one, or for errors the SDK does not retry).
 * - **Before** the server: the request never leaves the process, so the store is unchanged
 *   (throttling and conflicts are always before: AWS applies nothing when it answers them).
 * - **After** the server (5xx only, a share `after` of them): the request is sent and applied,
 *   then its response is replaced by the 5xx: the ambiguous case where the write happened and
 *   the caller sees an error (the SDK's retry then sends it again).
 * - **Deterministic**: each attempt draws from SHA-256 of (seed, client, attempt number, kind), so
 *   the same seed and the same sequence of calls on a client give the same faults. Concurrent
 *   callers sharing a client may interleave differently from run to run; the rates hold.
 *
 * Sources: DynamoDB error handling (throttling, `TransactionConflict`, 5xx),
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html ;
 * SQS `RequestThrottled` and common errors,
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/CommonErrors.html
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { DeserializeHandlerOutput, DeserializeMiddleware } from '@smithy/types';
import { errorResponse, operationOf, serviceOf } from './aws/sdkMiddleware.js';
import type { LocalService, SdkClient, ServiceErrorShape } from './aws/sdkMiddleware.js';

/** The kinds of fault, as the `--fault` flag names them. */
export const faultKinds = ['throttle', 'transaction-conflict', 'dynamodb-5xx', 'sqs-5xx'] as const;

/** One kind of fault. */
export type FaultKind = (typeof faultKinds)[number];

/** The share of calls (0 to 1) that fail with each kind. A kind left out never fires. */
export type FaultRates = Partial<Record<FaultKind, number>>;

/** Options of `installFaults`. */
export interface FaultOptions {
  /** Per kind, the share of eligible attempts (0 to 1) that fail with it. */
  readonly rates: FaultRates;
  /** Seed of the draws: any safe integer. The same seed and calls give the same faults. */
  readonly seed: number;
  /**
   * The share (0 to 1) of 5xx faults injected **after** the server applied the request (the
   * caller sees an error although the write happened). Throttling and conflicts are always
   * injected before.
   * @default 0
   */
  readonly after?: number;
  /** Called for each fault injected (e.g. to count them in a report). */
  readonly onFault?: (fault: InjectedFault) => void;
}

/** A fault that was injected. */
export interface InjectedFault {
  readonly kind: FaultKind;
  readonly service: Exclude<LocalService, 'other'>;
  /** The operation, e.g. `TransactWriteItems`. */
  readonly operation: string;
  /** The error code the caller's SDK raised, e.g. `ProvisionedThroughputExceededException`. */
  readonly code: string;
  readonly statusCode: number;
  /** `before`: the server never saw the request; `after`: it applied it, the answer was replaced. */
  readonly when: 'before' | 'after';
  /** 1-based number of the attempt on this client. */
  readonly attempt: number;
}

/** What `installFaults` returns. */
export interface FaultInjector {
  /** Every fault injected so far, in order. */
  readonly injected: readonly InjectedFault[];
  /** Faults injected so far, per kind. */
  counts(): Record<FaultKind, number>;
  /** Stops injecting (the middleware stays, inert). */
  disable(): void;
}

/** A `--fault` flag that cannot be used; the message says why and what is accepted. */
export class FaultFlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FaultFlagError';
  }
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
  'ReceiveMessage',
  'DeleteMessage',
  'DeleteMessageBatch',
  'ChangeMessageVisibility',
  'ChangeMessageVisibilityBatch',
]);
const singleItemWrites = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);
const transactions = new Set(['TransactWriteItems', 'TransactGetItems']);
const marker = '[local fault injection]';

/**
 * Parses one `--fault` flag, `<kind>=<rate>`: a kind of {@link faultKinds} and a rate from 0 to 1.
 *
 * @example
 * parseFaultFlag('transaction-conflict=0.05'); // { kind: 'transaction-conflict', rate: 0.05 }
 * @throws FaultFlagError when the flag is not `<kind>=<rate>`, the kind is unknown or the rate is not a number from 0 to 1
 */
export function parseFaultFlag(flag: string): { readonly kind: FaultKind; readonly rate: number } {
  const match = /^\s*([a-z0-9-]+)\s*=\s*(\S+)\s*$/.exec(flag);
  const accepted = `Write <kind>=<rate> with a kind of ${faultKinds.join(', ')} and a rate from 0 to 1, e.g. --fault throttle=0.02.`;
  if (!match) throw new FaultFlagError(`--fault "${flag}" is not <kind>=<rate>. ${accepted}`);
  const [, kind = '', rateText = ''] = match;
  if (!(faultKinds as readonly string[]).includes(kind)) throw new FaultFlagError(`--fault "${flag}": unknown kind "${kind}". ${accepted}`);
  const rate = Number(rateText);
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(rateText) || !(rate >= 0 && rate <= 1)) {
    throw new FaultFlagError(`--fault "${flag}": the rate must be a number from 0 to 1, got "${rateText}". ${accepted}`);
  }
  return { kind: kind as FaultKind, rate };
}

/**
 * The rates of several `--fault` flags.
 *
 * @example
 * faultRatesFromFlags(['transaction-conflict=0.05', 'throttle=0.02']); // { 'transaction-conflict': 0.05, throttle: 0.02 }
 * @throws FaultFlagError for a flag `parseFaultFlag` refuses, or a kind given twice
 */
export function faultRatesFromFlags(flags: readonly string[]): FaultRates {
  const rates: Partial<Record<FaultKind, number>> = {};
  for (const flag of flags) {
    const { kind, rate } = parseFaultFlag(flag);
    if (rates[kind] !== undefined) throw new FaultFlagError(`--fault ${kind} is given twice; give each kind once.`);
    rates[kind] = rate;
  }
  return rates;
}

/**
 * Parses the `--seed` flag: an integer (negative allowed) within JavaScript's safe integers.
 *
 * @example
 * parseSeedFlag('7'); // 7
 * @throws FaultFlagError when the text is not such an integer
 */
export function parseSeedFlag(text: string): number {
  const seed = Number(text);
  if (!/^\s*-?\d+\s*$/.test(text) || !Number.isSafeInteger(seed)) {
    throw new FaultFlagError(`--seed "${text}" is not a whole number; give e.g. --seed 7 (the same seed repeats the same faults).`);
  }
  return seed;
}

/**
 * Adds fault injection to an AWS SDK v3 client (DynamoDB or SQS; other clients' calls pass).
 * Install it on the clients the consumer uses; each client draws its own sequence.
 *
 * @example
 * installFaults(dynamoDb, { rates: { throttle: 0.02, 'transaction-conflict': 0.05 }, seed: 7 });
 * @throws RangeError when a rate or `after` is outside 0..1, a kind is unknown, or the seed is not a safe integer
 */
export function installFaults<Input extends object, Output extends object>(
  client: SdkClient<Input, Output>,
  options: FaultOptions,
): FaultInjector {
  for (const [kind, rate] of Object.entries(options.rates)) {
    if (!(faultKinds as readonly string[]).includes(kind))
      throw new RangeError(`unknown fault kind "${kind}" (kinds: ${faultKinds.join(', ')})`);
    if (!(typeof rate === 'number' && rate >= 0 && rate <= 1))
      throw new RangeError(`the rate of ${kind} must be from 0 to 1, got ${String(rate)}`);
  }
  const after = options.after ?? 0;
  if (!(after >= 0 && after <= 1)) throw new RangeError(`after must be from 0 to 1, got ${after}`);
  if (!Number.isSafeInteger(options.seed)) throw new RangeError(`the seed must be a safe integer, got ${options.seed}`);

  const injected: InjectedFault[] = [];
  let attempts = 0;
  let enabled = true;

  const middleware: DeserializeMiddleware<Input, Output> = (next, context) => async (args) => {
    const service = serviceOf(context);
    const operation = operationOf(context);
    if (!enabled || service === 'other') return next(args);
    attempts += 1;
    const attempt = attempts;
    const draw = (stream: string) => drawFraction(options.seed, String(context.clientName), attempt, stream);
    const fault = chooseFault(service, operation, options.rates, draw, args.input);
    if (fault === undefined) return next(args);

    const when = fault.kind.endsWith('5xx') && draw('after') < after ? 'after' : 'before';
    if (when === 'after') await next(args);
    const record: InjectedFault = {
      kind: fault.kind,
      service,
      operation,
      code: fault.error.code,
      statusCode: fault.error.statusCode,
      when,
      attempt,
    };
    injected.push(record);
    options.onFault?.(record);
    return { response: errorResponse(service, fault.error), output: undefined } as unknown as DeserializeHandlerOutput<Output>;
  };

  client.middlewareStack.add(middleware, { step: 'deserialize', priority: 'low', name: `idempotentConsumerFaults${(injectorCount += 1)}` });
  return {
    injected,
    counts: () =>
      Object.fromEntries(faultKinds.map((kind) => [kind, injected.filter((fault) => fault.kind === kind).length])) as Record<
        FaultKind,
        number
      >,
    disable: () => {
      enabled = false;
    },
  };
}

/** Numbers the injectors, so that one client can carry several (each middleware needs its own name). */
let injectorCount = 0;

/** A fraction in [0, 1) from SHA-256 of the draw's coordinates. */
function drawFraction(seed: number, client: string, attempt: number, stream: string): number {
  return createHash('sha256').update(`${seed}\u0000${client}\u0000${attempt}\u0000${stream}`).digest().readUInt32BE(0) / 0x1_0000_0000;
}

/** The fault of this attempt, if any: the first kind in {@link faultKinds} order whose draw falls under its rate. */
function chooseFault(
  service: Exclude<LocalService, 'other'>,
  operation: string,
  rates: FaultRates,
  draw: (stream: string) => number,
  input: object,
): { kind: FaultKind; error: ServiceErrorShape } | undefined {
  const data = service === 'dynamodb' ? dynamoDbDataOperations.has(operation) : sqsDataOperations.has(operation);
  if (!data) return undefined;
  const fires = (kind: FaultKind) => (rates[kind] ?? 0) > 0 && draw(kind) < (rates[kind] ?? 0);
  const pick = <T>(stream: string, choices: readonly [T, ...T[]]): T => choices[Math.floor(draw(stream) * choices.length)] ?? choices[0];

  if (fires('throttle')) {
    const error: ServiceErrorShape =
      service === 'sqs'
        ? { statusCode: 403, code: 'RequestThrottled', message: `${marker} Request is throttled.` }
        : pick('throttle-code', [
            {
              statusCode: 400,
              code: 'ProvisionedThroughputExceededException',
              message: `${marker} The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.`,
            },
            {
              statusCode: 400,
              code: 'ThrottlingException',
              message: `${marker} Throughput exceeds the current capacity of your table or index.`,
            },
          ] as const);
    return { kind: 'throttle', error };
  }
  if (service === 'dynamodb' && (transactions.has(operation) || singleItemWrites.has(operation)) && fires('transaction-conflict')) {
    if (singleItemWrites.has(operation)) {
      return {
        kind: 'transaction-conflict',
        error: { statusCode: 400, code: 'TransactionConflictException', message: `${marker} Transaction is ongoing for the item` },
      };
    }
    const actions = Math.max(
      1,
      Array.isArray((input as { TransactItems?: unknown }).TransactItems)
        ? (input as { TransactItems: unknown[] }).TransactItems.length
        : 1,
    );
    const culprit = Math.floor(draw('conflict-item') * actions);
    const reasons = Array.from({ length: actions }, (_, index) =>
      index === culprit ? { Code: 'TransactionConflict', Message: `${marker} Transaction is ongoing for the item` } : { Code: 'None' },
    );
    return {
      kind: 'transaction-conflict',
      error: {
        statusCode: 400,
        code: 'TransactionCanceledException',
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
        members: { CancellationReasons: reasons },
      },
    };
  }
  const serverErrorKind: FaultKind = service === 'dynamodb' ? 'dynamodb-5xx' : 'sqs-5xx';
  if (fires(serverErrorKind)) {
    const error: ServiceErrorShape = pick('5xx-code', [
      {
        statusCode: 500,
        code: service === 'dynamodb' ? 'InternalServerError' : 'InternalFailure',
        message: `${marker} The request processing has failed because of an unknown error, exception or failure.`,
      },
      { statusCode: 503, code: 'ServiceUnavailable', message: `${marker} The service is unavailable. Please try again later.` },
    ] as const);
    return { kind: serverErrorKind, error };
  }
  return undefined;
}
