/**
 * Reads what a local run needs from a synthesized stack's CloudFormation template: the tables,
 * queues, topics and buckets (with the properties that change what an emulator does), the Lambda
 * functions (handler, runtime, timeout, memory, environment, bundle) and their event source
 * mappings; and resolves the intrinsic functions of an environment variable (`Ref`,
 * `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`, `Fn::Select`, pseudo parameters) against the local
 * resources made from them. Pure: no file or network access.
 *
 * @module
 */
import { join } from 'node:path';
import type { FilterPattern } from '../matchesFilterPattern.js';
import { CloudAssemblyError } from '../errors.js';

/** A CloudFormation resource as the template holds it. */
export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Readonly<Record<string, unknown>>;
  readonly Metadata?: Readonly<Record<string, unknown>>;
}

/** A CloudFormation template: only its resources are read. */
export interface CfnTemplate {
  readonly Resources?: Readonly<Record<string, CfnResource>>;
}

/** A key attribute of a table. */
export interface TableKey {
  readonly name: string;
  /** `S`, `N` or `B`, from `AttributeDefinitions`. */
  readonly type: 'S' | 'N' | 'B';
}

/** What the template says of an `AWS::DynamoDB::Table`. */
export interface TableModel {
  /** The logical id. */
  readonly id: string;
  /** The construct path (`aws:cdk:path` without `/Resource`), else the logical id. */
  readonly path: string;
  /** `TableName`, when the template sets one. */
  readonly name: string | undefined;
  readonly partitionKey: TableKey;
  readonly sortKey: TableKey | undefined;
  /** `StreamSpecification.StreamViewType`, when the table has a stream. */
  readonly streamViewType: string | undefined;
  /** `TimeToLiveSpecification.AttributeName`, when TTL is on. */
  readonly ttlAttribute: string | undefined;
}

/** What the template says of an `AWS::SQS::Queue`. */
export interface QueueModel {
  readonly id: string;
  readonly path: string;
  /** `QueueName`, when the template sets one. */
  readonly name: string | undefined;
  readonly fifo: boolean;
  readonly contentBasedDeduplication: boolean | undefined;
  /** `VisibilityTimeout`, seconds; `undefined`: SQS's default (30). */
  readonly visibilityTimeoutSeconds: number | undefined;
  /** `MessageRetentionPeriod`, seconds. */
  readonly retentionPeriodSeconds: number | undefined;
  /** `MaximumMessageSize`, bytes. */
  readonly maxMessageSizeBytes: number | undefined;
  /** `RedrivePolicy`: the dead-letter queue (a queue of this template) and `maxReceiveCount`. */
  readonly redrive: { readonly deadLetterQueueId: string; readonly maxReceiveCount: number } | undefined;
}

/** What the template says of an `AWS::SNS::Topic`. */
export interface TopicModel {
  readonly id: string;
  readonly path: string;
  /** `TopicName`, when the template sets one. */
  readonly name: string | undefined;
  readonly fifo: boolean;
  readonly contentBasedDeduplication: boolean | undefined;
}

/** What the template says of an `AWS::Events::EventBus` (the local EventBridge creates it). */
export interface EventBusModel {
  readonly id: string;
  readonly path: string;
  /** `Name`, when the template sets it as a literal (CDK always does). */
  readonly name: string | undefined;
}

/** What the template says of an `AWS::S3::Bucket`. */
export interface BucketModel {
  readonly id: string;
  readonly path: string;
  /** `BucketName`, when the template sets one. */
  readonly name: string | undefined;
}

/** What the template says of an `AWS::Lambda::Function` whose code is a bundled asset. */
export interface FunctionModel {
  readonly id: string;
  readonly path: string;
  /** `Handler`, e.g. `index.handler`. */
  readonly handler: string;
  /** `Runtime`, e.g. `nodejs22.x`. */
  readonly runtime: string;
  /** `Timeout`, seconds (Lambda's default: 3). */
  readonly timeoutSeconds: number;
  /** `MemorySize`, MB (Lambda's default: 128). */
  readonly memorySizeMb: number;
  /** `Environment.Variables`, unresolved (literals and intrinsic functions). */
  readonly environment: Readonly<Record<string, unknown>>;
  /** The asset directory of its code, relative to the cloud assembly (`aws:asset:path`), when known. */
  readonly assetPath: string | undefined;
  /** `Code.S3Key` (`<hash>.zip`), to find the asset in the assets manifest when the metadata lacks it. */
  readonly s3Key: string | undefined;
  /**
   * `CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig`, when the function runs on
   * Lambda Managed Instances: its `PerExecutionEnvironmentMaxConcurrency` (invocations one execution
   * environment serves at once), `undefined` when the template leaves AWS's default.
   */
  readonly capacityProvider: { readonly perEnvironmentMaxConcurrency: number | undefined } | undefined;
}

