/**
 * The benchmark's own parts that its figures rest on: AWS's item-size and capacity-unit rules,
 * the simulated queue's redelivery and redrive, the flags, the round trips on the critical path
 * and the latency model, the machine-load verdict, the baseline's outbox item, and the contention
 * scenario's Zipf workload, concurrent queue and counting.
 */
import { describe, expect, it } from 'vitest';
import { attributeValueSize, itemSizeBytes, readUnits, usdPerMillionMessages, writeUnits } from '../../tools/bench/capacity.js';
import { FlagError, parseFlags, USAGE } from '../../tools/bench/flags.js';
import { formatReport } from '../../tools/bench/report.js';
import { ON_DEMAND_PRICES } from '../../tools/bench/capacity.js';
import { LAMBDA_PRICES } from '../../tools/bench/latencyModel.js';
import { SimulatedQueue } from '../../tools/bench/SimulatedQueue.js';
import { answerSimulatedDeletes } from '../../tools/bench/simulatedDeletes.js';
import { DeleteMessageBatchCommand, DeleteMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { ASSUMED_LATENCY_MS, assumedLatencyMs, lambdaUsdPerMillionMessages } from '../../tools/bench/latencyModel.js';
import { judgeLoad } from '../../tools/bench/machineLoad.js';
import { baselineOutboxMessageId, outboxPut } from '../../tools/bench/powertoolsBaseline.js';
import { criticalPath } from '../../tools/bench/roundTrips.js';
import { outboxMessageId } from 'idempotent-consumer/outbox';
import { seededRandom, zipfProbabilities, zipfSampler } from '../../tools/bench/zipf.js';
import {
  type ContentionRun,
  contentionMessages,
  contentionProblems,
  contentionSideFigures,
  LIFECYCLE,
  REDRIVE_REASON,
} from '../../tools/bench/contention.js';
import { ItemSizes, RequestMeter, Tally } from '../../tools/bench/RequestMeter.js';
import { countEngineOutcome, emptyCounts } from '../../tools/bench/sides.js';
import type { OutcomeRecord } from 'idempotent-consumer';

describe('item sizes (AWS: the sum of attribute name lengths and value sizes)', () => {
  it('counts strings in UTF-8 bytes, numbers by significant digits, lists and maps with 3 bytes of overhead', () => {
    expect(itemSizeBytes({ id: { S: 'abc' } })).toBe(2 + 3);
    expect(itemSizeBytes({ é: { S: 'é' } })).toBe(2 + 2);
    expect(attributeValueSize({ N: '12345' })).toBe(3 + 1); // 5 digits: 3 bytes, plus 1
    expect(attributeValueSize({ N: '-0.00120' })).toBe(1 + 1); // leading and trailing zeros trimmed: "12"
    expect(attributeValueSize({ BOOL: true })).toBe(1);
    expect(attributeValueSize({ NULL: true })).toBe(1);
    expect(attributeValueSize({ B: new Uint8Array(10) })).toBe(10);
    expect(attributeValueSize({ L: [] })).toBe(3);
    expect(attributeValueSize({ L: [{ S: 'ab' }, { N: '7' }] })).toBe(3 + 2 + 2);
    expect(attributeValueSize({ M: { k: { S: 'v' } } })).toBe(3 + 1 + 1);
    expect(attributeValueSize({ SS: ['a', 'bc'] })).toBe(3);
  });
});

describe('capacity units (AWS billing rules)', () => {
  it('reads: 4 KB units; a missing item costs the minimum; eventually consistent 0.5, strongly 1, transactional 2', () => {
    expect(readUnits(0, 'eventual')).toBe(0.5);
    expect(readUnits(0, 'strong')).toBe(1);
    expect(readUnits(4096, 'strong')).toBe(1);
    expect(readUnits(4097, 'strong')).toBe(2);
    expect(readUnits(3500, 'transactional')).toBe(2);
    expect(readUnits(8193, 'eventual')).toBe(1.5);
  });

  it('writes: 1 KB units, at least 1; 2 per unit in a transaction', () => {
    expect(writeUnits(0, false)).toBe(1);
    expect(writeUnits(1024, false)).toBe(1);
    expect(writeUnits(1025, false)).toBe(2);
    expect(writeUnits(500, true)).toBe(2);
    expect(writeUnits(2500, true)).toBe(6);
  });

  it('prices units at on-demand rates (us-east-1): $0.625 per million writes, $0.125 per million reads', () => {
    expect(usdPerMillionMessages(0, 1)).toBeCloseTo(0.625);
    expect(usdPerMillionMessages(1, 3)).toBeCloseTo(2);
  });
});

describe('the simulated queue', () => {
  const message = (id: string) => ({ messageId: id, body: `{"n":"${id}"}` });

  it('delivers in order with receive counts, brings failures back after what is queued, and redrives after maxReceiveCount', () => {
    const queue = new SimulatedQueue([message('a'), message('b'), message('c')], {
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
      maxReceiveCount: 2,
    });
    const first = queue.receive(2);
    expect(first.map((r) => [r.messageId, r.attributes.ApproximateReceiveCount])).toEqual([
      ['a', '1'],
      ['b', '1'],
    ]);
    expect(queue.settle(new Set(['a']))).toEqual([]);
    expect(queue.receive(10).map((r) => [r.messageId, r.attributes.ApproximateReceiveCount])).toEqual([
      ['c', '1'],
      ['a', '2'],
    ]);
    expect(queue.settle(new Set(['a']))).toEqual(['a']);
    expect(queue.isEmpty).toBe(true);
    expect(queue.totals).toEqual({ deleted: 2, deletedByReceiptHandle: 0, redriven: 1, deliveries: 4 });
  });

  it('redelivers a message received before with the next receive count, and refuses a second batch in flight', () => {
    const queue = new SimulatedQueue([{ ...message('a'), previousReceives: 1 }], { queueArn: 'arn', maxReceiveCount: 5 });
    expect(queue.receive(1)[0]?.attributes.ApproximateReceiveCount).toBe('2');
    expect(() => queue.receive(1)).toThrow(/in flight/);
    expect(() => new SimulatedQueue([message('a'), message('a')], { queueArn: 'arn', maxReceiveCount: 5 })).toThrow(/twice/);
  });

  it('lets several batches be in flight; a failure comes back once the batches in flight beside it have settled', () => {
    const queue = new SimulatedQueue(['a', 'b', 'c', 'd', 'e'].map(message), { queueArn: 'arn', maxReceiveCount: 2 });
    const first = queue.receiveBatch(2);
    const second = queue.receiveBatch(2);
    expect(first.records.map((r) => r.messageId)).toEqual(['a', 'b']);
    expect(second.records.map((r) => r.messageId)).toEqual(['c', 'd']);
    expect(queue.visibleCount).toBe(1);
    expect(first.settle(new Set(['a']))).toEqual([]);
    // 'a' waits for the second batch, which was in flight when it failed.
    expect(queue.visibleCount).toBe(1);
    expect(() => first.settle(new Set())).toThrow(/already settled/);
    const third = queue.receiveBatch(10);
    expect(third.records.map((r) => r.messageId)).toEqual(['e']);
    expect(second.settle(new Set())).toEqual([]);
    // 'a' waited for the second batch only: the third was received after it failed.
    expect(queue.visibleCount).toBe(1);
    const retry = queue.receiveBatch(10);
    expect(retry.records.map((r) => [r.messageId, r.attributes.ApproximateReceiveCount])).toEqual([['a', '2']]);
    expect(retry.settle(new Set(['a']))).toEqual(['a']);
    expect(queue.isEmpty).toBe(false);
    third.settle(new Set());
    expect(queue.isEmpty).toBe(true);
    expect(queue.totals).toEqual({ deleted: 4, deletedByReceiptHandle: 0, redriven: 1, deliveries: 6 });
  });
});

describe('the simulated queue’s deletes by receipt handle (SQS’s DeleteMessage)', () => {
  const message = (id: string) => ({ messageId: id, body: `{"n":"${id}"}` });
  const handleOf = (records: readonly { messageId: string; receiptHandle: string }[], id: string) =>
    records.find((r) => r.messageId === id)!.receiptHandle;

  it('deletes a message waiting to come back with the handle of its latest receive: it is not delivered again', () => {
    const queue = new SimulatedQueue(['a', 'b', 'c'].map(message), { queueArn: 'arn', maxReceiveCount: 5 });
    const first = queue.receive(2);
    queue.settle(new Set(['a'])); // 'a' failed (parked): back after 'c'
    expect(queue.deleteMessage(handleOf(first, 'a'))).toBe(true);
    expect(queue.receive(10).map((r) => r.messageId)).toEqual(['c']);
    queue.settle(new Set());
    expect(queue.isEmpty).toBe(true);
    expect(queue.totals).toEqual({ deleted: 3, deletedByReceiptHandle: 1, redriven: 0, deliveries: 3 });
    // Deleted once: the same handle again deletes nothing.
    expect(queue.deleteMessage(handleOf(first, 'a'))).toBe(false);
  });

  it('deletes nothing with a stale handle (the message was received again since): it settles as its new delivery says', () => {
    const queue = new SimulatedQueue(['a'].map(message), { queueArn: 'arn', maxReceiveCount: 5 });
    const first = queue.receive(1);
    queue.settle(new Set(['a']));
    const second = queue.receive(1);
    expect(handleOf(second, 'a')).not.toBe(handleOf(first, 'a'));
    expect(queue.deleteMessage(handleOf(first, 'a'))).toBe(false);
    expect(queue.deleteMessage('bench-unknown-1')).toBe(false);
    queue.settle(new Set(['a']));
    expect(queue.receive(1).map((r) => [r.messageId, r.attributes.ApproximateReceiveCount])).toEqual([['a', '3']]);
    queue.settle(new Set());
    expect(queue.totals).toEqual({ deleted: 1, deletedByReceiptHandle: 0, redriven: 0, deliveries: 3 });
  });

  it('with batches in flight: deletes a failure waiting for the batches beside it, and a message in flight, whose batch then settles without it', () => {
    const queue = new SimulatedQueue(['a', 'b', 'c', 'd'].map(message), { queueArn: 'arn', maxReceiveCount: 5 });
    const first = queue.receiveBatch(2);
    const second = queue.receiveBatch(2);
    first.settle(new Set(['a'])); // 'a' waits for the second batch
    // Another invocation (the second batch's) applies 'a' from the park and deletes it with the handle it parked.
    expect(queue.deleteMessage(handleOf(first.records, 'a'))).toBe(true);
    // 'c' is in flight in the second batch; its current handle deletes it there too.
    expect(queue.deleteMessage(handleOf(second.records, 'c'))).toBe(true);
    expect(second.settle(new Set(['c', 'd']))).toEqual([]);
    // Neither 'a' nor 'c' comes back; 'd' (failed, not deleted) does.
    const third = queue.receiveBatch(10);
    expect(third.records.map((r) => r.messageId)).toEqual(['d']);
    third.settle(new Set());
    expect(queue.isEmpty).toBe(true);
    expect(queue.totals).toEqual({ deleted: 4, deletedByReceiptHandle: 2, redriven: 0, deliveries: 5 });
  });

  it('deletes nothing with the handle of a receive older than the batch the message is in flight in now', () => {
    const queue = new SimulatedQueue(['a', 'b'].map(message), { queueArn: 'arn', maxReceiveCount: 5 });
    const first = queue.receiveBatch(1);
    first.settle(new Set(['a'])); // parked with the first receive's handle
    const second = queue.receiveBatch(10); // 'b', then 'a' again: a new handle
    expect(second.records.map((r) => r.messageId)).toEqual(['b', 'a']);
    expect(queue.deleteMessage(handleOf(first.records, 'a'))).toBe(false);
    second.settle(new Set(['a']));
    expect(queue.receiveBatch(10).records.map((r) => r.messageId)).toEqual(['a']);
  });
});

describe('the engine’s deletes answered by the simulated queue (a middleware on its SQS client)', () => {
  // An endpoint nobody listens on: a request that reached the network would fail.
  const client = () =>
    new SQSClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      maxAttempts: 1,
    });
  const message = (id: string) => ({ messageId: id, body: `{"n":"${id}"}` });

  it('answers DeleteMessageBatch and DeleteMessage of its receipt handles without sending them, every entry successful, and the meter counts them', async () => {
    const queue = new SimulatedQueue(['a', 'b', 'c'].map(message), { queueArn: 'arn', maxReceiveCount: 5 });
    const sqs = client();
    const meter = new RequestMeter(new ItemSizes());
    meter.instrumentSqs(sqs);
    answerSimulatedDeletes(sqs, new Set([queue]));
    const first = queue.receive(3);
    queue.settle(new Set(['a', 'b', 'c']));
    const again = queue.receive(1); // 'a' received again: its first handle is stale
    const output = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: 'http://127.0.0.1:9/000000000000/q',
        Entries: first.slice(0, 2).map((record, i) => ({ Id: String(i), ReceiptHandle: record.receiptHandle })),
      }),
    );
    expect(output.Successful).toEqual([{ Id: '0' }, { Id: '1' }]);
    expect(output.Failed).toEqual([]);
    await sqs.send(new DeleteMessageCommand({ QueueUrl: 'http://127.0.0.1:9/000000000000/q', ReceiptHandle: first[2]!.receiptHandle }));
    // 'b' and 'c' deleted; 'a' (stale handle) is still in flight with its new receive.
    expect(queue.totals.deletedByReceiptHandle).toBe(2);
    queue.settle(new Set());
    expect(again.map((r) => r.messageId)).toEqual(['a']);
    expect(queue.isEmpty).toBe(true);
    expect(Object.fromEntries(meter.tally.sqs)).toEqual({ DeleteMessageBatch: 1, DeleteMessage: 1 });
    sqs.destroy();
  });

  it('refuses a DeleteMessageBatch that mixes its receipt handles with others', async () => {
    const sqs = client();
    answerSimulatedDeletes(sqs, new Set());
    await expect(
      sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: 'http://127.0.0.1:9/000000000000/q',
          Entries: [
            { Id: '0', ReceiptHandle: 'bench-a-1' },
            { Id: '1', ReceiptHandle: 'AQEB-real' },
          ],
        }),
      ),
    ).rejects.toThrow(/mixes receipt handles/);
    sqs.destroy();
  });
});

