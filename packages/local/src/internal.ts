/**
 * What the repository's own tools (the proof suite, the benchmark) use of the local runtime beside
 * its entry point: the emulators' strict layers, the invocation guard, the SDK middleware that
 * shapes injected faults as AWS sends them, the simulated Kafka log. Internal: no stability
 * promise.
 *
 * @internal
 * @module
 */
export * from './aws/invocationGuard.js';
export * from './aws/sdkMiddleware.js';
export * from './aws/strictDynamoDb.js';
export * from './emulators.js';
export * from './faultInjection.js';
export * from './inputFile.js';
export * from './judgeBatchResponse.js';
export * from './kafka/KafkaEventSourcePoller.js';
export * from './kafka/PartitionedLog.js';
export * from './kafka/partitionRetries.js';
export * from './lambdaContext.js';
export * from './localClientConfig.js';
export * from './provision.js';
export * from './outbox/judgeStreamBatchResponse.js';
export * from './streams/ShardLog.js';
export * from './streams/StreamEventSourcePoller.js';
export * from './streams/streamEvents.js';