/** The source of an event source mapping. */
export type MappingSource =
  | { readonly kind: 'sqs'; readonly queueId: string }
  | { readonly kind: 'dynamodb-stream'; readonly tableId: string }
  /**
   * A Kinesis data stream: `streamId` when it is a stream of the stack (`Fn::GetAtt` of an
   * `AWS::Kinesis::Stream`), else `streamArn`, the literal ARN of a stream made elsewhere.
   */
  | { readonly kind: 'kinesis'; readonly streamId: string | undefined; readonly streamArn: string | undefined }
  | { readonly kind: 'kafka'; readonly topics: readonly string[]; readonly selfManaged: boolean };

/** What the template says of an `AWS::Lambda::EventSourceMapping`. */
export interface EventSourceMappingModel {
  readonly id: string;
  readonly path: string;
  /** The logical id of the function it invokes. */
  readonly functionId: string;
  readonly source: MappingSource;
  /** `BatchSize`; `undefined`: the service's default. */
  readonly batchSize: number | undefined;
  /** `MaximumBatchingWindowInSeconds`. */
  readonly maxBatchingWindowSeconds: number | undefined;
  /** `FunctionResponseTypes` holds `ReportBatchItemFailures`. */
  readonly reportBatchItemFailures: boolean;
  /** `ScalingConfig.MaximumConcurrency`. */
  readonly maxConcurrency: number | undefined;
  /** `MaximumRetryAttempts` (streams and Kafka). */
  readonly retryAttempts: number | undefined;
  /** `BisectBatchOnFunctionError`. */
  readonly bisectBatchOnError: boolean | undefined;
  /** `MaximumRecordAgeInSeconds`. */
  readonly maxRecordAgeSeconds: number | undefined;
  /** `StartingPosition`. */
  readonly startingPosition: string | undefined;
  /** `ProvisionedPollerConfig` (Kafka). */
  readonly pollers: { readonly minimum: number | undefined; readonly maximum: number | undefined } | undefined;
  /** `FilterCriteria.Filters[].Pattern`, parsed. */
  readonly filters: readonly FilterPattern[];
  /** `MetricsConfig.Metrics` (`EventCount`, `ErrorCount`, `KafkaMetrics`); empty without it. */
  readonly metrics: readonly string[];
  /** The on-failure destination: a queue or topic of this template. */
  readonly onFailureId: string | undefined;
}

/** What a local run reads from a stack's template. */
export interface StackModel {
  readonly stackName: string;
  readonly tables: ReadonlyMap<string, TableModel>;
  readonly queues: ReadonlyMap<string, QueueModel>;
  readonly topics: ReadonlyMap<string, TopicModel>;
  /** The EventBridge event buses (an outbox relay's destination). */
  readonly eventBuses: ReadonlyMap<string, EventBusModel>;
  readonly buckets: ReadonlyMap<string, BucketModel>;
  readonly functions: ReadonlyMap<string, FunctionModel>;
  readonly mappings: readonly EventSourceMappingModel[];
  /** Every resource's type, by logical id (to name what cannot be resolved locally). */
  readonly types: ReadonlyMap<string, string>;
}

/**
 * Reads a stack's template.
 *
 * @param stackName - the stack's name (`AWS::StackName`, and the prefix of local names)
 * @throws CloudAssemblyError when a resource the local run needs is malformed: a table without a
 *   partition key, a redrive policy or event source that is not a resource of this template, a
 *   filter pattern that is not JSON
 */
