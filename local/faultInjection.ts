import { createHash } from 'node:crypto';
import { peekIds } from '../lambda/observability/outcomes.js';
import type { OrderEventProcessor } from '../lambda/processing/OrderEventProcessor.js';

/** The error the local runtime injects: shaped like DynamoDB's throttling error, which is retryable. */
export class SimulatedThrottling extends Error {
  readonly $retryable = { throttling: true };
  constructor(eventId: string) {
    super(`simulated throttling of event ${eventId} (local fault injection, first delivery only)`);
    this.name = 'ProvisionedThroughputExceededException';
  }
}

/**
 * Makes the first delivery of about `rate` (0 to 1) of the events fail with a retryable
 * {@link SimulatedThrottling}, as a throttled DynamoDB would; later deliveries of the same
 * `eventId` pass. Which events fail depends only on the `eventId` (its SHA-256), so a run is
 * repeatable. Use one injector per run: the set of events that already failed is shared by all
 * the run's execution environments.
 *
 * @param rate - the share of events whose first delivery fails, from 0 (none) to 1 (all)
 * @throws RangeError when `rate` is outside 0..1
 */
export function transientFailures(rate: number): (processor: OrderEventProcessor) => Pick<OrderEventProcessor, 'process'> {
  if (!(rate >= 0 && rate <= 1)) throw new RangeError(`the transient failure rate must be from 0 to 1, got ${rate}`);
  const failedOnce = new Set<string>();
  return (processor) => ({
    process: async (message) => {
      const { eventId } = peekIds(message.body);
      if (eventId !== undefined && !failedOnce.has(eventId) && fraction(eventId) < rate) {
        failedOnce.add(eventId);
        throw new SimulatedThrottling(eventId);
      }
      return processor.process(message);
    },
  });
}

function fraction(key: string): number {
  return createHash('sha256').update(key).digest().readUInt32BE(0) / 0x1_0000_0000;
}
