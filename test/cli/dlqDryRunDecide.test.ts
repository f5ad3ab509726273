/**
 * `dlq redrive --dry-run --handler` and `dlq replay --dry-run --handler` against DynamoDB Local
 * and the SQS server: the café's own dead letters (dead-lettered by the café consumer itself, so
 * its inbox holds their markers as it would on AWS) decided as a redrive would decide them now,
 * and nothing written, sent or consumed.
 */
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DecidedDeadLetter, DecisionsResult } from '../../packages/cli/src/dlq/dryRunDecisions.js';
import { cafeResources, executionEnvironment, queueRecord } from '../support/cafeHarness.js';
import { body, lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import type { TestResources } from '../support/testResources.js';
import { seedDeadLetters, visibleCount } from './dlqFixtures.js';
import { runInProcess } from './inProcessCli.js';

const DAY_MS = 86_400_000;

let env: TestResources;
let dir: string;
const id = (name: string): string => `${env.prefix}${name}`;

/** The command line's environment: the function's own variables (CONSUMER_NAME, INBOX_TABLE_NAME, TABLE_NAME_ORDERS, INBOX_TTL_SECONDS) and the emulators. */
const cliEnv = (): NodeJS.ProcessEnv => ({
  ...env.environment,
  AWS_ENDPOINT_URL_DYNAMODB: env.endpoints.dynamoDbEndpoint,
  AWS_ENDPOINT_URL_SQS: env.endpoints.sqsEndpoint,
  AWS_REGION: env.endpoints.region,
});

/** Every item of a table, sorted: what "nothing was written" is checked against. */
async function scan(tableName: string): Promise<string[]> {
  const output = await env.documentClient.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }));
  return (output.Items ?? []).map((item) => JSON.stringify(item)).sort();
}

async function snapshot() {
  return {
    inbox: await scan(env.resources.inboxTable),
    orders: await scan(env.resources.tables.orders!),
    idempotency: await scan(env.resources.idempotencyTable),
    deadLetters: await visibleCount(env.sqs, env.resources.deadLetterQueueUrl),
    source: await visibleCount(env.sqs, env.resources.queueUrl),
  };
}

function byKey(result: DecisionsResult): Map<string, DecidedDeadLetter> {
  return new Map(result.groups.flatMap((group) => group.messages).map((m) => [m.idempotencyKey ?? m.messageId, m]));
}

beforeAll(async () => {
  env = await cafeResources('dlq-dry-run');
  dir = mkdtempSync(join(tmpdir(), 'dlq-dry-run-'));
  const { handler } = executionEnvironment(env);
  const run = (...records: Parameters<typeof sqsEvent>) => handler(sqsEvent(...records), lambdaContext());
  const last = { receiveCount: env.settings.retry.maxAttempts };

  // (a) o-a: its OrderPaid came first and ran out of attempts; once o-a was placed it was redriven and applied,
  // and its dead letter stayed in the DLQ (the redrive sent it, then could not delete it).
  await run(queueRecord(env, id('m-a-paid'), body.paid(id('e-a-paid'), id('o-a')), last));
  await run(queueRecord(env, id('m-a-placed'), body.placed(id('e-a-placed'), id('o-a'))));
  const redriven = queueRecord(env, id('m-a-redriven'), body.paid(id('e-a-paid'), id('o-a')));
  await run({ ...redriven, messageAttributes: { 'ic.redrive': { dataType: 'String', stringValue: id('m-a-paid') } } });
  // (b) o-b: its OrderPaid came first and ran out of attempts (RetriesExhausted); its OrderPlaced is stored since.
  await run(queueRecord(env, id('m-b-paid'), body.paid(id('e-b-paid'), id('o-b'), 25), last));
  await run(queueRecord(env, id('m-b-placed'), body.placed(id('e-b-placed'), id('o-b'))));
  // (c) o-c cancelled, then shipped: BusinessRuleViolation; and a body that fails the café's schema.
  await run(
    queueRecord(env, id('m-c-placed'), body.placed(id('e-c-placed'), id('o-c'))),
    queueRecord(env, id('m-c-cancelled'), body.cancelled(id('e-c-cancelled'), id('o-c'))),
  );
  await run(queueRecord(env, id('m-c-shipped'), body.shipped(id('e-c-shipped'), id('o-c'))));
  await run(queueRecord(env, id('m-c-bad'), { eventId: id('e-c-bad'), type: 'OrderPlaced', occurredAt: 'yesterday' }));
  // (d) an OrderPlaced dead-lettered 40 days ago: its marker is gone (the inbox keeps a key 30 days).
  await seedDeadLetters(env.sqs, env.resources.deadLetterQueueUrl, [
    {
      reason: 'RetriesExhausted',
      errorType: 'TransactionConflict',
      body: JSON.stringify(body.placed(id('e-d-placed'), id('o-d'))),
      source: env.resources.queueArn,
      originalMessageId: id('m-d-placed'),
      failedAt: new Date(Date.now() - 40 * DAY_MS),
    },
  ]);
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await env?.dispose();
});

