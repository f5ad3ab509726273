import {
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadLetterAttribute, producerAttributesOf } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { MoveTaskFailedError, UsageError } from '../../packages/cli/src/dlq/errors.js';
import { formatRedrive } from '../../packages/cli/src/dlq/output.js';
import { NO_REASON } from '../../packages/idempotent-consumer/src/dlq/deadLetterRecord.js';
import { listDeadLetters } from '../../packages/cli/src/dlq/list.js';
import { redriveDeadLetters } from '../../packages/cli/src/dlq/redrive.js';
import {
  comparable,
  createQueue,
  createQueuePair,
  eventBody,
  moveByRedrivePolicy,
  readAll,
  seedDeadLetters,
  startSqs,
  visibleCount,
  type FauxqsServer,
} from './dlqFixtures.js';

let server: FauxqsServer;
let sqs: SQSClient;
const fast = { waitTimeSeconds: 0, visibilityTimeoutSeconds: 30 };

beforeAll(async () => {
  ({ server, sqs } = await startSqs());
});

afterAll(async () => {
  sqs.destroy();
  await server.stop();
});

/** A source queue and its DLQ holding 2 ValidationError, 1 BusinessRuleViolation, 1 RetriesExhausted. */
async function standardScenario() {
  const { source, dlq } = await createQueuePair(sqs, 'orders');
  await seedDeadLetters(sqs, dlq.url, [
    {
      reason: 'ValidationError',
      body: '{"eventId":"v-1","type":"OrderPlaced", "bad": true}',
      source: source.arn,
      originalMessageId: 'v-1',
      originalAttributes: {
        traceId: { DataType: 'String', StringValue: 'trace-v1' },
        blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([9, 8, 7]) },
        count: { DataType: 'Number', StringValue: '3' },
      },
    },
    { reason: 'ValidationError', body: 'not json at all ✓', source: source.arn, originalMessageId: 'v-2' },
    { reason: 'BusinessRuleViolation', body: eventBody('b-1'), source: source.arn, originalMessageId: 'b-1' },
    { reason: 'RetriesExhausted', body: eventBody('r-1'), source: source.arn, originalMessageId: 'r-1' },
  ]);
  return { source, dlq };
}

describe('redriveDeadLetters --dry-run', () => {
  it('changes nothing and reports what would move', async () => {
    const { source, dlq } = await standardScenario();

    const result = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['ValidationError'] }, dryRun: true, ...fast },
    );

    expect(result.dryRun).toBe(true);
    expect(result.selected.map((s) => s.reason)).toEqual(['ValidationError', 'ValidationError']);
    expect(result.selected.every((s) => s.target === source.url)).toBe(true);
    expect(result.moved).toEqual([]);
    expect(await visibleCount(sqs, dlq.url)).toBe(4);
    expect(await visibleCount(sqs, source.url)).toBe(0);
    expect(formatRedrive(result)).toContain('Dry run: would redrive 2 message(s)');
  });
});

