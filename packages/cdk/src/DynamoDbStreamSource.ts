import { Annotations, Names, Stack } from 'aws-cdk-lib';
import { CfnGlobalTable, CfnTable, type ITable, StreamViewType } from 'aws-cdk-lib/aws-dynamodb';
import type { CfnEventSourceMapping, IFunction } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type ConsumerSettings, InvalidSettingsError } from 'idempotent-consumer/settings';
import {
  acknowledgeListStreams,
  builtStreamMappingProblems,
  DYNAMODB_STREAM_RETENTION_HOURS,
  findMapping,
  type ResolvedStreamMapping,
  resolveStreamMapping,
  type StreamMappingOptions,
  streamMappingProblems,
  streamMappingProps,
} from './streamMapping.js';

/**
 * The stream view types a consumer can read: the record must carry the item as written
 * (`NewImage`), which is the message the consumer decides on.
 */
export const CONSUMABLE_STREAM_VIEW_TYPES: readonly StreamViewType[] = [StreamViewType.NEW_IMAGE, StreamViewType.NEW_AND_OLD_IMAGES];

/**
 * Which DynamoDB table's stream the consumer's function reads, beside its SQS queue, and how its
 * event source mapping reads it ({@link StreamMappingOptions}).
 */
export interface DynamoDbStreamSourceOptions extends StreamMappingOptions {
  /**
   * The table whose stream the function reads. It must have a stream with the view type `NEW_IMAGE`
   * or `NEW_AND_OLD_IMAGES` (`stream` of a `Table`, `dynamoStream` of a `TableV2`); an imported table
   * must be imported with its `tableStreamArn`. Not the consumer's own inbox table (its stream is the
   * outbox relay's).
   */
  readonly table: ITable;
}

/** Properties of a {@link DynamoDbStreamSource}. */
export interface DynamoDbStreamSourceProps extends DynamoDbStreamSourceOptions {
  /** The consumer function (its entry dispatches SQS, Kafka and stream events). It must have an execution role. */
  readonly function: IFunction;
  /** The dead-letter queue: the mapping's on-failure destination. Must be a standard queue. */
  readonly deadLetterQueue: IQueue;
  /** The consumer's validated settings (`retry.maxAttempts`, the windows, `queue.fifo`). */
  readonly settings: ConsumerSettings;
}

/**
 * The stream view type of a table defined in this app (`Table` or `TableV2`), `null` when it has no
 * stream, `undefined` when it cannot be known (an imported table, or a token).
 */
export function tableStreamViewType(table: ITable): string | null | undefined {
  const cfn = table.node.defaultChild;
  if (!(cfn instanceof CfnTable) && !(cfn instanceof CfnGlobalTable)) return undefined;
  const specification = Stack.of(table).resolve(cfn.streamSpecification) as { streamViewType?: unknown } | undefined;
  if (specification === undefined) return null;
  return typeof specification.streamViewType === 'string' ? specification.streamViewType : undefined;
}

/**
 * Checks the DynamoDB Streams source options (see `streamMappingProblems` for the mapping's rules,
 * with the stream's fixed 24-hour retention) and returns one sentence per broken rule: the table has
 * a stream, and, when the table is defined in this app, its view type is `NEW_IMAGE` or
 * `NEW_AND_OLD_IMAGES` (the consumer reads the new image; `KEYS_ONLY` and `OLD_IMAGE` records do not
 * carry it, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html).
 *
 * @param options - the DynamoDB Streams source options
 * @param settings - the consumer's settings
 */
export function dynamoDbStreamSourceProblems(options: DynamoDbStreamSourceOptions, settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const { table } = options;
  const viewType = tableStreamViewType(table);
  if (viewType === null || (viewType === undefined && table.tableStreamArn === undefined)) {
    problems.push(
      `the DynamoDB table ${table.node.path} has no stream: create it with stream: StreamViewType.NEW_IMAGE (Table) or ` +
        'dynamoStream: StreamViewType.NEW_IMAGE (TableV2), or import it with its tableStreamArn',
    );
  } else if (viewType !== undefined && !(CONSUMABLE_STREAM_VIEW_TYPES as readonly string[]).includes(viewType)) {
    problems.push(
      `the DynamoDB table ${table.node.path} has a stream of view type ${viewType}: the consumer reads each record's new image, so ` +
        'the stream must be NEW_IMAGE or NEW_AND_OLD_IMAGES (a view type is fixed when the stream is created: turn the stream off and on again to change it)',
    );
  }
  problems.push(...streamMappingProblems('DynamoDB Streams', options, settings, DYNAMODB_STREAM_RETENTION_HOURS));
  return problems;
}