describe('the engine’s outcomes counted per message (parking)', () => {
  const outcome = (messageId: string, over: Partial<OutcomeRecord>): OutcomeRecord => ({
    outcome: 'applied',
    messageId,
    idempotencyKey: messageId,
    orderingKey: 'order-1',
    fields: {},
    attempt: 1,
    reason: undefined,
    errorType: undefined,
    errorMessage: undefined,
    countsAsAttempt: undefined,
    durationMs: 1,
    ...over,
  });

  it('counts a parked retry apart, a message settled from the park once, and its other delivery’s duplicate as settled again', () => {
    const counts = emptyCounts();
    countEngineOutcome(counts, outcome('m1', { outcome: 'retried', reason: 'PredecessorNotApplied', parked: true }));
    countEngineOutcome(counts, outcome('m2', { outcome: 'retried', reason: 'TransactionConflict' }));
    countEngineOutcome(counts, outcome('m1', { outcome: 'applied', fromPark: true }));
    countEngineOutcome(counts, outcome('m1', { outcome: 'duplicate' }));
    countEngineOutcome(counts, outcome('m2', { outcome: 'applied' }));
    expect(counts).toMatchObject({
      applied: 2,
      duplicate: 0,
      retried: 2,
      parked: 1,
      fromPark: 1,
      settledAgain: 1,
      retryReasons: { 'PredecessorNotApplied, parked': 1, TransactionConflict: 1 },
    });
    // A message applied twice is counted twice: the run's checks report it.
    countEngineOutcome(counts, outcome('m2', { outcome: 'applied' }));
    expect(counts.applied).toBe(3);
  });

  it('counts a message found a duplicate before another of its deliveries reports applying it once, as applied', () => {
    // The invocation that committed it ends after the one that read its inbox row from the park.
    const counts = emptyCounts();
    countEngineOutcome(counts, outcome('m1', { outcome: 'duplicate', fromPark: true }));
    countEngineOutcome(counts, outcome('m1', { outcome: 'applied' }));
    expect(counts).toMatchObject({ applied: 1, duplicate: 0, settledAgain: 1, fromPark: 1 });
  });
});