describe('redriveDeadLetters with a selection (receive → send → delete)', () => {
  it('moves only the selected messages, body byte-identical, original attributes restored', async () => {
    const { source, dlq } = await standardScenario();

    const result = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['ValidationError'] }, yes: true, ...fast },
    );

    expect(result.method).toBe('receive-send-delete');
    expect(result.moved).toHaveLength(2);
    const moved = await readAll(sqs, source.url);
    expect(moved.map((m) => m.Body).sort()).toEqual(['not json at all ✓', '{"eventId":"v-1","type":"OrderPlaced", "bad": true}'].sort());
    const withAttributes = moved.find((m) => m.Body?.startsWith('{'));
    // The producer's attributes exactly, and the redrive mark that lets the consumer apply a key its inbox holds as dead-lettered (C27).
    expect(comparable(withAttributes?.MessageAttributes)).toEqual({
      traceId: { DataType: 'String', StringValue: 'trace-v1' },
      blob: { DataType: 'Binary', BinaryValue: Buffer.from([9, 8, 7]).toString('base64') },
      count: { DataType: 'Number', StringValue: '3' },
      'ic.redrive': { DataType: 'String', StringValue: 'v-1' },
    });
    const plain = moved.find((m) => m.Body === 'not json at all ✓');
    expect(comparable(plain?.MessageAttributes ?? {})).toEqual({ 'ic.redrive': { DataType: 'String', StringValue: 'v-2' } });
    const left = await readAll(sqs, dlq.url);
    expect(left.map((m) => m.MessageAttributes?.[DeadLetterAttribute.failureReason]?.StringValue).sort()).toEqual([
      'BusinessRuleViolation',
      'RetriesExhausted',
    ]);
  });

  it("selects by --id and --older-than (ages from the failure time, on the server's clock)", async () => {
    const { source, dlq } = await createQueuePair(sqs, 'ages');
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000);
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('o-1'), source: source.arn, originalMessageId: 'o-1', failedAt: hoursAgo(3) },
      { reason: 'ValidationError', body: eventBody('o-2'), source: source.arn, originalMessageId: 'o-2', failedAt: hoursAgo(1) },
      { reason: 'BusinessRuleViolation', body: eventBody('o-3'), source: source.arn, originalMessageId: 'o-3', failedAt: hoursAgo(3) },
    ]);

    const none = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { olderThanMs: 4 * 3_600_000 }, yes: true, ...fast });
    const byId = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { ids: ['o-1', 'o-2'], olderThanMs: 2 * 3_600_000 }, yes: true, ...fast },
    );

    expect(none.moved).toHaveLength(0);
    expect(none.nothingMoved).toBe('nothing moved: no message matched the selection among the 3 seen');
    expect(byId.moved.map((m) => m.reason)).toEqual(['ValidationError']);
    expect((await readAll(sqs, source.url)).map((m) => m.Body)).toEqual([eventBody('o-1')]);
    expect(await visibleCount(sqs, dlq.url)).toBe(2);
  });

  it('moves nothing for a --reason that matches nothing, and says why: the reasons present', async () => {
    const { source, dlq } = await standardScenario();

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { reasons: ['Foo'] }, yes: true, ...fast });

    expect(result.moved).toEqual([]);
    expect(result.nothingMoved).toMatch(
      /^nothing moved: no message matched the selection among the 4 seen \(--reason Foo matches no message seen; reasons present: ValidationError \(2\), BusinessRuleViolation \(1\), RetriesExhausted \(1\)\)$/,
    );
    expect(formatRedrive(result)).toContain('Nothing moved: no message matched');
    expect(await visibleCount(sqs, dlq.url)).toBe(4);
    expect(await visibleCount(sqs, source.url)).toBe(0);
  });

  it("redrives a user's own reason like a built-in one", async () => {
    const { source, dlq } = await createQueuePair(sqs, 'own-reason');
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'inventory.OutOfStock', body: eventBody('u-1'), source: source.arn, originalMessageId: 'u-1' },
      { reason: 'ValidationError', body: eventBody('u-2'), source: source.arn, originalMessageId: 'u-2' },
    ]);

    const result = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['inventory.OutOfStock'] }, yes: true, ...fast },
    );

    expect(result.moved.map((m) => m.reason)).toEqual(['inventory.OutOfStock']);
    expect((await readAll(sqs, source.url)).map((m) => m.Body)).toEqual([eventBody('u-1')]);
  });

  it('restores producer attributes that were packed in ic.originalAttributes (7 of them, binary included), bit for bit', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'packed');
    const producer = {
      ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: `value ${i} ✓` }])),
      blob: { DataType: 'Binary.gz', BinaryValue: Uint8Array.from([0, 255, 10, 13, 128]) },
    };
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('p-1'), source: source.arn, originalMessageId: 'p-1', originalAttributes: producer },
    ]);
    const [inDlq] = await readAll(sqs, dlq.url);

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, yes: true, ...fast });

    expect(Object.keys(inDlq?.MessageAttributes ?? {}).every((name) => name.startsWith('ic.'))).toBe(true);
    expect(result.moved).toHaveLength(1);
    const [back] = await readAll(sqs, source.url);
    expect(back?.Body).toBe(eventBody('p-1'));
    expect(comparable(back?.MessageAttributes)).toEqual({
      ...comparable(producer),
      'ic.redrive': { DataType: 'String', StringValue: 'p-1' },
    });
  });

  it("packs the producer's attributes when they leave no room for the redrive mark, and the consumer unpacks them", async () => {
    const { source, dlq } = await createQueuePair(sqs, 'ten');
    const producer = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: `value ${i}` }]));
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('t-1'), source: source.arn, originalMessageId: 't-1', originalAttributes: producer },
    ]);

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, yes: true, ...fast });

    expect(result.moved).toHaveLength(1);
    const [back] = await readAll(sqs, source.url);
    expect(Object.keys(back?.MessageAttributes ?? {}).sort()).toEqual(['ic.originalAttributes', 'ic.redrive']);
    expect(back?.MessageAttributes?.['ic.redrive']?.StringValue).toBe('t-1');
    expect(comparable(producerAttributesOf(back?.MessageAttributes ?? {}))).toEqual(comparable(producer));
  });

  it('keeps the FIFO message group, in order, with a deduplication id', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'orders', true);
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('f-1'), source: source.arn, originalMessageId: 'f-1', messageGroupId: 'order-A' },
      { reason: 'ValidationError', body: eventBody('f-2'), source: source.arn, originalMessageId: 'f-2', messageGroupId: 'order-A' },
      { reason: 'BusinessRuleViolation', body: eventBody('f-3'), source: source.arn, originalMessageId: 'f-3', messageGroupId: 'order-B' },
    ]);

    const result = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['ValidationError'] }, yes: true, ...fast },
    );

    expect(result.moved.map((m) => m.reason)).toEqual(['ValidationError', 'ValidationError']);
    const moved = await readAll(sqs, source.url, { consume: true });
    expect(moved.map((m) => m.Body)).toEqual([eventBody('f-1'), eventBody('f-2')]);
    expect(moved.map((m) => m.Attributes?.MessageGroupId)).toEqual(['order-A', 'order-A']);
    expect(moved.every((m) => /^[0-9a-f]{64}$/.test(m.Attributes?.MessageDeduplicationId ?? ''))).toBe(true);
    const left = await readAll(sqs, dlq.url, { consume: true });
    expect(left.map((m) => m.Body)).toEqual([eventBody('f-3')]);
  });

  /** A FIFO DLQ holding a1 a2 a3 a4 (group a) and b1 b2 (group b), interleaved; a2 of another reason. */
  async function fifoGroups() {
    const { source, dlq } = await createQueuePair(sqs, 'groups', true);
    await seedDeadLetters(
      sqs,
      dlq.url,
      ['a1', 'b1', 'a2', 'a3', 'b2', 'a4'].map((id) => ({
        reason: id === 'a2' ? 'BusinessRuleViolation' : 'RetriesExhausted',
        body: eventBody(id),
        source: source.arn,
        originalMessageId: id,
        messageGroupId: `group-${id[0]}`,
      })),
    );
    return { source, dlq };
  }
  /** The event ids of each group, in the order received (SQS orders a FIFO queue within a group only). */
  const groupsOf = (messages: readonly { Body?: string }[]) => {
    const ids = messages.map((m) => (JSON.parse(m.Body ?? '{}') as { eventId: string }).eventId);
    return { a: ids.filter((id) => id.startsWith('a')), b: ids.filter((id) => id.startsWith('b')) };
  };

  it('FIFO: a group stops at its first message the selection leaves out; its later ones stay behind it, selected or not', async () => {
    const { source, dlq } = await fifoGroups();

    const result = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['RetriesExhausted'] }, yes: true, ...fast },
    );

    // Moved, a3 and a4 would reach the consumer ahead of a2, and a later redrive would send a2 behind them.
    expect(groupsOf(await readAll(sqs, source.url, { consume: true }))).toEqual({ a: ['a1'], b: ['b1', 'b2'] });
    expect(groupsOf(await readAll(sqs, dlq.url, { consume: true }))).toEqual({ a: ['a2', 'a3', 'a4'], b: [] });
    expect(result.skipped).toHaveLength(2);
    for (const item of result.skipped)
      expect(item.detail).toMatch(/^an earlier message of group group-a \(.+\) is not selected and stays$/);
  });

  it('FIFO: --id of a later message of a group moves nothing, in the dry run and the real one, and says why', async () => {
    const { source, dlq } = await fifoGroups();

    const dry = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { ids: ['a3'] }, dryRun: true, ...fast });
    expect(dry.selected.map((item) => [item.target, item.detail])).toEqual([
      [undefined, expect.stringMatching(/group group-a .* is not selected/)],
    ]);
    const real = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { ids: ['a3'] }, yes: true, ...fast });

    expect(real.moved).toEqual([]);
    expect(real.skipped.map((item) => item.detail)).toEqual([expect.stringMatching(/group group-a .* is not selected/)]);
    expect(await visibleCount(sqs, source.url)).toBe(0);
    expect(groupsOf(await readAll(sqs, dlq.url, { consume: true }))).toEqual({ a: ['a1', 'a2', 'a3', 'a4'], b: ['b1', 'b2'] });
  });

  it('FIFO: the head of a group, selected alone, moves; the rest of the group stays in order', async () => {
    const { source, dlq } = await fifoGroups();

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { ids: ['a1'] }, yes: true, ...fast });

    expect(result.moved).toHaveLength(1);
    expect(groupsOf(await readAll(sqs, source.url, { consume: true }))).toEqual({ a: ['a1'], b: [] });
    expect(groupsOf(await readAll(sqs, dlq.url, { consume: true }))).toEqual({ a: ['a2', 'a3', 'a4'], b: ['b1', 'b2'] });
  });

  it('loses nothing when a send fails mid-way: stops there, the rest stay in the DLQ and visible', async () => {
    const { source, dlq } = await standardScenario();
    let sends = 0;
    const flaky = {
      config: sqs.config,
      send: (command: object) => {
        if (command instanceof SendMessageCommand && ++sends === 2) {
          return Promise.reject(Object.assign(new Error('simulated outage'), { name: 'ServiceUnavailable' }));
        }
        return sqs.send(command as never);
      },
    } as unknown as SQSClient;

    const result = await redriveDeadLetters({ sqs: flaky }, { queueUrl: dlq.url, yes: true, useMoveTask: false, ...fast });

    expect(result.moved).toHaveLength(1);
    expect(result.failed).toHaveLength(1);
    expect(result.failed[0]?.detail).toContain('simulated outage');
    const inSource = await readAll(sqs, source.url);
    const inDlq = await readAll(sqs, dlq.url);
    expect(inSource).toHaveLength(1);
    expect(inDlq).toHaveLength(3);
    const bodies = [...inSource, ...inDlq].map((m) => m.Body).sort();
    expect(bodies).toEqual(
      ['{"eventId":"v-1","type":"OrderPlaced", "bad": true}', 'not json at all ✓', eventBody('b-1'), eventBody('r-1')].sort(),
    );
    expect(formatRedrive(result)).toContain('the redrive stopped here');
  });

  it('leaves a message whose source is not an SQS queue (Kafka) in the DLQ, unless --to', async () => {
    const dlq = await createQueue(sqs, 'kafka-dlq');
    const elsewhere = await createQueue(sqs, 'elsewhere');
    await seedDeadLetters(sqs, dlq.url, [
      {
        reason: 'ValidationError',
        body: eventBody('k-1'),
        source: 'arn:aws:kafka:us-east-1:123456789012:cluster/c/abc',
        originalMessageId: 'orders-0@12',
      },
    ]);

    const skipped = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['ValidationError'] }, yes: true, ...fast },
    );
    const sent = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['ValidationError'] }, to: elsewhere.url, yes: true, ...fast },
    );

    expect(skipped.skipped[0]?.detail).toMatch(/not an SQS queue/);
    expect(sent.moved).toHaveLength(1);
    expect((await readAll(sqs, elsewhere.url)).map((m) => m.Body)).toEqual([eventBody('k-1')]);
  });

  it('C22: redrive --reason none puts a message moved by the redrive policy back with source=web-checkout and attempts=3 intact', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'policy');
    const producer = { source: { DataType: 'String', StringValue: 'web-checkout' }, attempts: { DataType: 'Number', StringValue: '3' } };
    await moveByRedrivePolicy(sqs, source.url, eventBody('p-1'), producer);
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('p-2'), source: source.arn, originalMessageId: 'p-2' },
    ]);
    expect(await visibleCount(sqs, dlq.url)).toBe(2);

    const listed = await listDeadLetters({ sqs }, { queueUrl: dlq.url, ...fast });
    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { reasons: [NO_REASON] }, yes: true, ...fast });

    expect(NO_REASON).toBe('none');
    expect(listed.groups.map((g) => [g.reason, g.count]).sort()).toEqual([
      ['ValidationError', 1],
      ['none', 1],
    ]);
    expect(result.moved.map((m) => [m.reason, m.target])).toEqual([['none', source.url]]);
    const back = await readAll(sqs, source.url);
    expect(back.map((m) => m.Body)).toEqual([eventBody('p-1')]);
    expect(comparable(back[0]?.MessageAttributes)).toEqual(comparable(producer));
    const left = await readAll(sqs, dlq.url);
    expect(left.map((m) => m.MessageAttributes?.[DeadLetterAttribute.failureReason]?.StringValue)).toEqual(['ValidationError']);
  });

  it('refuses --to pointing at the dead-letter queue itself', async () => {
    const { dlq } = await standardScenario();

    await expect(redriveDeadLetters({ sqs }, { queueUrl: dlq.url, to: dlq.url, yes: true })).rejects.toThrow(UsageError);
  });

  it('changes nothing when the confirmation is declined', async () => {
    const { source, dlq } = await standardScenario();

    const result = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, selection: { reasons: ['ValidationError'] }, confirm: async () => false, ...fast },
    );

    expect(result.cancelled).toBe(true);
    expect(await visibleCount(sqs, dlq.url)).toBe(4);
    expect(await visibleCount(sqs, source.url)).toBe(0);
  });
});