export function readStackTemplate(template: CfnTemplate, stackName: string): StackModel {
  const resources = template.Resources ?? {};
  const tables = new Map<string, TableModel>();
  const queues = new Map<string, QueueModel>();
  const topics = new Map<string, TopicModel>();
  const eventBuses = new Map<string, EventBusModel>();
  const buckets = new Map<string, BucketModel>();
  const functions = new Map<string, FunctionModel>();
  const mappings: EventSourceMappingModel[] = [];
  const types = new Map<string, string>();
  for (const [id, resource] of Object.entries(resources)) {
    types.set(id, resource.Type);
    const properties = resource.Properties ?? {};
    const path = constructPath(id, resource);
    switch (resource.Type) {
      case 'AWS::DynamoDB::Table':
        tables.set(id, readTable(id, path, properties));
        break;
      case 'AWS::SQS::Queue':
        queues.set(id, readQueue(id, path, properties));
        break;
      case 'AWS::SNS::Topic':
        topics.set(id, {
          id,
          path,
          name: literalString(properties.TopicName),
          fifo: properties.FifoTopic === true || properties.FifoTopic === 'true',
          contentBasedDeduplication: optionalBoolean(properties.ContentBasedDeduplication),
        });
        break;
      case 'AWS::S3::Bucket':
        buckets.set(id, { id, path, name: literalString(properties.BucketName) });
        break;
      case 'AWS::Events::EventBus':
        eventBuses.set(id, { id, path, name: literalString(properties.Name) });
        break;
      case 'AWS::Lambda::Function': {
        const environment = (properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
        const code = (properties.Code ?? {}) as { S3Key?: unknown };
        const assetPath = resource.Metadata?.['aws:asset:path'];
        functions.set(id, {
          id,
          path,
          handler: literalString(properties.Handler) ?? 'index.handler',
          runtime: literalString(properties.Runtime) ?? '',
          timeoutSeconds: optionalNumber(properties.Timeout) ?? 3,
          memorySizeMb: optionalNumber(properties.MemorySize) ?? 128,
          environment,
          assetPath: typeof assetPath === 'string' ? assetPath : undefined,
          s3Key: literalString(code.S3Key),
          capacityProvider: capacityProviderOf(properties.CapacityProviderConfig),
        });
        break;
      }
    }
  }
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    mappings.push(readMapping(id, constructPath(id, resource), resource.Properties ?? {}, { queues, tables, types }));
  }
  for (const queue of queues.values()) {
    if (queue.redrive !== undefined && !queues.has(queue.redrive.deadLetterQueueId)) {
      throw new CloudAssemblyError(
        `${queue.path}: the redrive policy's dead-letter queue ${queue.redrive.deadLetterQueueId} is not a queue of the stack`,
      );
    }
  }
  return { stackName, tables, queues, topics, eventBuses, buckets, functions, mappings, types };
}

function readTable(id: string, path: string, properties: Readonly<Record<string, unknown>>): TableModel {
  const definitions = new Map(
    ((properties.AttributeDefinitions ?? []) as { AttributeName?: string; AttributeType?: string }[]).map((d) => [
      d.AttributeName,
      d.AttributeType,
    ]),
  );
  const schema = (properties.KeySchema ?? []) as { AttributeName?: string; KeyType?: string }[];
  const key = (keyType: string): TableKey | undefined => {
    const element = schema.find((k) => k.KeyType === keyType);
    if (element?.AttributeName === undefined) return undefined;
    const type = definitions.get(element.AttributeName) ?? 'S';
    if (type !== 'S' && type !== 'N' && type !== 'B') {
      throw new CloudAssemblyError(`${path}: key attribute ${element.AttributeName} has type ${String(type)}; expected S, N or B`);
    }
    return { name: element.AttributeName, type };
  };
  const partitionKey = key('HASH');
  if (partitionKey === undefined) throw new CloudAssemblyError(`${path}: the table has no partition key (KeySchema HASH)`);
  const stream = properties.StreamSpecification as { StreamViewType?: unknown } | undefined;
  const ttl = properties.TimeToLiveSpecification as { AttributeName?: unknown; Enabled?: unknown } | undefined;
  return {
    id,
    path,
    name: literalString(properties.TableName),
    partitionKey,
    sortKey: key('RANGE'),
    streamViewType: literalString(stream?.StreamViewType),
    ttlAttribute: ttl !== undefined && ttl.Enabled !== false ? literalString(ttl.AttributeName) : undefined,
  };
}

