/**
 * Which functions of a stack a local run runs, with which event sources, and the consumer
 * settings its template amounts to; and the differences between those and what the run would
 * otherwise use (a settings module, `--fifo`, `--source`). Pure.
 *
 * @module
 */
import {
  type ConsumerSettings,
  defaultSettings,
  environmentVariables,
  kafkaRetryAttempts,
  maxReceiveCount,
  sqsProvisionedMode,
  tableEnvironmentVariables,
} from 'idempotent-consumer/settings';
import { CloudAssemblyError, type TemplateDifference } from '../errors.js';
import type { EventSourceMappingModel, FunctionModel, QueueModel, StackModel, TableModel } from './stackTemplate.js';
import type { FilterPattern } from '../matchesFilterPattern.js';

/** A function of the stack with one of its event source mappings. */
export interface MappedFunction {
  readonly fn: FunctionModel;
  readonly mapping: EventSourceMappingModel;
}

/** What a local run of a stack runs. */
export interface StackRunPlan {
  /** The consumer's function (the one with an SQS or Kafka event source mapping). */
  readonly consumer: FunctionModel;
  /** Its SQS event source mapping, the source queue and the queue's dead-letter queue. */
  readonly sqs: (MappedFunction & { readonly queue: QueueModel; readonly deadLetterQueue: QueueModel | undefined }) | undefined;
  /** Its Kafka event source mapping. */
  readonly kafka: MappedFunction | undefined;
  /**
   * Its Kinesis Data Streams or DynamoDB Streams event source mapping (a stream of a table other than
   * its inbox, whose stream is the outbox relay's), when it has one.
   */
  readonly stream: MappedFunction | undefined;
  /** The outbox relay: a function with a mapping on the consumer's inbox table's stream. */
  readonly relay: MappedFunction | undefined;
  /** The consumer's inbox table (`INBOX_TABLE_NAME`). */
  readonly inboxTable: TableModel;
  /** The consumer's business tables: logical name → table (from `TABLE_NAME_*`). */
  readonly tables: ReadonlyMap<string, TableModel>;
  /** The consumer settings the template amounts to (values it does not hold are the library's defaults). */
  readonly settings: ConsumerSettings;
  /** Each setting the template holds, with where (for the differences). */
  readonly templateValues: readonly TemplateValue[];
}

/** A setting the template holds. */
export interface TemplateValue {
  /** The setting's path in `ConsumerSettings`, e.g. `function.batchSize`. */
  readonly setting: string;
  readonly value: string | number | boolean;
  /** Where the template holds it, e.g. `BatchSize of Orders/Consumer/Function/SqsEventSource:…`. */
  readonly source: string;
  /** Compared only when the run has this kind of source. @default both */
  readonly only?: 'sqs' | 'kafka';
}

/** Options of {@link planStackRun}. */
export interface PlanOptions {
  /** The consumer function to run, by logical id or construct path, when the stack has several. */
  readonly functionId?: string;
  /** The logical names of the consumer's tables (the handler's `tables` option), to name `TABLE_NAME_*` back. */
  readonly tableNames?: readonly string[];
}

/**
 * Finds the consumer function (a function of the library: its environment has `CONSUMER_NAME`
 * and `INBOX_TABLE_NAME`, and it has an SQS or Kafka event source mapping), its sources, its
 * tables and its outbox relay, and reads the settings the template holds.
 *
 * @throws CloudAssemblyError when the stack has no such function, several (and `functionId`
 *   names none of them), or its inbox or a business table is not a table of the stack
 */