describe('the contention scenario’s workload (Zipf-distributed orders)', () => {
  it('draws the same numbers from the same seed, in [0, 1)', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const drawn = Array.from({ length: 1000 }, () => a());
    expect(drawn).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(drawn.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(seededRandom(8)()).not.toBe(drawn[0]);
  });

  it('gives rank k the weight 1 / k^s, normalized, and refuses bad parameters', () => {
    const p = zipfProbabilities(3, 1);
    expect(p.reduce((x, y) => x + y, 0)).toBeCloseTo(1);
    expect(p[0]! / p[1]!).toBeCloseTo(2);
    expect(p[0]! / p[2]!).toBeCloseTo(3);
    expect(zipfProbabilities(4, 0)).toEqual([0.25, 0.25, 0.25, 0.25]);
    expect(() => zipfProbabilities(0, 1)).toThrow(RangeError);
    expect(() => zipfProbabilities(3, -1)).toThrow(RangeError);
  });

  it('draws ranks with the Zipf frequencies: the hottest key most, within a few percent over many draws', () => {
    const keys = 50;
    const draw = zipfSampler(keys, 1.1, seededRandom(3));
    const counts = new Array<number>(keys).fill(0);
    const n = 200_000;
    for (let i = 0; i < n; i += 1) counts[draw()]! += 1;
    const p = zipfProbabilities(keys, 1.1);
    for (const rank of [0, 1, 2, 9, 49]) expect(Math.abs(counts[rank]! / n - p[rank]!)).toBeLessThan(0.01);
    expect(counts[0]).toBe(Math.max(...counts));
    expect(counts.every((c) => c > 0)).toBe(true);
  });

  it('sends each order its lifecycle first, in order, then re-sends of its events with the same body', () => {
    const workload = contentionMessages('p', 600);
    expect(workload.messages).toHaveLength(600);
    expect(workload).toMatchObject({ keys: 150 });
    expect(workload.hottestOrderShare).toBeGreaterThan(0.1);
    expect(new Set(workload.messages.map((m) => m.messageId)).size).toBe(600);
    const byOrder = new Map<string, { type: string; eventId: string; body: string }[]>();
    for (const m of workload.messages) {
      const event = JSON.parse(m.body) as { type: string; eventId: string; orderId: string };
      expect(event.orderId.startsWith('p-order-')).toBe(true);
      byOrder.set(event.orderId, [...(byOrder.get(event.orderId) ?? []), { type: event.type, eventId: event.eventId, body: m.body }]);
    }
    expect(byOrder.size).toBe(workload.orders);
    const bodies = new Map<string, string>();
    for (const events of byOrder.values()) {
      events.forEach((e, i) => {
        expect(e.type).toBe(LIFECYCLE[i % LIFECYCLE.length]);
        // A re-send is byte for byte the event sent first (same idempotency key, same payload).
        if (bodies.has(e.eventId)) expect(e.body).toBe(bodies.get(e.eventId));
        else bodies.set(e.eventId, e.body);
      });
    }
    expect(bodies.size).toBe(workload.distinctEvents);
    expect(contentionMessages('p', 600)).toEqual(workload);
  });
});