describe('a dead-letter queue with a redrive policy of its own (source → DLQ → another queue)', () => {
  it('every listing warns that it counts as a receive, and names the messages the next receive moves on', async () => {
    const next = await createQueue(sqs, 'chain-next');
    const dlq = await createQueue(sqs, 'chain-dlq', {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: next.arn, maxReceiveCount: 2 }),
    });
    const source = await createQueue(sqs, 'chain-source', {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
    });
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('c-1'), source: source.arn, originalMessageId: 'c-1' },
    ]);

    const first = await listDeadLetters({ sqs }, { queueUrl: dlq.url, ...fast });
    const second = await listDeadLetters({ sqs }, { queueUrl: dlq.url, ...fast });
    const dry = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, dryRun: true, ...fast });

    const own = (warnings: readonly string[]) => warnings.filter((w) => w.includes('redrive policy of its own'));
    expect(own(first.warnings)).toEqual([expect.stringContaining(`maxReceiveCount 2, to ${next.arn}`)]);
    expect(own(first.warnings)[0]).not.toContain('the next receive moves them');
    expect(own(second.warnings)).toEqual([
      expect.stringContaining('1 message(s) seen have been received 2 times: the next receive moves them there'),
    ]);
    // The dry run's receive was the third: SQS moved the message on instead of returning it.
    expect(dry.seen).toBe(0);
    expect(await visibleCount(sqs, next.url)).toBe(1);
  });
});

