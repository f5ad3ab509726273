/**
 * A deployed consumer's resources, read from the file `cdk deploy --outputs-file F` (or
 * `cdklocal deploy --outputs-file F`) writes: `{ "<StackName>": { "<OutputKey>": "<value>" } }`.
 * The keys follow `config/outputKeys.ts` (what `IdempotentConsumer.addOutputs()` writes). No AWS
 * SDK, no CDK: the command line loads this before any command runs.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { BUSINESS_TABLE_OUTPUT_SUFFIX, consumerOutputKeys, type ConsumerOutput } from 'idempotent-consumer/settings';
import { tableEnvironmentVariable } from 'idempotent-consumer/settings';
import { UsageError } from './dlq/errors.js';

/** The outputs of every stack in an outputs file: stack name → output key → value. */
export type StackOutputsFile = Readonly<Record<string, Readonly<Record<string, string>>>>;

/** One consumer's resources, as its stack's outputs name them. Absent outputs are absent fields. */
export type ConsumerResources = {
  /** The stack the outputs belong to. */
  readonly stackName: string;
  /** The prefix of the consumer's output keys (`''` for the only consumer of its stack). */
  readonly prefix: string;
  /** Business tables: the name in the output key (`Orders` of `OrdersTableName`) → physical name. */
  readonly tables: Readonly<Record<string, string>>;
  /** The dead-letter queue's URL: every consumer has one (it is how a consumer's outputs are found). */
  readonly deadLetterQueueUrl: string;
} & { readonly [K in Exclude<ConsumerOutput, 'deadLetterQueueUrl'>]?: string };

/** Which consumer of an outputs file to use. */
export interface ConsumerSelection {
  /** The stack (`--stack`): its name as the outputs file spells it. */
  readonly stack?: string;
  /** The consumer (`--consumer`), when a stack holds several: its `ConsumerName` output or its key prefix. */
  readonly consumer?: string;
}

/** The flags of a command that reads a deployed consumer from an outputs file. */
export interface OutputsFileFlags {
  /** `--outputs-file`: the file `cdk deploy --outputs-file F` wrote. */
  readonly outputsFile?: string;
  /** `--stack` */
  readonly stack?: string;
  /** `--consumer` */
  readonly consumer?: string;
}

/** The outputs file cannot be read, or does not name the consumer asked for. Exit code 2. */
export class StackOutputsError extends UsageError {}

/**
 * Checks the shape of an outputs file's content: an object of stacks, each an object of outputs.
 * Values that are numbers or booleans are kept as their text; other values are left out.
 *
 * @param file - the file's name, for error messages
 * @throws StackOutputsError when `content` is not an object of objects
 */
export function parseStackOutputs(content: unknown, file: string): StackOutputsFile {
  const expected = `expected what \`cdk deploy --outputs-file ${file}\` writes: { "<StackName>": { "<OutputKey>": "<value>" } }`;
  if (typeof content !== 'object' || content === null || Array.isArray(content))
    throw new StackOutputsError(`${file}: not a stack outputs file (${expected})`);
  const stacks: Record<string, Record<string, string>> = {};
  for (const [stackName, outputs] of Object.entries(content)) {
    if (typeof outputs !== 'object' || outputs === null || Array.isArray(outputs)) {
      throw new StackOutputsError(`${file}: the entry "${stackName}" is not an object of outputs (${expected})`);
    }
    const values: Record<string, string> = {};
    for (const [key, value] of Object.entries(outputs as Record<string, unknown>)) {
      if (typeof value === 'string') values[key] = value;
      else if (typeof value === 'number' || typeof value === 'boolean') values[key] = String(value);
    }
    stacks[stackName] = values;
  }
  return stacks;
}

/**
 * Reads an outputs file.
 *
 * @throws StackOutputsError when the file is missing, is not JSON, or is not shaped as one
 */
export async function readStackOutputsFile(file: string): Promise<StackOutputsFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? `no such file (write it with \`cdk deploy --outputs-file ${file}\`)`
        : code === 'EISDIR'
          ? 'a directory, not a file'
          : (error as Error).message;
    throw new StackOutputsError(`--outputs-file ${file}: ${why}`, { cause: error });
  }
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch (error) {
    throw new StackOutputsError(`--outputs-file ${file}: not JSON (${(error as Error).message})`, { cause: error });
  }
  return parseStackOutputs(content, file);
}

const suffixes = Object.entries(consumerOutputKeys) as [ConsumerOutput, string][];
const DLQ_SUFFIX = consumerOutputKeys.deadLetterQueueUrl;

