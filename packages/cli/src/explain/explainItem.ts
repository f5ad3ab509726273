/**
 * `explain`: which messages wrote an item. Under provenance (`settings.idempotency.provenance`)
 * each applied inbox row records the keys its message wrote (`wrote`); this scans the inbox for
 * the rows whose `wrote` contains the item's key. A Scan reads the whole inbox: a list's members
 * cannot be indexed (docs/performance.md states the cost).
 *
 * @module
 */
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import { MARSHALL_OPTIONS, provenanceKey, UNMARSHALL_OPTIONS } from 'idempotent-consumer/internal';
import { businessTableOutputName, environmentVariables, tableEnvironmentVariable } from 'idempotent-consumer/settings';
import type { CliIo } from '../cliIo.js';
import { UsageError } from '../dlq/errors.js';
import { isLoopback } from '../dlq/sqsClient.js';
import { consumerFromFlags, type OutputsFileFlags } from '../stackOutputs.js';

/** The flags of `explain`. */
export interface ExplainFlags extends OutputsFileFlags {
  readonly table: string;
  readonly key: string;
  readonly json?: boolean;
  readonly consistent?: boolean;
  readonly endpoint?: string;
  readonly region?: string;
}

/** One message that wrote the item, as its inbox row keeps it. */
export interface WritingMessage {
  /** When its unit committed (the row's `processedAt`, ISO 8601). */
  readonly appliedAt: string;
  readonly idempotencyKey: string;
  /** The source's id of the message (SQS `messageId`, Kafka `<topic>-<partition>@<offset>`). */
  readonly messageId: string;
}

/** What `explain` found. */
export interface Explanation {
  readonly table: string;
  /** The key as the inbox rows spell it (`<table>:<canonical JSON>`). */
  readonly key: string;
  /** Newest first. */
  readonly messages: readonly WritingMessage[];
  /** Rows whose `wrote` was cut at the budget and does not name the item: it may be among what they wrote. */
  readonly truncatedRows: number;
  /** Whether any inbox row of the consumer records what it wrote (provenance on). */
  readonly provenanceSeen: boolean;
  /** Items the Scan read, and the read units it consumed (when DynamoDB reports them). */
  readonly scannedCount: number;
  readonly consumedReadUnits: number;
}

/**
 * Parses `--key`: a JSON object of string, number or `{"B":"<base64>"}` values.
 *
 * @throws UsageError (exit 2) when it is not
 */
export function parseKeyFlag(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--key must be a JSON object such as '{"accountId":"A-1"}': ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.keys(parsed).length === 0)
    throw new UsageError(`--key must be a JSON object of the item's key attributes, such as '{"accountId":"A-1"}', not ${text}`);
  const key: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value === 'string' && value !== '') key[name] = value;
    else if (typeof value === 'number' && Number.isFinite(value)) key[name] = value;
    else if (
      typeof value === 'object' &&
      value !== null &&
      typeof (value as { B?: unknown }).B === 'string' &&
      Object.keys(value).length === 1
    )
      key[name] = Buffer.from((value as { B: string }).B, 'base64');
    else
      throw new UsageError(
        `--key attribute ${name} must be a non-empty string, a number or {"B":"<base64>"}, not ${JSON.stringify(value)}`,
      );
  }
  return key;
}

/**
 * Runs `explain` and prints its result.
 *
 * @returns the exit code: 0 listed, 1 no inbox row records what it wrote (provenance off)
 * @throws UsageError (exit 2) for a bad `--table` or `--key`, or resources that cannot be named
 */