describe('redriveDeadLetters of everything', () => {
  it('moves everything by receive → send → delete by default, restoring the producer attributes', async () => {
    const { source, dlq } = await standardScenario();

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, yes: true, ...fast });

    expect(result.method).toBe('receive-send-delete');
    expect(result.fallbackReason).toBeUndefined();
    expect(result.moved).toHaveLength(4);
    expect(result.nothingMoved).toBeUndefined();
    const back = await readAll(sqs, source.url);
    // Of the consumer's attributes, only the redrive mark, naming each message's original id.
    expect(back.flatMap((m) => Object.keys(m.MessageAttributes ?? {})).filter((name) => name.startsWith('ic.'))).toEqual(
      Array(4).fill('ic.redrive'),
    );
    expect(back.map((m) => m.MessageAttributes?.['ic.redrive']?.StringValue).sort()).toEqual(['b-1', 'r-1', 'v-1', 'v-2']);
  });

  it('says why when the dead-letter queue is empty', async () => {
    const { dlq } = await createQueuePair(sqs, 'empty');

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, yes: true, ...fast });

    expect(result.nothingMoved).toBe('nothing moved: the dead-letter queue has no visible message');
  });

  it('refuses --move-task with a selection', async () => {
    const { dlq } = await standardScenario();

    await expect(
      redriveDeadLetters({ sqs }, { queueUrl: dlq.url, useMoveTask: true, selection: { reasons: ['ValidationError'] }, yes: true }),
    ).rejects.toThrow(/--move-task moves every message/);
  });

  it('--move-task falls back to receive → send → delete on fauxqs, which has no StartMessageMoveTask', async () => {
    const { source, dlq } = await standardScenario();
    const logs: string[] = [];

    const result = await redriveDeadLetters(
      { sqs, log: (l) => logs.push(l) },
      { queueUrl: dlq.url, useMoveTask: true, yes: true, ...fast },
    );

    expect(result.method).toBe('receive-send-delete');
    expect(result.fallbackReason).toMatch(/does not support StartMessageMoveTask/);
    expect(result.moved).toHaveLength(4);
    expect(await visibleCount(sqs, dlq.url)).toBe(0);
    expect((await readAll(sqs, source.url)).length).toBe(4);
    expect(logs.join('\n')).toContain('not using a message move task');
  });
});

