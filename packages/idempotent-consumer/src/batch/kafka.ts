/**
 * The Kafka entry point of the package (`idempotent-consumer/kafka`): the event an Amazon MSK or
 * self-managed Kafka event source mapping sends, its partial batch response, the record formats
 * (Avro, Protobuf) a consumer decodes values with.
 *
 * @module
 */
export type { KafkaEvent, KafkaRecord, KafkaRecordHeader, KafkaSchemaMetadata } from './kafkaEvent.js';
export type {
  KafkaDecodedValue,
  KafkaDecodingOptions,
  KafkaEncodedValue,
  KafkaJsonFormat,
  KafkaRecordFormat,
  KafkaSchemaFormat,
} from '../types.js';
export { readKafkaBatchResponse, topicPartition, type KafkaBatchResponse, type KafkaBatchVerdict } from './kafkaBatchResponse.js';
export { kafkaMessageId } from './kafkaDeliveries.js';
export { kafkaAvroFormat, kafkaProtobufFormat, type ProtobufMessageType } from './kafkaValueDecoder.js';