export async function explainCommand(flags: ExplainFlags, io: CliIo): Promise<number> {
  const key = parseKeyFlag(flags.key);
  let variable: string;
  try {
    variable = tableEnvironmentVariable(flags.table);
  } catch (error) {
    throw new UsageError(`--table: ${(error as Error).message}`);
  }
  const outputs = await consumerFromFlags(flags);
  const value = (name: string): string | undefined => (io.env[name] ?? '').trim() || undefined;
  const inboxTable = outputs?.inboxTable ?? value(environmentVariables.inboxTable);
  const tableName = outputs !== undefined ? outputs.tables[businessTableOutputName(flags.table)] : value(variable);
  const consumerName = outputs?.consumerName ?? value(environmentVariables.consumerName);
  const missing = [
    inboxTable === undefined ? environmentVariables.inboxTable : undefined,
    tableName === undefined
      ? outputs !== undefined
        ? `the ${businessTableOutputName(flags.table)}TableName output`
        : variable
      : undefined,
  ].filter((name) => name !== undefined);
  if (missing.length > 0)
    throw new UsageError(
      `explain needs the consumer's table names: ${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not set. ` +
        'Set them as the function has them (eval "$(idempotent-consumer outputs --shell --outputs-file cdk-outputs.json)"), or pass --outputs-file',
    );

  const dynamoDb = dynamoDbClient(flags, io.env);
  try {
    await checkKeyAttributes(dynamoDb, flags.table, tableName!, key);
    const explanation = await explainItem(
      DynamoDBDocumentClient.from(dynamoDb, {
        marshallOptions: { ...MARSHALL_OPTIONS },
        unmarshallOptions: { ...UNMARSHALL_OPTIONS },
      }),
      {
        inboxTable: inboxTable!,
        ...(consumerName !== undefined ? { consumerName } : {}),
        table: flags.table,
        key,
        consistentRead: flags.consistent === true,
      },
    );
    io.stdout.write(flags.json === true ? `${JSON.stringify(explanation, null, 2)}\n` : formatExplanation(explanation));
    if (!explanation.provenanceSeen) {
      io.stderr.write(
        'no inbox row records what its message wrote: provenance is off. Turn on settings.idempotency.provenance ' +
          '(the function gets PROVENANCE=true); messages applied from then on are recorded.\n',
      );
      return 1;
    }
    return 0;
  } finally {
    dynamoDb.destroy();
  }
}

/**
 * Scans the inbox for the applied rows whose `wrote` names the item, newest first; when none do,
 * scans on until it meets a row that records `wrote` at all, to tell "nobody wrote it" from
 * "provenance is off" (a second full Scan at most, only then).
 */
export async function explainItem(
  client: DynamoDBDocumentClient,
  options: {
    readonly inboxTable: string;
    /** Only this consumer's rows (an inbox table may be shared). @default every consumer's */
    readonly consumerName?: string;
    readonly table: string;
    readonly key: Readonly<Record<string, unknown>>;
    readonly consistentRead?: boolean;
  },
): Promise<Explanation> {
  const spelled = provenanceKey(options.table, options.key);
  const names: Record<string, string> = { '#wrote': 'wrote', '#truncated': 'wroteTruncated', '#kind': 'kind' };
  const values: Record<string, unknown> = { ':key': spelled, ':true': true, ':inbox': 'inbox' };
  let scope = '#kind = :inbox';
  if (options.consumerName !== undefined) {
    names['#consumer'] = 'consumer';
    values[':consumer'] = options.consumerName;
    scope += ' AND #consumer = :consumer';
  }
  const messages: WritingMessage[] = [];
  let truncatedRows = 0;
  let scannedCount = 0;
  let consumedReadUnits = 0;
  const pages = paginateScan(
    { client },
    {
      TableName: options.inboxTable,
      FilterExpression: `${scope} AND (contains(#wrote, :key) OR #truncated = :true)`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ConsistentRead: options.consistentRead === true,
      ReturnConsumedCapacity: 'TOTAL',
    },
  );
  for await (const page of pages) {
    scannedCount += page.ScannedCount ?? 0;
    consumedReadUnits += page.ConsumedCapacity?.CapacityUnits ?? 0;
    for (const row of page.Items ?? []) {
      const wrote = Array.isArray(row.wrote) ? (row.wrote as unknown[]) : [];
      if (!wrote.includes(spelled)) {
        truncatedRows += 1;
        continue;
      }
      messages.push({ appliedAt: String(row.processedAt), idempotencyKey: String(row.idempotencyKey), messageId: String(row.messageId) });
    }
  }
  messages.sort((a, b) => (a.appliedAt < b.appliedAt ? 1 : a.appliedAt > b.appliedAt ? -1 : 0));
  let provenanceSeen = messages.length > 0 || truncatedRows > 0;
  if (!provenanceSeen) {
    const anyRow = paginateScan(
      { client },
      {
        TableName: options.inboxTable,
        FilterExpression: `${scope} AND attribute_exists(#wrote)`,
        ExpressionAttributeNames: { '#wrote': 'wrote', '#kind': 'kind', ...(names['#consumer'] ? { '#consumer': 'consumer' } : {}) },
        ExpressionAttributeValues: {
          ':inbox': 'inbox',
          ...(values[':consumer'] !== undefined ? { ':consumer': values[':consumer'] } : {}),
        },
        ProjectionExpression: '#kind',
        ReturnConsumedCapacity: 'TOTAL',
      },
    );
    for await (const page of anyRow) {
      scannedCount += page.ScannedCount ?? 0;
      consumedReadUnits += page.ConsumedCapacity?.CapacityUnits ?? 0;
      if ((page.Items ?? []).length > 0) {
        provenanceSeen = true;
        break;
      }
    }
  }
  return { table: options.table, key: spelled, messages, truncatedRows, provenanceSeen, scannedCount, consumedReadUnits };
}