/**
 * The consumers of one stack's outputs. A consumer is found by its `<prefix>DeadLetterQueueUrl`
 * output; its other outputs are `<prefix><suffix>` (see `consumerOutputKeys`), and its business
 * tables `<prefix><Name>TableName`. When prefixes nest (`''` and `Payments`), a key belongs to the
 * consumer with the longest prefix that makes it one of its keys.
 *
 * @returns the consumers, ordered by prefix (`''` first)
 */
export function consumersOfStack(stackName: string, outputs: Readonly<Record<string, string>>): ConsumerResources[] {
  const prefixes = Object.keys(outputs)
    .filter((key) => key.endsWith(DLQ_SUFFIX))
    .map((key) => key.slice(0, -DLQ_SUFFIX.length))
    .sort((a, b) => a.localeCompare(b));
  const longestFirst = [...prefixes].sort((a, b) => b.length - a.length);
  const ownerOf = (key: string): string | undefined =>
    longestFirst.find((prefix) => key.startsWith(prefix) && ownsKey(key.slice(prefix.length)));
  return prefixes.map((prefix) => {
    const fields: Record<string, string> = {};
    const tables: Record<string, string> = {};
    for (const [key, value] of Object.entries(outputs)) {
      if (ownerOf(key) !== prefix) continue;
      const rest = key.slice(prefix.length);
      const known = suffixes.find(([, suffix]) => suffix === rest);
      if (known !== undefined) fields[known[0]] = value;
      else if (isBusinessTableKey(rest)) tables[rest.slice(0, -BUSINESS_TABLE_OUTPUT_SUFFIX.length)] = value;
    }
    return { ...fields, stackName, prefix, tables, deadLetterQueueUrl: outputs[`${prefix}${DLQ_SUFFIX}`]! } as ConsumerResources;
  });
}

function ownsKey(rest: string): boolean {
  return suffixes.some(([, suffix]) => suffix === rest) || isBusinessTableKey(rest);
}

function isBusinessTableKey(rest: string): boolean {
  return (
    /^[A-Z][A-Za-z0-9]*TableName$/.test(rest) && rest !== consumerOutputKeys.inboxTable && rest !== consumerOutputKeys.idempotencyTable
  );
}

/** How a consumer is named in messages: `Stack` or `Stack (consumer prefix Payments, name payments)`. */
export function describeConsumer(consumer: ConsumerResources): string {
  const parts = [
    ...(consumer.prefix === '' ? [] : [`prefix ${consumer.prefix}`]),
    ...(consumer.consumerName === undefined ? [] : [`consumer ${consumer.consumerName}`]),
  ];
  return parts.length === 0 ? consumer.stackName : `${consumer.stackName} (${parts.join(', ')})`;
}

/**
 * Picks one consumer from an outputs file: the only one, or the one `selection` names.
 *
 * @param file - the file's name, for error messages
 * @throws StackOutputsError when the file holds no consumer, the stack or consumer named is not
 *   there, or several match and none is named; the message lists what the file holds and the
 *   flag to add
 */
export function selectConsumer(outputs: StackOutputsFile, selection: ConsumerSelection, file: string): ConsumerResources {
  const stackNames = Object.keys(outputs);
  if (selection.stack !== undefined && !(selection.stack in outputs)) {
    throw new StackOutputsError(
      `--outputs-file ${file} has no stack "${selection.stack}"; ` +
        (stackNames.length === 0 ? 'it holds no stack at all' : `it holds ${stackNames.map((n) => `"${n}"`).join(', ')}`),
    );
  }
  const inScope = (selection.stack === undefined ? stackNames : [selection.stack]).flatMap((name) =>
    consumersOfStack(name, outputs[name] ?? {}),
  );
  const all = stackNames.flatMap((name) => consumersOfStack(name, outputs[name] ?? {}));
  const listing = (consumers: readonly ConsumerResources[]): string => consumers.map((c) => `  ${describeConsumer(c)}`).join('\n');
  if (inScope.length === 0) {
    const where = selection.stack === undefined ? `--outputs-file ${file}` : `stack "${selection.stack}" of ${file}`;
    throw new StackOutputsError(
      `${where} names no consumer (no output key ending in ${DLQ_SUFFIX}: give the consumer's outputs with ` +
        `IdempotentConsumer.addOutputs())` +
        (all.length === 0
          ? `; stacks in the file: ${stackNames.length === 0 ? 'none' : stackNames.join(', ')}`
          : `; consumers in the file:\n${listing(all)}`),
    );
  }
  const matching =
    selection.consumer === undefined
      ? inScope
      : inScope.filter((c) => c.consumerName === selection.consumer || c.prefix === selection.consumer);
  if (matching.length === 1) return matching[0]!;
  if (matching.length === 0) {
    throw new StackOutputsError(
      `--consumer ${selection.consumer}: no such consumer (its ConsumerName output or key prefix) in ${file}; there are:\n${listing(inScope)}`,
    );
  }
  const stacksMatching = new Set(matching.map((c) => c.stackName));
  const flag = stacksMatching.size > 1 ? '--stack NAME' : '--consumer NAME';
  throw new StackOutputsError(`--outputs-file ${file} holds ${matching.length} consumers; pick one with ${flag}:\n${listing(matching)}`);
}