export function planStackRun(model: StackModel, options: PlanOptions = {}): StackRunPlan {
  const isConsumer = (fn: FunctionModel): boolean =>
    fn.environment[environmentVariables.consumerName] !== undefined &&
    fn.environment[environmentVariables.inboxTable] !== undefined &&
    model.mappings.some((m) => m.functionId === fn.id && m.source.kind !== 'dynamodb-stream');
  const consumers = [...model.functions.values()].filter(isConsumer);
  const wanted = options.functionId;
  const chosen =
    wanted === undefined ? consumers : consumers.filter((fn) => fn.id === wanted || fn.path === wanted || fn.path.startsWith(`${wanted}/`));
  if (chosen.length !== 1) {
    const list = consumers.map((fn) => `${fn.path} (${fn.id})`).join(', ');
    throw new CloudAssemblyError(
      consumers.length === 0
        ? `The stack ${model.stackName} has no consumer function (a function with CONSUMER_NAME and INBOX_TABLE_NAME in its environment and an SQS or Kafka event source mapping)`
        : wanted !== undefined && chosen.length === 0
          ? `The stack ${model.stackName} has no consumer function ${wanted}; it has ${list}`
          : `The stack ${model.stackName} has ${chosen.length} consumer functions: ${list}; name the one to run (--function <construct path or logical id>)`,
    );
  }
  const consumer = chosen[0]!;
  const mappings = model.mappings.filter((m) => m.functionId === consumer.id);
  const sqsMapping = mappings.find((m) => m.source.kind === 'sqs');
  const kafkaMapping = mappings.find((m) => m.source.kind === 'kafka');
  const queue = sqsMapping?.source.kind === 'sqs' ? model.queues.get(sqsMapping.source.queueId) : undefined;
  const deadLetterQueue = queue?.redrive === undefined ? undefined : model.queues.get(queue.redrive.deadLetterQueueId);

  const tableOf = (variable: string): TableModel => {
    const id = refId(consumer.environment[variable]);
    const table = id === undefined ? undefined : model.tables.get(id);
    if (table === undefined) {
      throw new CloudAssemblyError(
        `${variable} of ${consumer.path} is ${JSON.stringify(consumer.environment[variable])}, not a Ref to a table of the stack`,
      );
    }
    return table;
  };
  const inboxTable = tableOf(environmentVariables.inboxTable);
  const tables = new Map<string, TableModel>();
  const byVariable = new Map([...tableEnvironmentVariables(options.tableNames ?? [])].map(([name, variable]) => [variable, name]));
  for (const variable of Object.keys(consumer.environment)) {
    if (!variable.startsWith(environmentVariables.tablePrefix)) continue;
    tables.set(byVariable.get(variable) ?? logicalTableName(variable), tableOf(variable));
  }
  const relay = findRelay(model, consumer, inboxTable);
  const streamMapping = mappings.find(
    (m) => m.source.kind === 'kinesis' || (m.source.kind === 'dynamodb-stream' && m.source.tableId !== inboxTable.id),
  );
  const { settings, templateValues } = templateSettings(consumer, { sqsMapping, kafkaMapping, queue, deadLetterQueue });
  return {
    consumer,
    sqs: sqsMapping === undefined || queue === undefined ? undefined : { fn: consumer, mapping: sqsMapping, queue, deadLetterQueue },
    kafka: kafkaMapping === undefined ? undefined : { fn: consumer, mapping: kafkaMapping },
    stream: streamMapping === undefined ? undefined : { fn: consumer, mapping: streamMapping },
    relay,
    inboxTable,
    tables,
    settings,
    templateValues,
  };
}

/**
 * What the plan holds that a local run from the template does not run yet, one sentence each: a
 * Kinesis Data Streams or DynamoDB Streams event source mapping of the consumer (the local shard
 * log runs those sources from a settings module, `--source kinesis` / `--source dynamodb-streams`,
 * not from a template yet). The run goes on with the consumer's SQS or Kafka source.
 */
export function notRunFromTemplate(plan: StackRunPlan): string[] {
  const stream = plan.stream;
  if (stream === undefined) return [];
  const what = stream.mapping.source.kind === 'kinesis' ? 'Kinesis Data Streams' : 'DynamoDB Streams';
  return [
    `${plan.consumer.path}: its ${what} event source mapping ${stream.mapping.path} is not yet run locally from a template; ` +
      'the local run drives its SQS or Kafka source only',
  ];
}

/** A table's logical name from its variable when the handler's `tables` are not known: `TABLE_NAME_STOCK_ITEMS` → `stockItems`. */
export function logicalTableName(variable: string): string {
  const name = variable.slice(environmentVariables.tablePrefix.length);
  if (name !== name.toUpperCase()) return name;
  return name.toLowerCase().replace(/_([a-z0-9])/g, (_match, char: string) => char.toUpperCase());
}

