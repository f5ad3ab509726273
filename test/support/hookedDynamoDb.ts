/**
 * DynamoDB clients of the test run's emulator for tests that fail, delay or crash requests on
 * purpose: a client of its own per test, so the hook touches nothing else of the run.
 *
 * @module
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { installStrictDynamoDb } from '../../packages/local/src/aws/strictDynamoDb.js';
import { localCredentials } from '../../packages/local/src/localClientConfig.js';
import type { TestResources } from './testResources.js';

/**
 * A DynamoDB client of the run's emulator (its endpoint and region, fake static credentials),
 * with no middleware and without the strict layer: the test adds what it needs.
 *
 * @param config - more of the client's configuration, e.g. `{ maxAttempts: 1 }`
 */
export function emulatorDynamoDb(env: TestResources, config: Partial<DynamoDBClientConfig> = {}): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: env.endpoints.dynamoDbEndpoint,
    region: env.endpoints.region,
    credentials: { ...localCredentials },
    ...config,
  });
}

/**
 * An emulator client whose requests pass through `hook` first, at the `initialize` step: what the
 * hook throws reaches the caller as the request's error, and no SDK retry sees it. `DescribeTable`
 * is not hooked: it is the strict layer's own request (it learns key schemas), not the consumer's.
 * The strict layer is installed (`docs/aws-rules.md`), as on the run's own client.
 *
 * @param hook - called with the command's name (`'TransactWriteItemsCommand'`, …) and its input,
 *   as the caller gave it (marshalled by the document client or not yet, depending on the caller)
 */
export function hookedDynamoDb(
  env: TestResources,
  hook: (command: string, input: Record<string, unknown>) => Promise<void> | void,
): DynamoDBClient {
  const client = emulatorDynamoDb(env);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'DescribeTableCommand') await hook(context.commandName ?? '', args.input as Record<string, unknown>);
      return next(args);
    },
    { step: 'initialize', name: 'testHook' },
  );
  installStrictDynamoDb(client);
  return client;
}
