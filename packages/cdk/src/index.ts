/**
 * The CDK entry point of the package (`@idempotent-consumer/cdk`): the constructs that deploy a
 * consumer built with `createIdempotentConsumer`, its monitoring and an optional Kafka event
 * source, plus helpers for a consumer's CDK app.
 *
 * @module
 */
export {
  ConsumerTableActions,
  consumerPropsProblems,
  defaultBundling,
  IdempotentConsumer,
  type IdempotentConsumerProps,
  type TableOptions,
} from './IdempotentConsumer.js';
export { grantTableKey, TABLE_KEY_ACTIONS } from './tableKey.js';
export {
  managedFunctionShape,
  managedInstancesProblems,
  type ManagedFunctionShape,
  type ManagedInstancesConfiguration,
  type ManagedInstancesOptions,
} from './capacityProvider.js';
export {
  ConsumerMonitoring,
  monitoringOptionsProblems,
  validateMonitoringOptions,
  type ConsumerAlarms,
  type ConsumerMonitoringOptions,
  type ConsumerMonitoringProps,
} from './ConsumerMonitoring.js';
export {
  KafkaAuthentication,
  kafkaMappingMetrics,
  KafkaSource,
  kafkaSourceProblems,
  MSK_SCRAM_SECRET_PREFIX,
  mskResourceArns,
  type KafkaSourceOptions,
  type KafkaSourceProps,
  type KafkaVpcPlacement,
} from './KafkaSource.js';
export {
  KINESIS_DEFAULT_RETENTION_HOURS,
  KinesisSource,
  kinesisSourceProblems,
  type KinesisSourceOptions,
  type KinesisSourceProps,
} from './KinesisSource.js';
export {
  CONSUMABLE_STREAM_VIEW_TYPES,
  DynamoDbStreamSource,
  dynamoDbStreamSourceProblems,
  tableStreamViewType,
  type DynamoDbStreamSourceOptions,
  type DynamoDbStreamSourceProps,
} from './DynamoDbStreamSource.js';
export {
  DYNAMODB_STREAM_RETENTION_HOURS,
  requiredStreamRetryAttempts,
  resolveStreamMapping,
  STREAM_DEFAULT_BATCH_SIZE,
  streamMappingMetrics,
  streamMappingProblems,
  type ResolvedStreamMapping,
  type StreamMappingOptions,
} from './streamMapping.js';
export { consumerContext, consumerContextKeys, type ConsumerContext } from './consumerContext.js';
export { isInputError, runCdkApp, type RunCdkAppIo } from './runCdkApp.js';
export { OutboxRelay, type OutboxRelayAlarms, type OutboxRelayDestination, type OutboxRelayProps } from './OutboxRelay.js';
