/**
 * The generated consumers' own errors, made from their specs as a user declares them:
 * `class OutOfStock extends NonRetryableError {}`, `class NotYet extends RetryableError {}`, or a
 * plain `Error` subclass that the consumer's `classifyError` dead-letters.
 *
 * @module
 */
import { type ErrorClassification, NonRetryableError, RetryableError } from 'idempotent-consumer';
import type { ThrowSpec } from './spec.js';

type ErrorClass = new (message: string) => Error;

const classes = new Map<string, ErrorClass>();

/** A class with this static `name` (what `new.target.name`, and so the error's `name`, reads). */
function named<T extends ErrorClass>(cls: T, name: string): T {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}

/** The error class a throw spec names (one class per kind and name, as a module declares it once). */
export function errorClass(spec: ThrowSpec): ErrorClass {
  const id = `${spec.kind}\u0000${spec.name}\u0000${spec.reason ?? ''}`;
  let cls = classes.get(id);
  if (cls !== undefined) return cls;
  const reason = spec.reason;
  switch (spec.kind) {
    case 'nonRetryable':
      cls = named(
        class extends NonRetryableError {
          constructor(message: string) {
            super(message, reason === undefined ? undefined : { reason });
          }
        },
        spec.name,
      );
      break;
    case 'retryable':
      cls = named(class extends RetryableError {}, spec.name);
      break;
    case 'classified':
    case 'unknown':
      cls = named(
        class extends Error {
          constructor(message: string) {
            super(message);
            this.name = spec.name;
          }
        },
        spec.name,
      );
      break;
  }
  classes.set(id, cls);
  return cls;
}

/** A new error of the spec's class. */
export function makeError(spec: ThrowSpec, message: string): Error {
  return new (errorClass(spec))(message);
}

/**
 * The consumer's `classifyError`: a `classified` error (by its name) is dead-lettered with its
 * reason; anything else is left to the library (retryable).
 */
export function classifierFor(throws: readonly ThrowSpec[]): ((error: unknown) => ErrorClassification | undefined) | undefined {
  const reasons = new Map(throws.filter((t) => t.kind === 'classified').map((t) => [t.name, t.reason ?? t.name]));
  if (reasons.size === 0) return undefined;
  return (error) => {
    const reason = error instanceof Error ? reasons.get(error.name) : undefined;
    return reason === undefined ? undefined : { retryable: false, reason };
  };
}