/**
 * The consumer function's DynamoDB Streams event source mapping on a table's stream, with the same
 * guarantees as the Kafka and Kinesis ones:
 *
 * - **Order per shard.** `ParallelizationFactor` 1 by default; a higher factor keeps order per item
 *   key only. DynamoDB writes each item's changes to one shard in order.
 * - **Stop at the first failure of a shard.** `ReportBatchItemFailures` with the records'
 *   `dynamodb.SequenceNumber`; Lambda checkpoints at the lowest reported one and retries from there.
 *   Bisecting is off (and refused at synth): see `streamMappingProps`.
 * - **The consumer's own attempt count.** `MaximumRetryAttempts` = `requiredStreamRetryAttempts`
 *   unless given.
 * - **Dead letters.** What the consumer rejects goes to the dead-letter queue with its body, reason
 *   and coordinates; what Lambda gives up on goes there as a metadata record (`DDBStreamBatchInfo`:
 *   shard, first and last sequence numbers). A DynamoDB stream keeps records 24 hours: replay within
 *   that time, or from the table itself
 *   (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html).
 * - **Metrics.** `MetricsConfig: EventCount`; `ConsumerMonitoring` adds the `IteratorAge` alarm.
 *
 * **The table** is given, with its stream (view type `NEW_IMAGE` or `NEW_AND_OLD_IMAGES`, checked at
 * synth for a table of this app; for an imported table a warning says what to check).
 *
 * **IAM.** `DynamoEventSource` grants the function's role `dynamodb:DescribeStream`,
 * `dynamodb:GetRecords` and `dynamodb:GetShardIterator` on the table's stream and
 * `dynamodb:ListStreams` on `*` (no resource-level permission: acknowledged for cdk-nag on the role
 * with that reason); `SqsDlq` grants `sqs:SendMessage` on the dead-letter queue
 * (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html#events-dynamodb-permissions).
 *
 * **Checked at synth.** {@link dynamoDbStreamSourceProblems} before anything is built (the
 * constructor throws `InvalidSettingsError`), and the built mapping when the app synthesizes.
 */
export class DynamoDbStreamSource extends Construct {
  /** The table whose stream the mapping reads. */
  public readonly table: ITable;
  /** The L2 event source; `eventSourceMappingId` and `eventSourceMappingArn` name the mapping. */
  public readonly eventSource: DynamoEventSource;
  /** The mapping settings, defaults applied. */
  public readonly mappingSettings: ResolvedStreamMapping;
  /** The construct id of the mapping under the function. */
  private readonly cfnMappingId: string;
  /** The consumer function. */
  private readonly fn: IFunction;

  /**
   * @throws InvalidSettingsError when the options break a rule of {@link dynamoDbStreamSourceProblems}; nothing is created
   * @throws Error when the function has no execution role
   */
  constructor(scope: Construct, id: string, props: DynamoDbStreamSourceProps) {
    const problems = dynamoDbStreamSourceProblems(props, props.settings);
    if (problems.length > 0) throw new InvalidSettingsError(problems);
    const role = props.function.role;
    if (role === undefined) throw new Error('DynamoDbStreamSource needs a function with an execution role');
    super(scope, id);
    this.table = props.table;
    this.fn = props.function;
    this.mappingSettings = resolveStreamMapping(props, props.settings);
    if (tableStreamViewType(props.table) === undefined) {
      Annotations.of(this).addWarningV2(
        'idempotent-consumer:imported-stream-view-type',
        `the table ${props.table.node.path} is imported: make sure its stream's view type is NEW_IMAGE or NEW_AND_OLD_IMAGES ` +
          '(the construct cannot check it; the consumer reads the new image of each record)',
      );
    }

    this.eventSource = new DynamoEventSource(props.table, streamMappingProps(this.mappingSettings, props.deadLetterQueue));
    props.function.addEventSource(this.eventSource);
    this.cfnMappingId = `DynamoDBEventSource:${Names.nodeUniqueId(props.table.node)}`;
    if (this.mappingSettings.maxRecordAgeSeconds === -1) {
      // The L2 leaves the property out for "no limit"; state AWS's default in the template.
      this.cfnMapping.maximumRecordAgeInSeconds = -1;
    }
    acknowledgeListStreams(role);
    this.node.addValidation({ validate: () => builtStreamMappingProblems('DynamoDB Streams', this.cfnMapping, this.mappingSettings) });
  }

  /** The mapping's CloudFormation resource (escape hatch; the synth-time validation reads it). */
  public get cfnMapping(): CfnEventSourceMapping {
    return findMapping(this.fn, this.cfnMappingId);
  }
}