describe('the contention scenario’s counting', () => {
  const run = (over: Partial<ContentionRun>, counts: Partial<ReturnType<typeof emptyCounts>> = {}): ContentionRun => {
    const tally = new Tally();
    tally.cancelledTransactions = 5;
    tally.writeUnits = 40;
    tally.readUnits = 8;
    return {
      side: 'engine',
      environments: 4,
      batchSize: 10,
      messages: 20,
      distinctEvents: 12,
      invocations: 4,
      handlerMs: 2000,
      wallMs: 1000,
      roundTrips: 8,
      modeledMs: 400,
      waitedMs: 100,
      tally,
      counts: { ...emptyCounts(), applied: 12, duplicate: 8, retried: 6, retryReasons: { TransactionConflict: 6 }, ...counts },
      redriven: 0,
      deliveries: 26,
      deletedByReceiptHandle: 0,
      ...over,
    };
  };

  it('counts goodput (applied and duplicates) per second of invocation time, per invocation, per wall and modeled second, and the rest per message', () => {
    expect(contentionSideFigures(run({}))).toMatchObject({
      goodputPerSecond: 10,
      goodputPerInvocation: 5,
      wallGoodputPerSecond: 20,
      modeledGoodputPerSecond: 50,
      roundTripsPerInvocation: 2,
      modeledMsPerInvocation: 100,
      waitedMsPerInvocation: 25,
      cancelledTransactionsPerMessage: 0.25,
      redeliveriesPerMessage: 0.3,
      retriedPerMessage: 0.3,
      redeliveriesByReason: { TransactionConflict: 0.3 },
      writeUnitsPerMessage: 2,
      usdPerMillion: 1.3, // 2 write units × $0.625 + 0.4 read units × $0.125
      falseDeadLetters: 0,
    });
    expect(contentionProblems(run({}))).toEqual([]);
  });

  it('counts every dead letter of these valid messages as false, by reason, the redrive policy’s too; the engine’s are problems', () => {
    const engine = run(
      { redriven: 1 },
      { applied: 11, duplicate: 6, deadLettered: 2, deadLetterReasons: { 'RetriesExhausted (TransactionConflict)': 2 } },
    );
    expect(contentionSideFigures(engine)).toMatchObject({
      falseDeadLetters: 3,
      falseDeadLettersByReason: { 'RetriesExhausted (TransactionConflict)': 2, [REDRIVE_REASON]: 1 },
    });
    expect(contentionProblems(engine)).toEqual([expect.stringMatching(/engine@4: 3 valid messages dead-lettered/)]);
    // The baseline's false dead letters are a figure, not a problem; a message applied twice or lost is.
    expect(contentionProblems({ ...engine, side: 'baseline' })).toEqual([]);
    expect(contentionProblems(run({ side: 'baseline' }, { applied: 13, duplicate: 7 }))).toEqual([
      expect.stringMatching(/13 messages applied for 12 distinct events/),
    ]);
    expect(contentionProblems(run({}, { duplicate: 7 }))).toEqual([expect.stringMatching(/19 of 20 messages settled/)]);
  });
});