function findRelay(model: StackModel, consumer: FunctionModel, inboxTable: TableModel): MappedFunction | undefined {
  const consumerName = consumer.environment[environmentVariables.consumerName];
  for (const mapping of model.mappings) {
    if (mapping.source.kind !== 'dynamodb-stream' || mapping.source.tableId !== inboxTable.id) continue;
    const fn = model.functions.get(mapping.functionId);
    if (fn === undefined) continue;
    const relayOf = fn.environment[environmentVariables.consumerName];
    if (relayOf === undefined || JSON.stringify(relayOf) === JSON.stringify(consumerName)) return { fn, mapping };
  }
  return undefined;
}

function refId(value: unknown): string | undefined {
  const ref = (value as { Ref?: unknown } | null)?.Ref;
  return typeof ref === 'string' ? ref : undefined;
}

function templateSettings(
  fn: FunctionModel,
  found: {
    readonly sqsMapping: EventSourceMappingModel | undefined;
    readonly kafkaMapping: EventSourceMappingModel | undefined;
    readonly queue: QueueModel | undefined;
    readonly deadLetterQueue: QueueModel | undefined;
  },
): { settings: ConsumerSettings; templateValues: TemplateValue[] } {
  const values: TemplateValue[] = [];
  const add = (setting: string, value: string | number | boolean | undefined, source: string, only?: 'sqs' | 'kafka'): void => {
    if (value !== undefined) values.push({ setting, value, source, ...(only === undefined ? {} : { only }) });
  };
  const env = environmentVariables;
  const variable = (name: string): string | undefined => {
    const value = fn.environment[name];
    return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
  };
  const numberVariable = (name: string): number | undefined => {
    const value = variable(name);
    return value === undefined || value.trim() === '' || !Number.isFinite(Number(value)) ? undefined : Number(value);
  };
  const inEnvironment = (name: string) => `${name} in the environment of ${fn.path}`;

  add('consumerName', variable(env.consumerName), inEnvironment(env.consumerName));
  const { queue, deadLetterQueue, sqsMapping, kafkaMapping } = found;
  if (queue !== undefined) {
    add('queue.fifo', queue.fifo, `FifoQueue of ${queue.path}`, 'sqs');
    add('queue.visibilityTimeoutSeconds', queue.visibilityTimeoutSeconds ?? 30, `VisibilityTimeout of ${queue.path}`, 'sqs');
    add('queue.maxReceiveCount', queue.redrive?.maxReceiveCount, `maxReceiveCount of the RedrivePolicy of ${queue.path}`, 'sqs');
    add('queue.retentionPeriodSeconds', queue.retentionPeriodSeconds, `MessageRetentionPeriod of ${queue.path}`, 'sqs');
    add('queue.maxMessageSizeBytes', queue.maxMessageSizeBytes, `MaximumMessageSize of ${queue.path}`, 'sqs');
  } else {
    const fifo = variable(env.fifo);
    add('queue.fifo', fifo === undefined ? undefined : fifo === 'true', inEnvironment(env.fifo));
  }
  if (deadLetterQueue !== undefined) {
    add(
      'queue.deadLetterRetentionPeriodSeconds',
      deadLetterQueue.retentionPeriodSeconds,
      `MessageRetentionPeriod of ${deadLetterQueue.path}`,
      'sqs',
    );
  }
  add(
    'queue.deadLetterMaxMessageSizeBytes',
    numberVariable(env.deadLetterMaxMessageSizeBytes),
    inEnvironment(env.deadLetterMaxMessageSizeBytes),
  );
  add('function.runtime', fn.runtime === '' ? undefined : fn.runtime, `Runtime of ${fn.path}`);
  add('function.timeoutSeconds', fn.timeoutSeconds, `Timeout of ${fn.path}`);
  add('function.memorySizeMb', fn.memorySizeMb, `MemorySize of ${fn.path}`);
  if (sqsMapping !== undefined) {
    add('function.batchSize', sqsMapping.batchSize ?? 10, `BatchSize of ${sqsMapping.path}`, 'sqs');
    add(
      'function.maxBatchingWindowSeconds',
      sqsMapping.maxBatchingWindowSeconds ?? 0,
      `MaximumBatchingWindowInSeconds of ${sqsMapping.path}`,
      'sqs',
    );
    add('function.maxConcurrency', sqsMapping.maxConcurrency, `ScalingConfig.MaximumConcurrency of ${sqsMapping.path}`, 'sqs');
    add('function.minimumPollers', sqsMapping.pollers?.minimum, `ProvisionedPollerConfig.MinimumPollers of ${sqsMapping.path}`, 'sqs');
    add('function.maximumPollers', sqsMapping.pollers?.maximum, `ProvisionedPollerConfig.MaximumPollers of ${sqsMapping.path}`, 'sqs');
    // Compared only when the template has a MetricsConfig (a stack of a version before it has none).
    if (sqsMapping.metrics.length > 0)
      add('function.mappingMetrics', sqsMapping.metrics.includes('EventCount'), `MetricsConfig.Metrics of ${sqsMapping.path}`, 'sqs');
    add('function.filters', filtersValue(sqsMapping.filters), `FilterCriteria of ${sqsMapping.path}`, 'sqs');
  }
  add('retry.maxAttempts', numberVariable(env.maxAttempts), inEnvironment(env.maxAttempts));
  add('retry.backoffBaseSeconds', numberVariable(env.retryBackoffBaseSeconds), inEnvironment(env.retryBackoffBaseSeconds));
  add('retry.backoffMaxSeconds', numberVariable(env.retryBackoffMaxSeconds), inEnvironment(env.retryBackoffMaxSeconds));
  add('idempotency.inboxTtlSeconds', numberVariable(env.inboxTtlSeconds), inEnvironment(env.inboxTtlSeconds));
  add('idempotency.sideEffectTtlSeconds', numberVariable(env.sideEffectTtlSeconds), inEnvironment(env.sideEffectTtlSeconds));
  add('idempotency.sideEffectMinRemainingMs', numberVariable(env.sideEffectMinRemainingMs), inEnvironment(env.sideEffectMinRemainingMs));
  if (kafkaMapping !== undefined && kafkaMapping.source.kind === 'kafka') {
    const where = (property: string) => `${property} of ${kafkaMapping.path}`;
    add('kafka.topic', kafkaMapping.source.topics[0], where('Topics'), 'kafka');
    add('kafka.batchSize', kafkaMapping.batchSize ?? 100, where('BatchSize'), 'kafka');
    add('kafka.startingPosition', kafkaMapping.startingPosition, where('StartingPosition'), 'kafka');
    add('kafka.retryAttempts', kafkaMapping.retryAttempts, where('MaximumRetryAttempts'), 'kafka');
    add('kafka.maxRecordAgeSeconds', kafkaMapping.maxRecordAgeSeconds ?? -1, where('MaximumRecordAgeInSeconds'), 'kafka');
    add('kafka.bisectBatchOnError', kafkaMapping.bisectBatchOnError ?? false, where('BisectBatchOnFunctionError'), 'kafka');
    add('kafka.minimumPollers', kafkaMapping.pollers?.minimum, where('ProvisionedPollerConfig.MinimumPollers'), 'kafka');
    add('kafka.maximumPollers', kafkaMapping.pollers?.maximum, where('ProvisionedPollerConfig.MaximumPollers'), 'kafka');
    add('kafka.filters', filtersValue(kafkaMapping.filters), where('FilterCriteria'), 'kafka');
  }

  const settings = structuredClone(defaultSettings) as unknown as Record<string, unknown>;
  for (const { setting, value } of values) {
    // The filter patterns themselves, not their JSON text (which is what the differences compare).
    if (setting === 'function.filters' || setting === 'kafka.filters') {
      const patterns = JSON.parse(value as string) as FilterPattern[];
      if (patterns.length > 0) (settings[setting.split('.')[0]!] as Record<string, unknown>).filters = patterns;
      continue;
    }
    const [group, key] = setting.split('.') as [string, string | undefined];
    if (key === undefined) settings[group] = value;
    else (settings[group] as Record<string, unknown>)[key] = value;
  }
  return { settings: settings as unknown as ConsumerSettings, templateValues: values };
}