function readQueue(id: string, path: string, properties: Readonly<Record<string, unknown>>): QueueModel {
  const redrivePolicy =
    typeof properties.RedrivePolicy === 'string'
      ? (parseJson(properties.RedrivePolicy, `${path}: RedrivePolicy`) as Record<string, unknown>)
      : (properties.RedrivePolicy as Record<string, unknown> | undefined);
  let redrive: QueueModel['redrive'];
  if (redrivePolicy !== undefined) {
    const target = redrivePolicy.deadLetterTargetArn;
    const deadLetterQueueId = referencedId(target, 'Arn');
    if (deadLetterQueueId === undefined) {
      throw new CloudAssemblyError(
        `${path}: the redrive policy's dead-letter queue ${JSON.stringify(target)} is not a queue of the stack (the local run creates only the stack's own resources)`,
      );
    }
    const count = optionalNumber(redrivePolicy.maxReceiveCount);
    if (count === undefined) throw new CloudAssemblyError(`${path}: the redrive policy has no maxReceiveCount`);
    redrive = { deadLetterQueueId, maxReceiveCount: count };
  }
  return {
    id,
    path,
    name: literalString(properties.QueueName),
    fifo: properties.FifoQueue === true || properties.FifoQueue === 'true',
    contentBasedDeduplication: optionalBoolean(properties.ContentBasedDeduplication),
    visibilityTimeoutSeconds: optionalNumber(properties.VisibilityTimeout),
    retentionPeriodSeconds: optionalNumber(properties.MessageRetentionPeriod),
    maxMessageSizeBytes: optionalNumber(properties.MaximumMessageSize),
    redrive,
  };
}

/** The ARN of a Kinesis data stream: `arn:<partition>:kinesis:<region>:<account>:stream/<name>`. */
const KINESIS_STREAM_ARN = /^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d{12}:stream\/[A-Za-z0-9_.-]+$/;

function readMapping(
  id: string,
  path: string,
  properties: Readonly<Record<string, unknown>>,
  known: {
    readonly queues: ReadonlyMap<string, QueueModel>;
    readonly tables: ReadonlyMap<string, TableModel>;
    readonly types: ReadonlyMap<string, string>;
  },
): EventSourceMappingModel {
  const functionId = referencedId(properties.FunctionName, 'Arn');
  if (functionId === undefined) {
    throw new CloudAssemblyError(`${path}: FunctionName ${JSON.stringify(properties.FunctionName)} is not a function of the stack`);
  }
  let source: MappingSource;
  const topics = (properties.Topics ?? []) as unknown[];
  if (properties.SelfManagedEventSource !== undefined || topics.length > 0) {
    source = {
      kind: 'kafka',
      topics: topics.map((topic) => literalString(topic) ?? ''),
      selfManaged: properties.SelfManagedEventSource !== undefined,
    };
  } else {
    const arn = properties.EventSourceArn;
    const queueId = referencedId(arn, 'Arn');
    const tableId = referencedId(arn, 'StreamArn');
    const literalArn = literalString(arn);
    if (queueId !== undefined && known.queues.has(queueId)) source = { kind: 'sqs', queueId };
    else if (tableId !== undefined && known.tables.has(tableId)) source = { kind: 'dynamodb-stream', tableId };
    else if (queueId !== undefined && known.types.get(queueId) === 'AWS::Kinesis::Stream')
      source = { kind: 'kinesis', streamId: queueId, streamArn: undefined };
    else if (literalArn !== undefined && KINESIS_STREAM_ARN.test(literalArn))
      source = { kind: 'kinesis', streamId: undefined, streamArn: literalArn };
    else {
      throw new CloudAssemblyError(
        `${path}: the event source ${JSON.stringify(arn)} is not a queue or table stream of the stack (the local run creates only the stack's own resources)`,
      );
    }
  }
  const filters = ((properties.FilterCriteria as { Filters?: { Pattern?: unknown }[] } | undefined)?.Filters ?? []).map((filter) =>
    typeof filter.Pattern === 'string'
      ? (parseJson(filter.Pattern, `${path}: FilterCriteria pattern`) as FilterPattern)
      : (filter.Pattern as FilterPattern),
  );
  const destination = (properties.DestinationConfig as { OnFailure?: { Destination?: unknown } } | undefined)?.OnFailure?.Destination;
  const scaling = properties.ScalingConfig as { MaximumConcurrency?: unknown } | undefined;
  const pollers = properties.ProvisionedPollerConfig as { MinimumPollers?: unknown; MaximumPollers?: unknown } | undefined;
  return {
    id,
    path,
    functionId,
    source,
    batchSize: optionalNumber(properties.BatchSize),
    maxBatchingWindowSeconds: optionalNumber(properties.MaximumBatchingWindowInSeconds),
    reportBatchItemFailures: ((properties.FunctionResponseTypes ?? []) as unknown[]).includes('ReportBatchItemFailures'),
    maxConcurrency: optionalNumber(scaling?.MaximumConcurrency),
    retryAttempts: optionalNumber(properties.MaximumRetryAttempts),
    bisectBatchOnError: optionalBoolean(properties.BisectBatchOnFunctionError),
    maxRecordAgeSeconds: optionalNumber(properties.MaximumRecordAgeInSeconds),
    startingPosition: literalString(properties.StartingPosition),
    pollers:
      pollers === undefined
        ? undefined
        : { minimum: optionalNumber(pollers.MinimumPollers), maximum: optionalNumber(pollers.MaximumPollers) },
    filters,
    metrics: (((properties.MetricsConfig as { Metrics?: unknown } | undefined)?.Metrics ?? []) as unknown[]).filter(
      (metric): metric is string => typeof metric === 'string',
    ),
    onFailureId: destination === undefined ? undefined : (referencedId(destination, 'Arn') ?? referencedId(destination, 'TopicArn')),
  };
}