describe('the benchmark flags', () => {
  it('has defaults that measure everything: 3 repetitions, batch sizes 1, 10 and 100, every scenario, heap and cold start (20 imports a side)', () => {
    const flags = parseFlags([]);
    expect(flags).toMatchObject({
      repetitions: 3,
      batchSizes: [1, 10, 100],
      scenarios: ['fresh', 'duplicates', 'fresh-side-effect', 'mixed', 'poison', 'contention'],
      contentionMessages: 600,
      contentionEnvironments: [1, 4, 16],
      heap: { from: 1000, to: 10000 },
      coldStartRuns: 20,
      parking: false,
      inboxHome: true,
      json: false,
    });
    expect(parseFlags(['--parking', 'on'])).toMatchObject({ parking: true });
  });

  it('takes --inbox-home on|off: on by default (the café’s consumer as it ships), off for an inbox row per event', () => {
    expect(parseFlags(['--inbox-home', 'off'])).toMatchObject({ inboxHome: false, parking: false });
    expect(parseFlags(['--inbox-home', 'on', '--parking', 'on'])).toMatchObject({ inboxHome: true, parking: true });
    expect(USAGE).toContain('[--inbox-home on|off]');
  });

  it('names the engine’s inbox home (and parking) in the text report’s header', () => {
    const report = (engineInboxHome: 'on' | 'off') =>
      formatReport({
        baseline: 'powertools-makeIdempotent',
        engineParking: 'off',
        engineInboxHome,
        repetitions: 1,
        messagesPerRun: 10,
        pricing: ON_DEMAND_PRICES,
        latencyModel: { assumedLatencyMs: ASSUMED_LATENCY_MS, lambda: LAMBDA_PRICES },
        scenarios: [],
        targets: [],
        totalSeconds: 0,
        ok: true,
      });
    expect(report('off')).toContain('Engine (parking off, inbox home off) vs baseline (powertools-makeIdempotent)');
    expect(report('on')).toContain('Engine (parking off, inbox home on) vs baseline');
  });

  it('runs the scenarios in their order (fresh before duplicates) and reads the endpoints', () => {
    const flags = parseFlags([
      '--scenarios',
      'duplicates,fresh',
      '--dynamodb-endpoint',
      'http://127.0.0.1:1',
      '--sqs-endpoint',
      'http://127.0.0.1:2',
      '--heap-messages',
      '0',
    ]);
    expect(flags).toMatchObject({
      scenarios: ['fresh', 'duplicates'],
      endpoints: { dynamoDb: 'http://127.0.0.1:1', sqs: 'http://127.0.0.1:2' },
      heap: undefined,
    });
  });

  it.each([
    [['--messages', 'ten'], /--messages must be an integer/],
    [['--batch-sizes', '101'], /--batch-sizes must be an integer from 1 to 100/],
    [['--scenarios', 'fresh,typo'], /unknown scenario "typo"/],
    [['--scenarios', 'duplicates'], /needs fresh too/],
    [['--heap-messages', '500,100'], /A < B/],
    [['--dynamodb-endpoint', 'http://127.0.0.1:1'], /both/],
    [['--nope'], /Unknown option/],
    [['--contention-environments', '0'], /--contention-environments must be an integer from 1 to 100/],
    [['--parking', 'no'], /--parking must be on or off/],
    [['--inbox-home', 'yes'], /--inbox-home must be on or off, not "yes"/],
    [['--inbox-home', ''], /--inbox-home must be on or off/],
    [['--inbox-home'], /--inbox-home/],
  ])('refuses %j with a clear message', (argv, message) => {
    expect(() => parseFlags(argv)).toThrow(FlagError);
    expect(() => parseFlags(argv)).toThrow(message);
  });
});