/**
 * Reads an outputs file and picks one consumer ({@link selectConsumer}).
 *
 * @throws StackOutputsError as {@link readStackOutputsFile} and {@link selectConsumer}
 */
export async function readConsumerResources(file: string, selection: ConsumerSelection = {}): Promise<ConsumerResources> {
  return selectConsumer(await readStackOutputsFile(file), selection, file);
}

/** The shell variable of each consumer output `outputs --shell` prints, in that order. */
export const shellVariables: Readonly<Record<ConsumerOutput, string>> = {
  consumerName: 'CONSUMER_NAME',
  queueUrl: 'QUEUE_URL',
  deadLetterQueueUrl: 'DLQ_URL',
  inboxTable: 'INBOX_TABLE_NAME',
  idempotencyTable: 'IDEMPOTENCY_TABLE_NAME',
  payloadBucket: 'PAYLOAD_BUCKET_NAME',
  functionName: 'FUNCTION_NAME',
  logGroupName: 'LOG_GROUP_NAME',
  outboxTopicArn: 'OUTBOX_TOPIC_ARN',
  outboxQueueUrl: 'OUTBOX_QUEUE_URL',
  outboxEventBusArn: 'OUTBOX_EVENT_BUS_ARN',
  outboxRelayFunctionName: 'OUTBOX_RELAY_FUNCTION_NAME',
  alarmTopicArn: 'ALARM_TOPIC_ARN',
  dashboardName: 'DASHBOARD_NAME',
  dashboardUrl: 'DASHBOARD_URL',
  kafkaConsumerGroupId: 'KAFKA_CONSUMER_GROUP_ID',
  kafkaEventSourceMappingId: 'KAFKA_EVENT_SOURCE_MAPPING_ID',
};

/**
 * The consumer's resources as shell variables, in a stable order: those of {@link shellVariables}
 * that are present, then one `TABLE_NAME_<NAME>` per business table (the variable the function
 * itself reads, `Orders` → `TABLE_NAME_ORDERS`).
 */
export function shellVariablesOf(consumer: ConsumerResources): [name: string, value: string][] {
  const variables: [string, string][] = [];
  for (const [output, name] of Object.entries(shellVariables) as [ConsumerOutput, string][]) {
    const value = consumer[output];
    if (value !== undefined) variables.push([name, value]);
  }
  const tableNames = Object.keys(consumer.tables);
  for (const [table, value] of Object.entries(consumer.tables)) variables.push([tableEnvironmentVariable(table, tableNames), value]);
  return variables;
}

/**
 * `export NAME='value'` lines for `eval "$(idempotent-consumer outputs --shell …)"` in a POSIX
 * shell (sh, bash, zsh): each value in single quotes, a `'` in it written `'\''`.
 */
export function formatShellExports(consumer: ConsumerResources): string {
  return shellVariablesOf(consumer)
    .map(([name, value]) => `export ${name}='${value.replaceAll("'", "'\\''")}'`)
    .join('\n');
}

/**
 * The consumer `--outputs-file`, `--stack` and `--consumer` name, or `undefined` without
 * `--outputs-file`.
 *
 * @throws UsageError when `--stack` or `--consumer` come without `--outputs-file`
 * @throws StackOutputsError (exit 2) as `readConsumerResources`
 */
export async function consumerFromFlags(flags: OutputsFileFlags): Promise<ConsumerResources | undefined> {
  if (flags.outputsFile === undefined) {
    const stray = [flags.stack === undefined ? undefined : '--stack', flags.consumer === undefined ? undefined : '--consumer'].filter(
      (f) => f !== undefined,
    );
    if (stray.length > 0) throw new UsageError(`${stray.join(' and ')} need --outputs-file FILE`);
    return undefined;
  }
  return readConsumerResources(flags.outputsFile, {
    ...(flags.stack === undefined ? {} : { stack: flags.stack }),
    ...(flags.consumer === undefined ? {} : { consumer: flags.consumer }),
  });
}