/** The construct path of a resource, from its `aws:cdk:path` metadata (without the trailing `/Resource`), else its logical id. */
export function constructPath(id: string, resource: CfnResource): string {
  const path = resource.Metadata?.['aws:cdk:path'];
  return typeof path === 'string' ? path.replace(/\/Resource$/, '') : id;
}

/**
 * The logical id a value refers to: `{ "Ref": id }`, or `{ "Fn::GetAtt": [id, attribute] }`
 * (also `"id.attribute"`) with that attribute; `undefined` for anything else.
 */
export function referencedId(value: unknown, attribute?: string): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const object = value as Record<string, unknown>;
  if (typeof object.Ref === 'string' && !object.Ref.startsWith('AWS::')) return object.Ref;
  const getAtt = object['Fn::GetAtt'];
  const [target, name] = Array.isArray(getAtt) ? getAtt : typeof getAtt === 'string' ? getAtt.split(/\.(.*)/s) : [];
  if (typeof target === 'string' && (attribute === undefined || name === attribute)) return target;
  return undefined;
}

/** The values of one local resource: what `Ref` gives and its attributes (`Arn`, `QueueUrl`, `StreamArn`, …). */
export interface ResourceValues {
  readonly ref: string;
  readonly attributes: Readonly<Record<string, string>>;
}

/** What {@link resolveValue} resolves against. */
export interface ResolveContext {
  readonly stackName: string;
  readonly region: string;
  readonly accountId: string;
  /** The local values of the resources the run created, by logical id. */
  readonly resources: ReadonlyMap<string, ResourceValues>;
  /** Every resource's type, by logical id, to name what the run did not create. */
  readonly types?: ReadonlyMap<string, string>;
}

/** Marks `AWS::NoValue`: the property is left out. */
export const NO_VALUE: unique symbol = Symbol('AWS::NoValue');

/**
 * Resolves a template value to a string, as CloudFormation would with the local resources in
 * place of the deployed ones: literals (strings, numbers, booleans), `Ref` (a resource, or the
 * pseudo parameters `AWS::Region`, `AWS::AccountId`, `AWS::Partition`, `AWS::URLSuffix`,
 * `AWS::StackName`, `AWS::NoValue`), `Fn::GetAtt`, `Fn::Join`, `Fn::Sub` (both forms),
 * `Fn::Select` and `Fn::Split`.
 *
 * @param where - what the value is, for error messages (`CONSUMER_NAME of Orders/Consumer/Function`)
 * @returns the string, or {@link NO_VALUE} for `AWS::NoValue`
 * @throws CloudAssemblyError naming `where` and the expression when it refers to a resource the run
 *   did not create (and says its type), an attribute it does not know, a parameter, or an intrinsic
 *   function it does not resolve (`Fn::If`, `Fn::ImportValue`, …)
 */
