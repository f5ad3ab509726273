/**
 * The outbox relay's Lambda entry, as the `OutboxRelay` construct deploys it by default: the
 * built-in SNS and SQS destinations, configured from the environment (`outboxRelayEnvironment()`).
 * A relay with destinations of its own has an entry of its own (`createOutboxRelay({ destinations })`)
 * and passes it to the construct as `entry`.
 *
 * @module
 */
import { createOutboxRelay } from './createOutboxRelay.js';

/** The relay's handler: `DynamoDBStreamEvent` → `{ batchItemFailures: [{ itemIdentifier: <SequenceNumber> }] }`. */
export const handler = createOutboxRelay();
