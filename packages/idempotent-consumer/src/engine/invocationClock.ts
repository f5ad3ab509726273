import type { Context } from 'aws-lambda';
import type { InvocationClock } from './Unit.js';

/**
 * The clock of one invocation, with its Lambda context: each invocation carries its own through
 * the engine to the side-effect guard, so a process that serves several at once (Lambda Managed
 * Instances) never mixes their deadlines.
 */
export function invocationClock(context: Context): InvocationClock {
  return { remainingTimeMs: () => context.getRemainingTimeInMillis(), lambdaContext: context };
}