export function resolveValue(value: unknown, context: ResolveContext, where: string): string | typeof NO_VALUE {
  const fail = (why: string): never => {
    throw new CloudAssemblyError(`${where}: ${why} (in ${JSON.stringify(value)})`);
  };
  const resolve = (v: unknown): string | typeof NO_VALUE => {
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return fail('not a string, a number or an intrinsic function');
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length !== 1) return fail('an object that is not one intrinsic function');
    const [name, argument] = entries[0]!;
    switch (name) {
      case 'Ref':
        return typeof argument === 'string' ? ref(argument) : fail('Ref of a non-string');
      case 'Fn::GetAtt': {
        const [id, attribute] = Array.isArray(argument) ? argument : typeof argument === 'string' ? argument.split(/\.(.*)/s) : [];
        if (typeof id !== 'string' || typeof attribute !== 'string') return fail('a malformed Fn::GetAtt');
        return getAtt(id, attribute);
      }
      case 'Fn::Join': {
        if (!Array.isArray(argument) || typeof argument[0] !== 'string' || !Array.isArray(argument[1])) return fail('a malformed Fn::Join');
        return (argument[1] as unknown[])
          .map(resolve)
          .filter((part): part is string => part !== NO_VALUE)
          .join(argument[0]);
      }
      case 'Fn::Select': {
        if (!Array.isArray(argument) || argument.length !== 2) return fail('a malformed Fn::Select');
        const index = Number(resolve(argument[0]));
        const list = Array.isArray(argument[1]) ? (argument[1] as unknown[]).map(resolve) : split(argument[1]);
        const chosen = list[index];
        return chosen === undefined ? fail(`Fn::Select index ${index} is out of range`) : chosen;
      }
      case 'Fn::Sub': {
        const [text, variables] = typeof argument === 'string' ? [argument, {}] : Array.isArray(argument) ? argument : [];
        if (typeof text !== 'string') return fail('a malformed Fn::Sub');
        return text.replace(/\$\{([^}!][^}]*)\}/g, (_match, expression: string) => {
          const own = (variables as Record<string, unknown>)[expression];
          if (own !== undefined) return stringOf(resolve(own));
          const [id, attribute] = expression.split(/\.(.*)/s);
          return stringOf(attribute === undefined ? ref(id!) : getAtt(id!, attribute));
        });
      }
      default:
        return fail(`${name} is not resolved by the local run (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split are)`);
    }
  };
  const split = (v: unknown): (string | typeof NO_VALUE)[] => {
    const object = v as Record<string, unknown> | null;
    const argument = object?.['Fn::Split'];
    if (!Array.isArray(argument) || typeof argument[0] !== 'string') return fail('Fn::Select needs a list or an Fn::Split');
    return stringOf(resolve(argument[1])).split(argument[0]);
  };
  const stringOf = (v: string | typeof NO_VALUE): string => (v === NO_VALUE ? fail('AWS::NoValue inside a string') : v);
  const ref = (id: string): string | typeof NO_VALUE => {
    switch (id) {
      case 'AWS::Region':
        return context.region;
      case 'AWS::AccountId':
        return context.accountId;
      case 'AWS::Partition':
        return 'aws';
      case 'AWS::URLSuffix':
        return 'amazonaws.com';
      case 'AWS::StackName':
        return context.stackName;
      case 'AWS::NoValue':
        return NO_VALUE;
    }
    const local = context.resources.get(id);
    if (local !== undefined) return local.ref;
    return fail(notLocal(id));
  };
  const getAtt = (id: string, attribute: string): string => {
    const local = context.resources.get(id);
    if (local === undefined) return fail(notLocal(id));
    const found = local.attributes[attribute];
    if (found === undefined) {
      return fail(`the local ${id} has no attribute ${attribute} (it has ${Object.keys(local.attributes).join(', ') || 'none'})`);
    }
    return found;
  };
  const notLocal = (id: string): string => {
    const type = context.types?.get(id);
    return type === undefined
      ? `${id} is neither a resource of the stack nor a pseudo parameter the local run knows (a template parameter has no local value)`
      : `${id} (${type}) is not created by the local run (it creates the stack's tables, queues, topics, event buses, buckets and functions)`;
  };
  return resolve(value);
}

/** The asset directory of a function, absolute, from its metadata or the assets manifest's entry for its `S3Key`. */
export function functionAssetDirectory(
  fn: FunctionModel,
  assemblyDirectory: string,
  assetSources: ReadonlyMap<string, string>,
): string | undefined {
  if (fn.assetPath !== undefined) return join(assemblyDirectory, fn.assetPath);
  const source = fn.s3Key === undefined ? undefined : assetSources.get(fn.s3Key);
  return source === undefined ? undefined : join(assemblyDirectory, source);
}

function literalString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function optionalNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return undefined;
}

function optionalBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  return undefined;
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CloudAssemblyError(`${where} is not JSON: ${(error as Error).message}`, { cause: error });
  }
}

/** What `CapacityProviderConfig` says of Lambda Managed Instances, `undefined` without it. */
function capacityProviderOf(config: unknown): FunctionModel['capacityProvider'] {
  const managed = (
    config as { LambdaManagedInstancesCapacityProviderConfig?: { PerExecutionEnvironmentMaxConcurrency?: unknown } } | undefined
  )?.LambdaManagedInstancesCapacityProviderConfig;
  if (managed === undefined) return undefined;
  return { perEnvironmentMaxConcurrency: optionalNumber(managed.PerExecutionEnvironmentMaxConcurrency) };
}