describe('round trips on the critical path (requests in flight together count once)', () => {
  const request = (startMs: number, endMs: number, operation = 'PutItem', service = 'dynamodb') => ({ service, operation, startMs, endMs });

  it('counts requests that overlap in time once, and each request sent after a response once more', () => {
    // Arrange: three sent together; then one after the first response; then one after that one's.
    const requests = [request(0, 10), request(1, 12), request(2, 11), request(10.5, 20), request(20.2, 25)];
    // Act
    const path = criticalPath(requests);
    // Assert
    expect(path.roundTrips).toBe(3);
    expect(criticalPath([request(0, 5), request(0, 5), request(0, 5)]).roundTrips).toBe(1);
    expect(criticalPath([request(0, 1), request(1, 2), request(2, 3), request(3, 4)]).roundTrips).toBe(4);
    expect(criticalPath([]).roundTrips).toBe(0);
  });

  it('does not count a slow server queue as round trips: parallel chains count as long as the longest chain', () => {
    // Arrange: two records, each a chain of 2 requests sent together at 0; the server answers the
    // second record's first request late, after the first record's whole chain (whose requests do
    // not overlap it). A chain of non-overlapping requests would count 3; each record waited for 2.
    const requests = [
      request(0, 5), // record 1, first
      request(0, 30), // record 2, first, answered late
      request(5.1, 29), // record 1, second: sent after record 1's first response
      request(30.1, 35), // record 2, second: sent after record 2's first response
    ];
    // Act + Assert
    expect(criticalPath(requests).roundTrips).toBe(2);
  });

  it('is independent of the order the requests are given in, and refuses an interval that ends before it starts', () => {
    const requests = [request(10.5, 20), request(0, 10), request(20.2, 25), request(1, 12)];
    expect(criticalPath(requests).roundTrips).toBe(criticalPath([...requests].reverse()).roundTrips);
    expect(() => criticalPath([request(5, 4)])).toThrow(RangeError);
  });

  it('models the critical path’s AWS latency from the assumed latency of each request on it', () => {
    // A lock write, then a read, then a transaction: 5 + 5 + 15 ms; an SQS send beside the read adds nothing.
    const requests = [
      request(0, 3, 'PutItem'),
      request(3.1, 6, 'GetItem'),
      request(3.2, 9, 'SendMessage', 'sqs'),
      request(6.1, 8, 'TransactWriteItems'),
    ];
    const path = criticalPath(requests, assumedLatencyMs);
    expect(path.roundTrips).toBe(3);
    expect(path.modeledMs).toBe(ASSUMED_LATENCY_MS.dynamoDbSingleItem * 2 + ASSUMED_LATENCY_MS.dynamoDbTransaction);
    expect(assumedLatencyMs({ service: 'dynamodb', operation: 'BatchGetItem' })).toBe(ASSUMED_LATENCY_MS.dynamoDbBatch);
    expect(assumedLatencyMs({ service: 'sqs', operation: 'SendMessage' })).toBe(ASSUMED_LATENCY_MS.sqs);
  });

  it('prices the modeled wait at Lambda’s arm64 rate: 1 s per message at 1,024 MB is $13.33 per million', () => {
    expect(lambdaUsdPerMillionMessages(1000)).toBeCloseTo(13.3334);
    expect(lambdaUsdPerMillionMessages(10, 2048)).toBeCloseTo(0.266668);
  });
});

