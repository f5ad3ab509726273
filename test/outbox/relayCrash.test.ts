/**
 * A crash at every point of the relay, against DynamoDB Local and the SQS/SNS server: the first
 * invocation stops for good at the point (it is abandoned, as a timed-out or killed invocation
 * is); Lambda retries the batch after that invocation's deadline in a new execution environment.
 * Each message is published at least once and, through the FIFO destination's deduplication by
 * message id, delivered once; every item ends marked published. On a standard queue the one
 * window Powertools cannot close (after the send, before its completion record) shows as a second
 * delivery with the same `outboxMessageId`.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createOutboxRelay } from '../../packages/idempotent-consumer/src/outbox/createOutboxRelay.js';
import { receiveOutboxDeliveries } from '../../packages/local/src/outbox/receiveOutboxDeliveries.js';
import {
  clients,
  CONSUMER,
  commitOutboxItems,
  crash,
  eventually,
  hook,
  insertEvent,
  invocationContext,
  type OutboxResources,
  outboxItem,
  outboxResources,
} from './outboxHarness.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('an inbox table with a stream and destination queues of its own');

/** Where the first invocation stops. */
const CrashPoint = {
  BeforePublish: 'after the Powertools lock, before the publish',
  BeforeCompletion: 'after the publish, before the Powertools completion record',
  BeforeMark: 'after the completion record, before the mark',
  BeforeResponse: 'after the last mark, before the response',
} as const;
type CrashPoint = (typeof CrashPoint)[keyof typeof CrashPoint];

const destinations = [
  { name: 'a FIFO SQS queue', target: (env: OutboxResources) => env.fifoQueueUrl, receiveFrom: (env: OutboxResources) => env.fifoQueueUrl },
  {
    name: 'a FIFO SNS topic',
    target: (env: OutboxResources) => env.fifoTopicArn,
    receiveFrom: (env: OutboxResources) => env.fifoTopicSubscriberUrl,
  },
] as const;

let env: OutboxResources;
beforeAll(async () => {
  env = await outboxResources('crash');
});
afterAll(() => env.dispose());

let run = 0;

/**
 * Commits three outbox items, runs a first invocation that crashes at `point` (on the second
 * message; after the third's mark for `BeforeResponse`), waits past its deadline, runs the retry
 * in a new environment, and returns what happened.
 */
