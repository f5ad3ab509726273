/**
 * A scripted fake of the DynamoDB document client for the engine's unit tests (no server): it
 * answers each `send(command)` by the command's class name (`TransactWriteCommand`,
 * `BatchGetCommand`, `TransactGetCommand`, `PutCommand`…) from a queue of scripted answers, then
 * from a default answer, records every call, and throws errors shaped as the SDK throws them.
 * DynamoDB's own behaviour stays tested against DynamoDB Local (test/engine).
 *
 * @module
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Item } from '../../../packages/idempotent-consumer/src/types.js';

/** One command as sent. */
export interface Call {
  readonly name: string;
  // Command inputs are checked by their shape in the tests.
  readonly input: any;
}

/** An answer: the output to return, or a function of the input that returns it or throws. */
export type Answer = ((input: any, call: number) => unknown) | Error | Record<string, unknown>;

export class FakeDynamoDb {
  readonly calls: Call[] = [];
  readonly #queued = new Map<string, Answer[]>();
  readonly #defaults = new Map<string, Answer>();

  /** Answers the next calls of `name`, one answer each, in order. */
  next(name: string, ...answers: Answer[]): this {
    this.#queued.set(name, [...(this.#queued.get(name) ?? []), ...answers]);
    return this;
  }

  /** Answers every call of `name` that no queued answer takes. */
  always(name: string, answer: Answer): this {
    this.#defaults.set(name, answer);
    return this;
  }

  /** The inputs of the calls of `name`, in order. */
  inputs(name: string): any[] {
    return this.calls.filter((call) => call.name === name).map((call) => call.input);
  }

  /** The calls' class names, in order. */
  names(): string[] {
    return this.calls.map((call) => call.name);
  }

  async send(command: { constructor: { name: string }; input: unknown }): Promise<unknown> {
    const name = command.constructor.name;
    const count = this.calls.filter((call) => call.name === name).length;
    this.calls.push({ name, input: command.input });
    const queue = this.#queued.get(name);
    const answer = queue !== undefined && queue.length > 0 ? queue.shift()! : this.#defaults.get(name);
    if (answer === undefined) throw new Error(`the fake DynamoDB has no answer for ${name}`);
    if (answer instanceof Error) throw answer;
    if (typeof answer === 'function') return answer(command.input, count);
    return answer;
  }

  /** As the engine takes it. */
  get client(): DynamoDBDocumentClient {
    return this as unknown as DynamoDBDocumentClient;
  }
}

/** An error as the SDK throws it for a service exception. */
export function sdkError(name: string, message = name, extra: Record<string, unknown> = {}): Error {
  const error = new Error(message);
  error.name = name;
  return Object.assign(error, { $fault: 'client', $metadata: { httpStatusCode: 400 }, ...extra });
}

/** One cancellation reason, its item (if any) as a document. */
export interface Reason {
  readonly Code: string;
  readonly Message?: string;
  readonly Item?: Item;
}

/** A `TransactionCanceledException` with its reasons, items in AttributeValue form as the SDK gives them. */
export function cancelled(reasons: readonly Reason[]): Error {
  return sdkError(
    'TransactionCanceledException',
    `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
    {
      CancellationReasons: reasons.map((r) => ({
        Code: r.Code,
        ...(r.Message === undefined ? {} : { Message: r.Message }),
        ...(r.Item === undefined ? {} : { Item: marshall(r.Item) }),
      })),
    },
  );
}

/** A failed condition of a `PutItem`, with the item it found (`ReturnValuesOnConditionCheckFailure: ALL_OLD`). */
export function conditionalCheckFailed(item?: Item): Error {
  return sdkError('ConditionalCheckFailedException', 'The conditional request failed', item === undefined ? {} : { Item: marshall(item) });
}

/** A logger that records what it is told. */
export function recordingLogger(): { logger: Logger; lines: { level: string; message: string; extra: unknown }[] } {
  const lines: { level: string; message: string; extra: unknown }[] = [];
  const at =
    (level: string) =>
    (message: string, extra?: unknown): void => {
      lines.push({ level, message, extra });
    };
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger, lines };
}
