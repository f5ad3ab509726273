/**
 * The consumer a decided dry run (`dlq redrive --dry-run --handler F`) asks: its handler module,
 * loaded as `local --handler` loads it, its table names and inbox window, and a DynamoDB client
 * that only reads.
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type ConsumerDefinition, defineConsumer, MARSHALL_OPTIONS, UNMARSHALL_OPTIONS } from 'idempotent-consumer/internal';
import {
  businessTableOutputName,
  type ConsumerSettings,
  environmentVariables,
  tableEnvironmentVariables,
} from 'idempotent-consumer/settings';
import { loadHandler, loadSettings } from '../local/loadExport.js';
import type { ConsumerResources } from '../stackOutputs.js';
import { UsageError } from './errors.js';
import { DEFAULT_INBOX_WINDOW, type InboxWindow } from './inboxWindow.js';
import { isHttpUrl, isLoopback, type ResolvedConnection } from './sqsClient.js';

/** Where the inbox window of a dry run came from. */
export type InboxWindowSource = InboxWindow['from'] | 'settings';

/** A consumer, ready to be asked what its messages would do. */
export interface DryRunConsumer {
  /** `--handler` as given. */
  readonly handler: string;
  readonly definition: ConsumerDefinition<unknown>;
  readonly consumerName: string;
  /** The inbox table's physical name. */
  readonly inboxTable: string;
  /** The business tables: logical name → physical name. */
  readonly tables: Readonly<Record<string, string>>;
  /** How long an inbox row lives (`settings.idempotency.inboxTtlSeconds`), in seconds. */
  readonly inboxTtlSeconds: number;
  readonly inboxTtlFrom: InboxWindowSource;
  /** The DynamoDB endpoint, when not AWS's. */
  readonly dynamoDbEndpoint: string | undefined;
  /** A document client with the engine's marshalling; the dry run only reads with it. */
  readonly client: DynamoDBDocumentClient;
}

/** Options of {@link loadDryRunConsumer}. */
export interface DryRunConsumerOptions {
  /** `--handler FILE[#EXPORT]`: a handler made by `createIdempotentConsumer`. */
  readonly handler: string;
  /** `--settings FILE[#EXPORT]`: the consumer's settings (its name and inbox window), when the environment lacks them. */
  readonly settings?: string;
  /**
   * The window the redrive checks (`--inbox-ttl`, else `INBOX_TTL_SECONDS`: see `inboxWindowFrom`); when it is the
   * library's default, `--settings`' window is taken instead. @default the library's default
   */
  readonly inboxWindow?: InboxWindow;
  /** The consumer `--outputs-file` names: its name, inbox table and business tables win over the environment. */
  readonly outputs?: ConsumerResources;
  /** The variables the function itself reads (`CONSUMER_NAME`, `INBOX_TABLE_NAME`, `TABLE_NAME_<NAME>`) and `AWS_*`. */
  readonly env: NodeJS.ProcessEnv;
  /** The dead-letter queue's connection: its region, and whether it is a local emulator. */
  readonly connection: ResolvedConnection;
  /** The directory `--handler` and `--settings` are relative to. @default process.cwd() */
  readonly cwd?: string;
}

/**
 * Loads the handler module (see `loadHandler`), and finds the consumer's names as its function
 * finds them: `--outputs-file` (its `ConsumerName`, `InboxTableName` and `<Name>TableName`
 * outputs), else the environment the function reads (`CONSUMER_NAME`, `INBOX_TABLE_NAME`,
 * `TABLE_NAME_<NAME>`: `eval "$(idempotent-consumer outputs --shell --outputs-file F)"` sets
 * them), else `--settings` for the consumer's name. The inbox window is `options.inboxWindow`
 * (`--inbox-ttl`, else `INBOX_TTL_SECONDS`), else the settings', else the library's default (30 days).
 *
 * DynamoDB is reached at `AWS_ENDPOINT_URL_DYNAMODB`, else `AWS_ENDPOINT_URL`, else AWS, in the
 * dead-letter queue's region; a loopback endpoint without credentials in the environment gets
 * dummy ones, as for SQS.
 *
 * @throws UsageError (exit 2) when the module does not load or is not such a handler, or a name
 *   cannot be found (the message says which variable to set), or the dead-letter queue is on a
 *   local emulator and no DynamoDB endpoint is given
 */