/** What the local run would use besides the template, to compare. */
export interface LocalRunAsGiven {
  /** The settings module's settings, and how to name it (`src/settings.ts#settings`). */
  readonly settings?: { readonly value: ConsumerSettings; readonly name: string };
  /** `--fifo` was given. */
  readonly fifo?: boolean;
  /** The event source asked for (`--source`). */
  readonly source?: 'sqs' | 'kafka' | 'kinesis' | 'dynamodb-streams';
  /** Invocations one execution environment serves at once (`--concurrency-per-process`). */
  readonly concurrencyPerProcess?: number;
}

/**
 * AWS's default `PerExecutionEnvironmentMaxConcurrency` of a Node.js function on Lambda Managed
 * Instances: 64 concurrent requests per vCPU; the local runtime's environment is one process, one
 * thread, as one vCPU's worker thread
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-nodejs-runtime.html).
 */
export const MANAGED_INSTANCES_NODEJS_DEFAULT_CONCURRENCY = 64;

/**
 * Invocations one execution environment of `fn` serves at once: `given` (`--concurrency-per-process`),
 * else the template's `PerExecutionEnvironmentMaxConcurrency` (AWS's Node.js default when the
 * function is on a capacity provider without it), else 1 (Lambda's default compute).
 */
export function concurrencyPerEnvironment(fn: FunctionModel, given: number | undefined): number {
  if (given !== undefined) return given;
  if (fn.capacityProvider === undefined) return 1;
  return fn.capacityProvider.perEnvironmentMaxConcurrency ?? MANAGED_INSTANCES_NODEJS_DEFAULT_CONCURRENCY;
}