async function crashAndRetry(point: CrashPoint, target: string, receiveFrom: string) {
  run += 1;
  const ids = await commitOutboxItems(
    env,
    [1, 2, 3].map((n) => ({
      idempotencyKey: `crash-${run}-${n}`,
      orderingKey: `group-${run}`,
      outbox: [{ body: `message ${n} of run ${run}` }],
    })),
  );
  const event = await insertEvent(env, ids);
  const sends = new Map<string, number>();
  const countSends = (phase: 'before' | 'after', command: string, input: Record<string, unknown>) => {
    if (phase !== 'after' || (command !== 'SendMessageCommand' && command !== 'PublishCommand')) return;
    const id =
      (input['MessageAttributes'] as Record<string, { StringValue?: string }> | undefined)?.['outboxMessageId']?.StringValue ?? '?';
    sends.set(id, (sends.get(id) ?? 0) + 1);
  };
  const [victim, last] = [ids[1]!, ids[2]!];
  let crashed = false;
  const stop = (): Promise<never> => {
    crashed = true;
    return crash();
  };

  // The first execution environment: its clients stop at the crash point.
  const first = clients();
  let completions = 0;
  hook(first.dynamoDb, async (phase, command, input) => {
    const text = JSON.stringify(input);
    if (command !== 'UpdateItemCommand') return;
    if (text.includes(env.idempotencyTable) && phase === 'before') {
      completions += 1; // Powertools records a completion with UpdateItem, one message after the other
      if (point === CrashPoint.BeforeCompletion && completions === 2) await stop();
    }
    if (text.includes(env.inboxTable)) {
      if (point === CrashPoint.BeforeMark && phase === 'before' && text.includes(victim)) await stop();
      if (point === CrashPoint.BeforeResponse && phase === 'after' && text.includes(last)) await stop();
    }
  });
  for (const client of [first.sqs, first.sns]) {
    hook(client, async (phase, command, input) => {
      if (point === CrashPoint.BeforePublish && phase === 'before' && JSON.stringify(input).includes(victim)) await stop();
      countSends(phase, command, input);
    });
  }
  const quiet = () => {
    const metrics = new Metrics({ namespace: 'OutboxTest', serviceName: CONSUMER });
    vi.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => metrics);
    return { logger: new Logger({ serviceName: CONSUMER, logLevel: 'SILENT' }), metrics };
  };
  const environment = env.environment({ default: target });
  const crashing = createOutboxRelay({}, { environment, clients: first, ...quiet() });
  const { context, deadline } = invocationContext(2_000);
  void crashing(event, context);
  await eventually(() => crashed);
  await eventually(() => Date.now() > deadline + 20); // past the first invocation's deadline: its lock has expired

  // Lambda retries the batch in a new execution environment.
  const second = clients();
  for (const client of [second.sqs, second.sns]) hook(client, (phase, command, input) => countSends(phase, command, input));
  const retry = createOutboxRelay({}, { environment, clients: second, ...quiet() });
  const response = await retry(event, invocationContext().context);

  const deliveries = await receiveOutboxDeliveries(env.sqs, receiveFrom);
  const marks = await Promise.all(ids.map(async (id) => (await outboxItem(env, id))?.['publishedAt']));
  for (const client of [...Object.values(second)]) client.destroy();
  return { ids, victim, response, sends, deliveries, marks };
}

describe.each(destinations)('a crash of the relay, publishing to $name', ({ target, receiveFrom }) => {
  it.each([
    [CrashPoint.BeforePublish, 1],
    [CrashPoint.BeforeCompletion, 2],
    [CrashPoint.BeforeMark, 1],
    [CrashPoint.BeforeResponse, 1],
  ] as const)(
    '%s: each message published at least once, delivered once, marked (the crashed message sent %i time(s))',
    async (point, victimSends) => {
      const { ids, victim, response, sends, deliveries, marks } = await crashAndRetry(point, target(env), receiveFrom(env));

      expect(response).toEqual({ batchItemFailures: [] });
      for (const id of ids) expect(sends.get(id) ?? 0).toBeGreaterThanOrEqual(1);
      expect(sends.get(victim)).toBe(victimSends);
      expect(deliveries.withoutMessageId).toBe(0);
      expect(Object.fromEntries(deliveries.byMessageId)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
      expect(marks).toEqual([expect.any(String), expect.any(String), expect.any(String)]);
    },
  );
});

describe('a crash of the relay, publishing to a standard SQS queue (no deduplication)', () => {
  it('after the publish and before the completion record: the message arrives twice, with the same outboxMessageId', async () => {
    const { ids, victim, response, sends, deliveries, marks } = await crashAndRetry(
      CrashPoint.BeforeCompletion,
      env.standardQueueUrl,
      env.standardQueueUrl,
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(sends.get(victim)).toBe(2);
    expect(Object.fromEntries(deliveries.byMessageId)).toEqual({ [ids[0]!]: 1, [victim]: 2, [ids[2]!]: 1 });
    expect(marks.every((mark) => typeof mark === 'string')).toBe(true);
  });

  it('anywhere else: each message arrives once (Powertools remembers the completed publish)', async () => {
    for (const point of [CrashPoint.BeforePublish, CrashPoint.BeforeMark, CrashPoint.BeforeResponse]) {
      const { ids, deliveries } = await crashAndRetry(point, env.standardQueueUrl, env.standardQueueUrl);
      expect(Object.fromEntries(deliveries.byMessageId), point).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    }
  });
});