describe('dlq redrive --dry-run --handler', () => {
  it('decides each dead letter on the state stored now, and writes, sends and consumes nothing', async () => {
    const before = await snapshot();
    expect(before.deadLetters).toBe(5);

    const run = await runInProcess(
      ['dlq', 'redrive', '--dry-run', '--handler', 'examples/cafe/handler.ts', '--queue-url', env.resources.deadLetterQueueUrl, '--json'],
      cliEnv(),
    );

    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as DecisionsResult;
    expect(result.consumer).toMatchObject({
      consumerName: 'cafe-orders',
      inboxTable: env.resources.inboxTable,
      inboxTtlFrom: 'environment',
    });
    expect(result.counts).toEqual({ 'would-apply': 1, duplicate: 1, 'outside-window': 1, 'would-fail': 2 });
    const verdicts = byKey(result);

    const applied = verdicts.get(id('e-a-paid'));
    expect(applied).toMatchObject({ outcome: 'duplicate', reason: 'already applied', deadLetterReason: 'RetriesExhausted' });
    expect(applied?.detail).toMatch(/^duplicate: already applied at \d{4}-\d\d-\d\dT/);

    const paid = verdicts.get(id('e-b-paid'));
    expect(paid).toMatchObject({ outcome: 'would-apply', deadLetterReason: 'RetriesExhausted' });
    expect(paid?.decision).toEqual({
      writes: [
        { kind: 'Put', table: 'orders', tableName: env.resources.tables.orders, key: { orderId: id('o-b'), sk: 'ORDER' } },
        { kind: 'Put', table: 'orders', tableName: env.resources.tables.orders, key: { orderId: id('o-b'), sk: 'LEDGER#purchase' } },
      ],
      outbox: [{ destination: 'default', messageGroupId: id('o-b') }],
      sideEffects: ['notifyCustomer'],
    });
    expect(paid?.detail).toContain('would apply: 2 writes (Put orders');
    expect(paid?.detail).toContain('1 side effect (notifyCustomer, not run)');

    expect(verdicts.get(id('e-c-shipped'))).toMatchObject({
      outcome: 'would-fail',
      reason: 'BusinessRuleViolation',
      failure: { reason: 'BusinessRuleViolation', errorType: 'BusinessRuleViolation', retryable: false },
    });
    const invalid = result.groups.find((g) => g.reason === 'ValidationError');
    expect(invalid?.outcome).toBe('would-fail');
    expect(invalid?.messages[0]?.detail).toMatch(/^would fail: ValidationError \(ValidationError: /);

    const old = verdicts.get(id('e-d-placed'));
    expect(old?.outcome).toBe('outside-window');
    expect(old?.detail).toMatch(
      /^outside the inbox window: it is 40d\d\dh old \(by its failedAt\), longer than the inbox keeps a key \(30d00h\), .*unless --allow-outside-window, with which it would apply again: 1 write/,
    );
    expect(old?.decision?.writes).toEqual([
      { kind: 'Put', table: 'orders', tableName: env.resources.tables.orders, key: { orderId: id('o-d'), sk: 'ORDER' } },
    ]);

    // Grouped by outcome, in this order, then by reason.
    expect(result.groups.map((g) => [g.outcome, g.reason, g.count])).toEqual([
      ['would-apply', 'would apply', 1],
      ['duplicate', 'already applied', 1],
      ['outside-window', 'outside the inbox window', 1],
      ['would-fail', 'BusinessRuleViolation', 1],
      ['would-fail', 'ValidationError', 1],
    ]);

    // Nothing written (no item, no inbox row, no side-effect record), nothing sent, nothing consumed.
    expect(await snapshot()).toEqual(before);
  });

  it('prints the groups with their counts as text', async () => {
    const run = await runInProcess(
      ['dlq', 'redrive', '--dry-run', '--handler', 'examples/cafe/handler.ts', '--queue-url', env.resources.deadLetterQueueUrl],
      cliEnv(),
    );

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('5 message(s) would: 1 apply, 1 be duplicates, 1 apply again outside the inbox window, 2 fail.');
    expect(run.stdout).toContain('\nWould apply (1)\n');
    expect(run.stdout).toContain('\nDuplicate: already applied (1)\n');
    expect(run.stdout).toContain('\nOutside the inbox window: would apply again (1)\n');
    expect(run.stdout).toContain('\nWould fail: BusinessRuleViolation (1)\n');
    expect(run.stdout).toContain('\nWould fail: ValidationError (1)\n');
    expect(await visibleCount(env.sqs, env.resources.deadLetterQueueUrl)).toBe(5);
  });

  it('takes the selection: --reason BusinessRuleViolation decides that message only', async () => {
    const run = await runInProcess(
      [
        'dlq',
        'redrive',
        '--dry-run',
        '--handler',
        'examples/cafe/handler.ts#handler',
        '--queue-url',
        env.resources.deadLetterQueueUrl,
        '--reason',
        'BusinessRuleViolation',
        '--json',
      ],
      cliEnv(),
    );

    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as DecisionsResult;
    expect(result.decided).toBe(1);
    expect(result.groups[0]?.messages[0]?.idempotencyKey).toBe(id('e-c-shipped'));
  });

  it('measures the window the redrive checks: with --inbox-ttl 45d the 40-day-old message is inside it and would apply', async () => {
    const run = await runInProcess(
      [
        'dlq',
        'redrive',
        '--dry-run',
        '--handler',
        'examples/cafe/handler.ts',
        '--queue-url',
        env.resources.deadLetterQueueUrl,
        '--inbox-ttl',
        '45d',
        '--json',
      ],
      cliEnv(),
    );

    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as DecisionsResult;
    expect(result.consumer).toMatchObject({ inboxTtlSeconds: 45 * 86_400, inboxTtlFrom: 'flag' });
    expect(byKey(result).get(id('e-d-placed'))?.outcome).toBe('would-apply');
  });
});

describe('dlq replay --dry-run --handler', () => {
  it('decides the messages of an archive as if replayed and redriven, and sends nothing', async () => {
    const file = join(dir, 'dead-letters.jsonl');
    const archived = await runInProcess(['dlq', 'archive', '--out', file, '--queue-url', env.resources.deadLetterQueueUrl], cliEnv());
    expect(archived.code).toBe(0);
    const before = await snapshot();

    const run = await runInProcess(
      [
        'dlq',
        'replay',
        '--in',
        file,
        '--dry-run',
        '--handler',
        'examples/cafe/handler.ts',
        '--queue-url',
        env.resources.deadLetterQueueUrl,
        '--json',
      ],
      cliEnv(),
    );

    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as DecisionsResult;
    expect(result.command).toBe('replay');
    expect(result.counts).toEqual({ 'would-apply': 1, duplicate: 1, 'outside-window': 1, 'would-fail': 2 });
    expect(byKey(result).get(id('e-b-paid'))?.line).toBeGreaterThanOrEqual(1);
    expect(await snapshot()).toEqual(before);
  });
});

describe('dlq redrive --handler: bad flags', () => {
  it('exits 2 with a clear message when the handler module does not exist', async () => {
    const run = await runInProcess(
      ['dlq', 'redrive', '--dry-run', '--handler', 'examples/cafe/no-such-handler.ts', '--queue-url', env.resources.deadLetterQueueUrl],
      cliEnv(),
    );

    expect(run.code).toBe(2);
    expect(run.stderr).toBe('error: --handler examples/cafe/no-such-handler.ts: no such file\n');
    expect(await visibleCount(env.sqs, env.resources.deadLetterQueueUrl)).toBe(5);
  });

  it('exits 2 when the module is not a handler, when --handler comes without --dry-run, and when a table name is missing', async () => {
    const dlq = ['--queue-url', env.resources.deadLetterQueueUrl];
    const notHandler = await runInProcess(['dlq', 'redrive', '--dry-run', '--handler', 'examples/cafe/settings.ts', ...dlq], cliEnv());
    expect(notHandler.code).toBe(2);
    expect(notHandler.stderr).toMatch(
      /--handler examples\/cafe\/settings.ts has no export "handler"; it exports "cafeTables", "cafeSettings"/,
    );

    const notDry = await runInProcess(['dlq', 'redrive', '--yes', '--handler', 'examples/cafe/handler.ts', ...dlq], cliEnv());
    expect(notDry.code).toBe(2);
    expect(notDry.stderr).toContain('--handler goes with --dry-run');

    const { TABLE_NAME_ORDERS: _, ...withoutTable } = cliEnv();
    const noTable = await runInProcess(['dlq', 'redrive', '--dry-run', '--handler', 'examples/cafe/handler.ts', ...dlq], withoutTable);
    expect(noTable.code).toBe(2);
    expect(noTable.stderr).toContain('TABLE_NAME_ORDERS is not set');

    expect(await visibleCount(env.sqs, env.resources.deadLetterQueueUrl)).toBe(5);
    expect(await visibleCount(env.sqs, env.resources.queueUrl)).toBe(0);
  });
});