/** The text report of an explanation. */
export function formatExplanation(explanation: Explanation): string {
  const lines = [
    `${explanation.key}: written by ${explanation.messages.length} message${explanation.messages.length === 1 ? '' : 's'} in the inbox window (newest first)`,
  ];
  for (const m of explanation.messages) lines.push(`  ${m.appliedAt}  idempotency key ${m.idempotencyKey}  message ${m.messageId}`);
  if (explanation.truncatedRows > 0)
    lines.push(`  and ${explanation.truncatedRows} row(s) whose list of keys was cut at its budget: the item may be among what they wrote`);
  lines.push(`scanned ${explanation.scannedCount} inbox items (${explanation.consumedReadUnits} read units)`);
  return `${lines.join('\n')}\n`;
}

/**
 * Checks that `key` holds exactly the table's key attributes (from `DescribeTable`).
 *
 * @throws UsageError (exit 2) when it does not
 */
async function checkKeyAttributes(dynamoDb: DynamoDBClient, table: string, tableName: string, key: Readonly<Record<string, unknown>>) {
  const described = await dynamoDb.send(new DescribeTableCommand({ TableName: tableName }));
  const expected = (described.Table?.KeySchema ?? []).map((element) => element.AttributeName!).sort();
  const given = Object.keys(key).sort();
  if (expected.join('\u0000') !== given.join('\u0000'))
    throw new UsageError(`--key of table ${table} must hold its key attributes ${expected.join(', ')}, not ${given.join(', ')}`);
}

function dynamoDbClient(flags: ExplainFlags, env: NodeJS.ProcessEnv): DynamoDBClient {
  const configured = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true' ? undefined : env.AWS_ENDPOINT_URL_DYNAMODB || env.AWS_ENDPOINT_URL;
  const endpoint = flags.endpoint ?? (configured || undefined);
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint))
    throw new UsageError(`the DynamoDB endpoint must be an http(s) URL such as http://127.0.0.1:8000, not "${endpoint}"`);
  const local = endpoint !== undefined && isLoopback(endpoint) && (env.AWS_ACCESS_KEY_ID ?? '') === '' && (env.AWS_PROFILE ?? '') === '';
  const region = flags.region ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || (local ? 'us-east-1' : undefined));
  return new DynamoDBClient({
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(region !== undefined ? { region } : {}),
    ...(local ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
}