describe('redriveDeadLetters with StartMessageMoveTask (stubbed SQS client)', () => {
  const dlqUrl = 'https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq';
  const sourceUrl = 'https://sqs.us-east-1.amazonaws.com/123456789012/orders';
  const dlqArn = 'arn:aws:sqs:us-east-1:123456789012:orders-dlq';
  const sourceArn = 'arn:aws:sqs:us-east-1:123456789012:orders';

  /** A hand-made client: answers by command class; records every command sent. */
  function stubClient(statuses: { Status: string; moved: number; FailureReason?: string }[], start?: () => Promise<unknown>) {
    const sent: object[] = [];
    let polls = 0;
    const client = {
      config: { region: async () => 'us-east-1' },
      send: async (command: object) => {
        sent.push(command);
        if (command instanceof GetQueueAttributesCommand) {
          const url = command.input.QueueUrl;
          return { Attributes: { QueueArn: url === dlqUrl ? dlqArn : sourceArn, ApproximateNumberOfMessages: '3' } };
        }
        if (command instanceof ListDeadLetterSourceQueuesCommand) return { queueUrls: [sourceUrl] };
        if (command instanceof StartMessageMoveTaskCommand) return start !== undefined ? start() : { TaskHandle: 'task-1' };
        if (command instanceof ListMessageMoveTasksCommand) {
          const status = statuses[Math.min(polls++, statuses.length - 1)];
          return {
            Results: [
              {
                TaskHandle: 'task-1',
                Status: status?.Status,
                ApproximateNumberOfMessagesMoved: status?.moved,
                ApproximateNumberOfMessagesToMove: 3,
                ...(status?.FailureReason !== undefined ? { FailureReason: status.FailureReason } : {}),
              },
            ],
          };
        }
        if (command instanceof ReceiveMessageCommand) return { Messages: [] };
        throw new Error(`unexpected command ${command.constructor.name}`);
      },
    } as unknown as SQSClient;
    return { client, sent };
  }

  it('starts one task to the source queue at the given rate and reports its progress until it completes', async () => {
    const { client, sent } = stubClient([
      { Status: 'RUNNING', moved: 1 },
      { Status: 'RUNNING', moved: 2 },
      { Status: 'COMPLETED', moved: 3 },
    ]);
    const logs: string[] = [];

    const result = await redriveDeadLetters(
      { sqs: client, log: (l) => logs.push(l) },
      { queueUrl: dlqUrl, useMoveTask: true, ratePerSecond: 50, pollIntervalSeconds: 0, yes: true },
    );

    const start = sent.find((c) => c instanceof StartMessageMoveTaskCommand) as StartMessageMoveTaskCommand;
    expect(start.input).toEqual({ SourceArn: dlqArn, DestinationArn: sourceArn, MaxNumberOfMessagesPerSecond: 50 });
    expect(result.method).toBe('move-task');
    expect(result.moveTask?.status).toBe('COMPLETED');
    expect(result.moveTask?.approximateNumberOfMessagesMoved).toBe(3);
    expect(logs).toEqual(
      expect.arrayContaining([
        'move task RUNNING: 1 of ~3 moved',
        'move task RUNNING: 2 of ~3 moved',
        'move task COMPLETED: 3 of ~3 moved',
      ]),
    );
    expect(formatRedrive(result)).toContain('COMPLETED: 3 of ~3 message(s) moved');
    expect(result.nothingMoved).toBeUndefined();
  });

  it('says so when the move task completed without moving anything', async () => {
    const { client } = stubClient([{ Status: 'COMPLETED', moved: 0 }]);

    const result = await redriveDeadLetters({ sqs: client }, { queueUrl: dlqUrl, useMoveTask: true, pollIntervalSeconds: 0, yes: true });

    expect(result.nothingMoved).toMatch(/without moving a message/);
  });

  it('starts no move task unless asked', async () => {
    const { client, sent } = stubClient([{ Status: 'COMPLETED', moved: 3 }]);

    await redriveDeadLetters({ sqs: client }, { queueUrl: dlqUrl, yes: true, waitTimeSeconds: 0 });

    expect(sent.some((c) => c instanceof StartMessageMoveTaskCommand)).toBe(false);
  });

  it('does not start a task on --dry-run', async () => {
    const { client, sent } = stubClient([{ Status: 'COMPLETED', moved: 0 }]);

    const result = await redriveDeadLetters({ sqs: client }, { queueUrl: dlqUrl, useMoveTask: true, dryRun: true });

    expect(result.dryRun).toBe(true);
    expect(sent.some((c) => c instanceof StartMessageMoveTaskCommand)).toBe(false);
  });

  it("throws MoveTaskFailedError with SQS's reason when the task fails", async () => {
    const { client } = stubClient([{ Status: 'FAILED', moved: 1, FailureReason: 'AWS.SimpleQueueService.NonExistentQueue' }]);

    await expect(
      redriveDeadLetters({ sqs: client }, { queueUrl: dlqUrl, useMoveTask: true, pollIntervalSeconds: 0, yes: true }),
    ).rejects.toThrow(MoveTaskFailedError);
  });

  it('falls back to receive → send → delete when StartMessageMoveTask is unsupported', async () => {
    const { client, sent } = stubClient([], () =>
      Promise.reject(Object.assign(new Error('not supported'), { name: 'UnsupportedOperation', $metadata: { httpStatusCode: 400 } })),
    );

    const result = await redriveDeadLetters({ sqs: client }, { queueUrl: dlqUrl, useMoveTask: true, yes: true, waitTimeSeconds: 0 });

    expect(result.method).toBe('receive-send-delete');
    expect(sent.some((c) => c instanceof ReceiveMessageCommand)).toBe(true);
  });

  it('returns after starting with wait: false', async () => {
    const { client, sent } = stubClient([{ Status: 'RUNNING', moved: 0 }]);

    const result = await redriveDeadLetters(
      { sqs: client },
      { queueUrl: dlqUrl, useMoveTask: true, wait: false, to: sourceUrl, yes: true },
    );

    expect(result.moveTask?.status).toBe('STARTED');
    expect(result.moveTask?.taskHandle).toBe('task-1');
    expect(sent.some((c) => c instanceof ListMessageMoveTasksCommand)).toBe(false);
  });
});