export async function loadDryRunConsumer(options: DryRunConsumerOptions): Promise<DryRunConsumer> {
  const { env, outputs } = options;
  const handler = await loadHandler(options.handler, options.cwd);
  let definition: ConsumerDefinition<unknown>;
  try {
    definition = defineConsumer(handler.options as never) as ConsumerDefinition<unknown>;
  } catch (error) {
    throw new UsageError(`--handler ${options.handler}: ${(error as Error).message}`, { cause: error });
  }
  const settings: ConsumerSettings | undefined =
    options.settings === undefined ? undefined : await loadSettings(options.settings, options.cwd);
  const variable = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value;
  };

  const missing: string[] = [];
  const consumerName = outputs?.consumerName ?? variable(environmentVariables.consumerName) ?? settings?.consumerName;
  if (consumerName === undefined) missing.push(environmentVariables.consumerName);
  const inboxTable = outputs?.inboxTable ?? variable(environmentVariables.inboxTable);
  if (inboxTable === undefined) missing.push(environmentVariables.inboxTable);
  const tables: Record<string, string> = {};
  const tableVariables = tableEnvironmentVariables(Object.keys(definition.tables));
  for (const [logical, name] of tableVariables) {
    const physical = outputs?.tables[businessTableOutputName(logical)] ?? variable(name);
    if (physical === undefined) missing.push(name);
    else tables[logical] = physical;
  }
  if (missing.length > 0) {
    throw new UsageError(
      `--handler needs the consumer's resources as its function gets them: ${missing.join(', ')} ` +
        `${missing.length === 1 ? 'is' : 'are'} not set. Set them as the function's environment has them ` +
        '(eval "$(idempotent-consumer outputs --shell --outputs-file cdk-outputs.json)"), or pass --outputs-file' +
        (consumerName === undefined ? ', or --settings for the consumer name' : ''),
    );
  }

  const window = options.inboxWindow ?? DEFAULT_INBOX_WINDOW;
  const [inboxTtlSeconds, inboxTtlFrom]: [number, InboxWindowSource] =
    window.from === 'default' && settings !== undefined
      ? [settings.idempotency.inboxTtlSeconds, 'settings']
      : [window.seconds, window.from];

  const { endpoint, client } = createDynamoDbClient(env, options.connection);
  return {
    handler: options.handler,
    definition,
    consumerName: consumerName!,
    inboxTable: inboxTable!,
    tables,
    inboxTtlSeconds,
    inboxTtlFrom,
    dynamoDbEndpoint: endpoint,
    client,
  };
}

function createDynamoDbClient(
  env: NodeJS.ProcessEnv,
  connection: ResolvedConnection,
): { endpoint: string | undefined; client: DynamoDBDocumentClient } {
  const ignoreEnv = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true';
  const endpoint = ignoreEnv ? undefined : env.AWS_ENDPOINT_URL_DYNAMODB || env.AWS_ENDPOINT_URL || undefined;
  if (endpoint !== undefined) {
    if (!isHttpUrl(endpoint))
      throw new UsageError(`AWS_ENDPOINT_URL_DYNAMODB must be an http(s) URL such as http://127.0.0.1:8000, not "${endpoint}"`);
  } else if (connection.endpoint !== undefined && isLoopback(connection.endpoint)) {
    throw new UsageError(
      'the dead-letter queue is on a local emulator: set AWS_ENDPOINT_URL_DYNAMODB to its DynamoDB endpoint ' +
        '(the --endpoints-file of `local --keep-running` has it), so the dry run reads the local tables, not AWS',
    );
  }
  const dummyCredentials =
    endpoint !== undefined && isLoopback(endpoint) && (env.AWS_ACCESS_KEY_ID ?? '') === '' && (env.AWS_PROFILE ?? '') === '';
  const dynamoDb = new DynamoDBClient({
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(connection.region !== undefined ? { region: connection.region } : {}),
    ...(dummyCredentials ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  const client = DynamoDBDocumentClient.from(dynamoDb, {
    marshallOptions: { ...MARSHALL_OPTIONS },
    unmarshallOptions: { ...UNMARSHALL_OPTIONS },
  });
  return { endpoint, client };
}
