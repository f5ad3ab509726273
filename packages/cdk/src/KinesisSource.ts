import { Duration, Names, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { type IStream, Stream, StreamEncryption, StreamMode } from 'aws-cdk-lib/aws-kinesis';
import type { CfnEventSourceMapping, IFunction } from 'aws-cdk-lib/aws-lambda';
import { KinesisEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type ConsumerSettings, InvalidSettingsError } from 'idempotent-consumer/settings';
import {
  builtStreamMappingProblems,
  findMapping,
  type ResolvedStreamMapping,
  resolveStreamMapping,
  type StreamMappingOptions,
  streamMappingProblems,
  streamMappingProps,
} from './streamMapping.js';

/** Kinesis's default retention of a stream's records, in hours. */
export const KINESIS_DEFAULT_RETENTION_HOURS = 24;

/**
 * Which Kinesis data stream the consumer's function reads, beside its SQS queue, and how its event
 * source mapping reads it ({@link StreamMappingOptions}).
 */
export interface KinesisSourceOptions extends StreamMappingOptions {
  /**
   * An existing stream to read. Its key, when it is encrypted with a customer managed key known to
   * this app (`Stream.fromStreamAttributes(…, { streamArn, encryptionKey })`), is granted `kms:Decrypt`.
   *
   * @default - a new stream: on-demand capacity, encrypted with the AWS managed key `aws/kinesis`
   *   (or `encryptionKey`), `retentionHours` of retention, retained when the stack is deleted
   */
  readonly stream?: IStream;
  /**
   * How long the stream keeps a record, in **hours** (Kinesis: 24 to 8,760). For a new stream, its
   * retention; for a given one, your statement of it (Kinesis's cannot be read at synth). It is
   * checked against the inbox window: a mapping created or reset at `TRIM_HORIZON` reads every record
   * still there.
   *
   * @default 24 (Kinesis's default)
   */
  readonly retentionHours?: number;
  /**
   * A customer managed KMS key for a **new** stream. Without it the stream is encrypted with the AWS
   * managed key `aws/kinesis`, which costs nothing per request and which cdk-nag (AwsSolutions-KDS3)
   * asks for; with it, producers and the consumer also pay KMS requests, and the finding is
   * acknowledged on the stream with that reason.
   *
   * @default - the AWS managed key aws/kinesis
   */
  readonly encryptionKey?: IKey;
}

/** Properties of a {@link KinesisSource}. */
export interface KinesisSourceProps extends KinesisSourceOptions {
  /** The consumer function (its entry dispatches SQS, Kafka and stream events). It must have an execution role. */
  readonly function: IFunction;
  /** The dead-letter queue: the mapping's on-failure destination. Must be a standard queue. */
  readonly deadLetterQueue: IQueue;
  /** The consumer's validated settings (`retry.maxAttempts`, the windows, `queue.fifo`). */
  readonly settings: ConsumerSettings;
}

/**
 * Checks the Kinesis source options (see `streamMappingProblems` for the mapping's rules) and returns
 * one sentence per broken rule: a retention of 24 to 8,760 hours, an `encryptionKey` only for a new stream.
 *
 * @param options - the Kinesis source options
 * @param settings - the consumer's settings
 */
export function kinesisSourceProblems(options: KinesisSourceOptions, settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const hours = options.retentionHours;
  if (hours !== undefined && !(Number.isInteger(hours) && hours >= 24 && hours <= 8760)) {
    problems.push(`Kinesis stream retention ${hours} hours must be an integer from 24 to 8760 hours (Kinesis's range)`);
  }
  if (options.encryptionKey !== undefined && options.stream !== undefined) {
    problems.push('a Kinesis encryptionKey applies to a new stream only: a given stream keeps its own encryption');
  }
  problems.push(...streamMappingProblems('Kinesis', options, settings, hours ?? KINESIS_DEFAULT_RETENTION_HOURS));
  return problems;
}

/**
 * The consumer function's Kinesis Data Streams event source mapping, with the same guarantees as the
 * Kafka one ({@link KafkaSource}):
 *
 * - **Order per shard.** `ParallelizationFactor` 1 by default: one batch per shard at a time. A
 *   higher factor keeps order per partition key only.
 * - **Stop at the first failure of a shard.** `FunctionResponseTypes: [ReportBatchItemFailures]`:
 *   the handler reports the first failed record of each shard and every later record of that shard
 *   by sequence number; Lambda checkpoints at the lowest and retries from there. Bisecting is off
 *   (and refused at synth): see `streamMappingProps`.
 * - **The consumer's own attempt count.** `MaximumRetryAttempts` = `requiredStreamRetryAttempts`
 *   (`maxAttempts × batchSize − 1 + 5`, at most 10,000) unless given: the consumer dead-letters a
 *   record with its reason on its attempt `retry.maxAttempts`, before the mapping gives up.
 * - **Dead letters.** What the consumer rejects goes to the dead-letter queue with its body, reason
 *   and coordinates (stream, shard, sequence number). What Lambda gives up on (retries exhausted by
 *   crashes or timeouts, records older than `maxRecordAgeSeconds`) goes to the same queue as a
 *   metadata record (`KinesisBatchInfo`: shard, first and last sequence numbers), not the data
 *   (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html).
 * - **Metrics.** `MetricsConfig: EventCount`; `ConsumerMonitoring` adds the `IteratorAge` alarm.
 *
 * **The stream.** Given (`stream`), or created: on-demand capacity (no shard count to manage, billed
 * per GB and per stream-hour), encrypted at rest with KMS (the AWS managed key `aws/kinesis`, or
 * `encryptionKey`), `retentionHours` of retention, retained when the stack is deleted (it holds
 * records not consumed yet).
 *
 * **IAM.** `KinesisEventSource` grants the function's role the stream's read actions
 * (`kinesis:DescribeStream`, `DescribeStreamSummary`, `GetRecords`, `GetShardIterator`,
 * `ListShards`, `ListStreams`, `SubscribeToShard`, `DescribeStreamConsumer`) on the stream, and
 * `kms:Decrypt` on its customer managed key when it has one; `SqsDlq` grants `sqs:SendMessage` on the
 * dead-letter queue (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html#events-kinesis-permissions).
 *
 * **Checked at synth.** The options are checked before anything is built
 * ({@link kinesisSourceProblems}: ranges, finite retries that cover the attempts, the window rule
 * against the stream's retention, a standard dead-letter queue); the constructor throws
 * `InvalidSettingsError`. The built mapping is validated when the app synthesizes (finite retries,
 * on-failure destination, partial batch responses, no bisecting): an escape hatch that removes one
 * fails `cdk synth`.
 */
export class KinesisSource extends Construct {
  /** The stream the mapping reads (created or given). */
  public readonly stream: IStream;
  /** The L2 event source; `eventSourceMappingId` and `eventSourceMappingArn` name the mapping. */
  public readonly eventSource: KinesisEventSource;
  /** The mapping settings, defaults applied. */
  public readonly mappingSettings: ResolvedStreamMapping;
  /** How long the stream keeps a record, in hours (the stream's, or the stated one of a given stream). */
  public readonly retentionHours: number;
  /** The construct id of the mapping under the function. */
  private readonly cfnMappingId: string;
  /** The consumer function. */
  private readonly fn: IFunction;

  /**
   * @throws InvalidSettingsError when the options break a rule of {@link kinesisSourceProblems}; nothing is created
   * @throws Error when the function has no execution role
   */
  constructor(scope: Construct, id: string, props: KinesisSourceProps) {
    const problems = kinesisSourceProblems(props, props.settings);
    if (problems.length > 0) throw new InvalidSettingsError(problems);
    if (props.function.role === undefined) throw new Error('KinesisSource needs a function with an execution role');
    super(scope, id);
    this.mappingSettings = resolveStreamMapping(props, props.settings);
    this.retentionHours = props.retentionHours ?? KINESIS_DEFAULT_RETENTION_HOURS;
    this.stream = props.stream ?? this.createStream(props.encryptionKey);

    this.eventSource = new KinesisEventSource(this.stream, streamMappingProps(this.mappingSettings, props.deadLetterQueue));
    props.function.addEventSource(this.eventSource);
    this.fn = props.function;
    this.cfnMappingId = `KinesisEventSource:${Names.nodeUniqueId(this.stream.node)}`;
    if (this.mappingSettings.maxRecordAgeSeconds === -1) {
      // The L2 leaves the property out for "no limit"; state AWS's default in the template.
      this.cfnMapping.maximumRecordAgeInSeconds = -1;
    }
    this.node.addValidation({ validate: () => builtStreamMappingProblems('Kinesis', this.cfnMapping, this.mappingSettings) });
  }

  /** The mapping's CloudFormation resource (escape hatch; the synth-time validation reads it). */
  public get cfnMapping(): CfnEventSourceMapping {
    return findMapping(this.fn, this.cfnMappingId);
  }

  /** An on-demand stream, KMS-encrypted, retained with the stack. */
  private createStream(encryptionKey: IKey | undefined): Stream {
    const stream = new Stream(this, 'Stream', {
      streamMode: StreamMode.ON_DEMAND,
      retentionPeriod: Duration.hours(this.retentionHours),
      ...(encryptionKey === undefined ? { encryption: StreamEncryption.MANAGED } : { encryption: StreamEncryption.KMS, encryptionKey }),
      // Stateful: records not consumed yet survive a stack deletion or replacement.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    if (encryptionKey !== undefined) {
      Validations.of(stream).acknowledge({
        id: 'AwsSolutions-KDS3',
        reason:
          'The stream is encrypted with the customer managed key the app gave (KinesisSourceOptions.encryptionKey): a choice of ' +
          'the app for its compliance needs, made knowing that producers and consumers then pay KMS requests.',
      });
    }
    return stream;
  }
}