describe('whether the machine was quiet', () => {
  const sample = (load: number, ratio: number) => ({
    loadAverage: [load, load, load] as [number, number, number],
    calibrationWallToCpu: ratio,
    calibrationCpuMs: 40,
  });

  it('is quiet when the load is below half the cores and the calibration loop is not kept waiting, before and after', () => {
    expect(judgeLoad(sample(0.2, 1.01), sample(0.5, 1.05), 2)).toMatchObject({ quiet: true, reasons: [] });
  });

  it('says why it was not quiet', () => {
    const verdict = judgeLoad(sample(0.2, 1.0), sample(3.5, 1.8), 2);
    expect(verdict.quiet).toBe(false);
    expect(verdict.reasons).toEqual([expect.stringMatching(/load average 3.5 after/), expect.stringMatching(/1.8× its CPU time/)]);
  });
});

describe('the baseline’s outbox item (like with like)', () => {
  it('has the id the engine gives the same message, so the items are the same size', () => {
    expect(baselineOutboxMessageId('cafe-orders', 'evt-1', 0)).toBe(outboxMessageId('cafe-orders', 'evt-1', 0));
    const put = outboxPut('outbox', 'cafe-orders', { orderId: 'o-1', eventId: 'evt-1', points: 10 }, 60, new Date(0));
    expect(put.Item).toMatchObject({
      pk: `cafe-orders#outbox#${outboxMessageId('cafe-orders', 'evt-1', 0)}`,
      kind: 'outbox',
      expiresAt: 60,
    });
    expect(JSON.parse(put.Item.body)).toEqual({ type: 'PaymentReceived', orderId: 'o-1', eventId: 'evt-1', points: 10 });
  });
});
