/**
 * Provenance end to end on DynamoDB Local: a consumer built with `idempotency.provenance` on (through
 * its environment, `PROVENANCE=true`) applies messages, and `explain` names those that wrote an item.
 */
import type { IdempotentConsumerOptions, TableDefinition } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { consumerEnvironment, inboxRowOf, sourceRecord } from '../support/consumerHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';
import { runInProcess } from './inProcessCli.js';

const describe = describeUnlessDeployedStack('a consumer with a counters table of its own and provenance on');

const CounterEvent = z.object({ eventId: z.string(), counterId: z.string(), by: z.number().int() });
type CounterEvent = z.infer<typeof CounterEvent>;
const tables: Record<string, TableDefinition> = { counters: { partitionKey: 'counterId' } };
const counterConsumer: IdempotentConsumerOptions<CounterEvent> = {
  schema: CounterEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'counterId',
  tables,
  read: (event) => [{ table: 'counters', key: { counterId: event.counterId } }],
  decide: (event, state) => {
    const counter = state.get<{ value: number }>('counters', { counterId: event.counterId });
    return { writes: [{ Put: { TableName: 'counters', Item: { counterId: event.counterId, value: (counter?.value ?? 0) + event.by } } }] };
  },
};

describe('explain: the messages behind an item (provenance on)', () => {
  let env: TestResources;
  const id = (name: string): string => `${env.prefix}${name}`;
  const cliEnv = (): NodeJS.ProcessEnv => ({
    ...env.environment,
    AWS_ENDPOINT_URL_DYNAMODB: env.endpoints.dynamoDbEndpoint,
    AWS_REGION: env.endpoints.region,
  });

  beforeAll(async () => {
    env = await testResources('explain', tables, { consumerName: 'counters', idempotency: { provenance: true } });
  });
  afterAll(() => env.dispose());

  it('names the two messages that wrote an item, newest first, and not the one that wrote another', async () => {
    expect(env.environment.PROVENANCE).toBe('true');
    const { handler } = consumerEnvironment(env, counterConsumer);
    const deliver = (messageId: string, body: CounterEvent) =>
      handler(sqsEvent(sourceRecord(env, id(messageId), body, { groupId: body.counterId })), lambdaContext());
    expect(await deliver('m-1', { eventId: id('e-1'), counterId: id('A'), by: 1 })).toEqual({ batchItemFailures: [] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await deliver('m-2', { eventId: id('e-2'), counterId: id('B'), by: 1 })).toEqual({ batchItemFailures: [] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await deliver('m-3', { eventId: id('e-3'), counterId: id('A'), by: 2 })).toEqual({ batchItemFailures: [] });
    expect((await inboxRowOf(env, id('e-1')))?.wrote).toEqual([`counters:{"counterId":${JSON.stringify(id('A'))}}`]);

    const run = await runInProcess(['explain', '--table', 'counters', '--key', JSON.stringify({ counterId: id('A') }), '--json'], cliEnv());
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { messages: { idempotencyKey: string; messageId: string; appliedAt: string }[] };
    expect(result.messages.map((m) => [m.idempotencyKey, m.messageId])).toEqual([
      [id('e-3'), id('m-3')],
      [id('e-1'), id('m-1')],
    ]);

    const text = await runInProcess(['explain', '--table', 'counters', '--key', JSON.stringify({ counterId: id('B') })], cliEnv());
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`written by 1 message`);
    expect(text.stdout).toContain(id('m-2'));
  });

  it('exits 2 for a --key that is not JSON or not the key attributes, and for a missing --table', async () => {
    const notJson = await runInProcess(['explain', '--table', 'counters', '--key', '{counterId'], cliEnv());
    expect([notJson.code, notJson.stderr]).toEqual([2, expect.stringMatching(/--key must be a JSON object/)]);
    const wrongAttributes = await runInProcess(['explain', '--table', 'counters', '--key', '{"id":"A"}'], cliEnv());
    expect([wrongAttributes.code, wrongAttributes.stderr]).toEqual([2, expect.stringMatching(/key attributes counterId, not id/)]);
    const missing = await runInProcess(['explain', '--key', '{"counterId":"A"}'], cliEnv());
    expect(missing.code).toBe(2);
    const unknownTable = await runInProcess(['explain', '--table', 'carts', '--key', '{"cartId":"A"}'], cliEnv());
    expect([unknownTable.code, unknownTable.stderr]).toEqual([2, expect.stringMatching(/TABLE_NAME_CARTS is not set/)]);
  });
});

describe('explain: provenance off', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('explain-off', tables, { consumerName: 'counters' });
  });
  afterAll(() => env.dispose());

  it('leaves the inbox row without provenance attributes and says provenance is off', async () => {
    expect(env.environment).not.toHaveProperty('PROVENANCE');
    const { handler } = consumerEnvironment(env, counterConsumer);
    const eventId = `${env.prefix}e-1`;
    await handler(sqsEvent(sourceRecord(env, `${env.prefix}m-1`, { eventId, counterId: 'A', by: 1 }, { groupId: 'A' })), lambdaContext());
    const row = await inboxRowOf(env, eventId);
    expect(row?.status).toBe('applied');
    expect(row).not.toHaveProperty('wrote');
    expect(row).not.toHaveProperty('wroteTruncated');

    const run = await runInProcess(['explain', '--table', 'counters', '--key', '{"counterId":"A"}'], {
      ...env.environment,
      AWS_ENDPOINT_URL_DYNAMODB: env.endpoints.dynamoDbEndpoint,
      AWS_REGION: env.endpoints.region,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/provenance is off/);
  });
});