/**
 * Every difference between the plan's template and what the run was given: each setting the
 * template holds against the settings module's (the queue's `maxReceiveCount` against
 * `maxReceiveCount(settings)`, the Kafka mapping's `MaximumRetryAttempts` against
 * `kafkaRetryAttempts(settings)`), `--fifo` against the queue, `--source` against the mappings,
 * and the local event source's batch item failures against `FunctionResponseTypes`.
 *
 * @returns the differences; empty when they agree
 */
export function templateDifferences(plan: StackRunPlan, given: LocalRunAsGiven): TemplateDifference[] {
  const differences: TemplateDifference[] = [];
  const source = given.source ?? (plan.sqs !== undefined ? 'sqs' : 'kafka');
  if (source === 'sqs' && plan.sqs === undefined) {
    differences.push({
      setting: 'the event source',
      template: `no SQS event source mapping for ${plan.consumer.path} (it has Kafka)`,
      local: '--source sqs',
    });
  }
  if (source === 'kafka' && plan.kafka === undefined) {
    differences.push({
      setting: 'the event source',
      template: `no Kafka event source mapping for ${plan.consumer.path}`,
      local: '--source kafka',
    });
  }
  if (source === 'kinesis' || source === 'dynamodb-streams') {
    const kind = source === 'kinesis' ? 'kinesis' : 'dynamodb-stream';
    differences.push({
      setting: 'the event source',
      template:
        plan.stream?.mapping.source.kind === kind
          ? `${plan.stream.mapping.path}: a ${source} event source mapping, not yet run locally from a template`
          : `no ${source} event source mapping for ${plan.consumer.path}`,
      local: `--source ${source}`,
    });
  }
  if (given.fifo === true && plan.sqs !== undefined && !plan.sqs.queue.fifo) {
    differences.push({ setting: 'queue.fifo', template: `a standard queue (${plan.sqs.queue.path})`, local: '--fifo' });
  }
  const mapping = source === 'sqs' ? plan.sqs?.mapping : plan.kafka?.mapping;
  if (mapping !== undefined && !mapping.reportBatchItemFailures) {
    differences.push({
      setting: 'FunctionResponseTypes',
      template: `no ReportBatchItemFailures on ${mapping.path}`,
      local: 'the local event source mapping, which reads batch item failures (the consumer reports its failures that way)',
    });
  }
  if (plan.relay !== undefined && !plan.relay.mapping.reportBatchItemFailures) {
    differences.push({
      setting: 'FunctionResponseTypes',
      template: `no ReportBatchItemFailures on ${plan.relay.mapping.path}`,
      local: 'the local stream event source mapping, which reads batch item failures (the relay reports its failures that way)',
    });
  }
  const template = concurrencyPerEnvironment(plan.consumer, undefined);
  if (given.concurrencyPerProcess !== undefined && given.concurrencyPerProcess !== template) {
    const managed = plan.consumer.capacityProvider;
    differences.push({
      setting: 'concurrency per execution environment',
      template:
        managed === undefined
          ? `1 (${plan.consumer.path} has no CapacityProviderConfig: one invocation at a time per execution environment)`
          : `${template} (CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency of ${plan.consumer.path}${managed.perEnvironmentMaxConcurrency === undefined ? ": not set, AWS's Node.js default" : ''})`,
      local: `--concurrency-per-process ${given.concurrencyPerProcess}`,
    });
  }
  if (given.settings !== undefined) {
    const local = given.settings.value;
    // SQS provisioned mode on one side only (the poller bounds themselves are compared below when the template has them).
    if (source === 'sqs' && plan.sqs !== undefined && sqsProvisionedMode(local) !== (plan.sqs.mapping.pollers !== undefined)) {
      differences.push({
        setting: 'function.minimumPollers / function.maximumPollers (SQS provisioned mode)',
        template: `${plan.sqs.mapping.pollers === undefined ? 'standard mode: no' : 'provisioned mode:'} ProvisionedPollerConfig on ${plan.sqs.mapping.path}`,
        local: `${sqsProvisionedMode(local) ? 'provisioned mode' : 'standard mode (neither set)'} by the settings ${given.settings.name}`,
      });
    }
    for (const value of plan.templateValues) {
      if (value.only !== undefined && value.only !== source) continue;
      const localValue =
        value.setting === 'queue.maxReceiveCount'
          ? maxReceiveCount(local)
          : value.setting === 'kafka.retryAttempts'
            ? kafkaRetryAttempts(local)
            : value.setting === 'function.filters' || value.setting === 'kafka.filters'
              ? filtersValue(valueAt(local, value.setting) as readonly FilterPattern[] | undefined)
              : value.setting === 'function.mappingMetrics'
                ? local.function.mappingMetrics !== false
                : valueAt(local, value.setting);
      // A setting the settings object does not have (a library version without it) is not compared.
      if (localValue === value.value || localValue === undefined) continue;
      const derived =
        value.setting === 'queue.maxReceiveCount'
          ? ' (maxReceiveCount(settings))'
          : value.setting === 'kafka.retryAttempts'
            ? ' (kafkaRetryAttempts(settings))'
            : '';
      differences.push({
        setting: value.setting,
        // Filters are compared as their canonical JSON already: shown as it is.
        template: `${shown(value.setting, value.value)} (${value.source})`,
        local: `${shown(value.setting, localValue)}${derived} by the settings ${given.settings.name}`,
      });
    }
  }
  return differences;
}

/**
 * The filter patterns of a mapping as one comparable string: canonical JSON (object keys sorted) of
 * the list, `[]` without filters, so that a template's `FilterCriteria` and a settings module's
 * filters compare equal whatever their key order.
 */
function filtersValue(filters: readonly FilterPattern[] | undefined): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value !== null && typeof value === 'object'
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
          )
        : value;
  return JSON.stringify(canonical(filters ?? []));
}

/** A value of a difference as the message shows it: JSON, or a filter list's canonical JSON as it is. */
function shown(setting: string, value: unknown): string {
  return setting.endsWith('.filters') ? String(value) : JSON.stringify(value);
}

function valueAt(settings: ConsumerSettings, path: string): unknown {
  let value: unknown = settings;
  for (const key of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
  return value;
}
