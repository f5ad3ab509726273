/**
 * The generated workloads' yardsticks, checked on their own: the reference model's in-memory
 * update actions and conditions must do what DynamoDB (Local) does with the expressions rendered
 * from the same spec; the design pass must give every event the outcome it was meant to have, the
 * same on every source for a gated key; a replay's generated workload must survive JSON and the
 * schedule reader; and the simulated sources must carry the redrive mark.
 */
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGeneratedConsumer } from '../../tools/prove/generated/consumer.js';
import {
  applyUpdate,
  evaluateCondition,
  InvalidUpdate,
  Placeholders,
  renderCondition,
  renderUpdate,
} from '../../tools/prove/generated/expressions.js';
import { generatedWorkloadArbitrary, grammarParts } from '../../tools/prove/generated/grammar.js';
import { runGeneratedModel } from '../../tools/prove/generated/model.js';
import type { UpdateAction } from '../../tools/prove/generated/spec.js';
import { type AvItem, fromSdkItem, marshallItem, printAv, toNative, type ValueSpec } from '../../tools/prove/generated/values.js';
import { parseSchedule, scheduleArbitrary } from '../../tools/prove/schedule.js';
import { SimulatedKafkaTopic } from '../../tools/prove/SimulatedKafkaTopic.js';
import { SimulatedSqsQueue } from '../../tools/prove/SimulatedSqsQueue.js';
import type { VirtualClock } from '../../tools/prove/virtualClock.js';
import { awsClients } from '../support/testResources.js';

const { value, condition, updateAction, attribute } = grammarParts;

/** An item's attributes as the grammar draws them (unique names). */
const itemAttributes = fc.uniqueArray(fc.tuple(attribute, value), { maxLength: 4, selector: ([name]) => name });

describe('the reference model against DynamoDB Local', () => {
  const clients = awsClients();
  const table = `prove-model-${Math.random().toString(36).slice(2, 10)}`;
  beforeAll(async () => {
    await clients.dynamoDb.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      }),
    );
  });
  afterAll(async () => {
    await clients.dynamoDb.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
    clients.destroy();
  });

  const stored = async (pk: string): Promise<AvItem | undefined> => {
    const output = await clients.dynamoDb.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }));
    return output.Item === undefined ? undefined : fromSdkItem(output.Item);
  };
  const put = async (pk: string, attrs: readonly (readonly [string, ValueSpec])[] | undefined) => {
    if (attrs === undefined) return;
    const item = { pk, ...Object.fromEntries(attrs.map(([name, v]) => [name, toNative(v)])) };
    await clients.dynamoDb.send(new PutItemCommand({ TableName: table, Item: marshall(item, { removeUndefinedValues: true }) as never }));
  };
  let n = 0;

  it('applies every update action as DynamoDB does (or refuses what it refuses)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.option(itemAttributes, { nil: undefined }),
        fc.uniqueArray(updateAction, { minLength: 1, maxLength: 3, selector: (a: UpdateAction) => a.attr }),
        fc.boolean(),
        async (attrs, actions, lowerCase) => {
          const pk = `u${(n += 1)}`;
          await put(pk, attrs);
          const before = await stored(pk);
          const context = { id: `e-${pk}`, position: n };
          let expected: AvItem | 'refused';
          try {
            expected = applyUpdate(before, { pk: { S: pk } }, actions, context);
          } catch (error) {
            if (!(error instanceof InvalidUpdate)) throw error;
            expected = 'refused';
          }
          const p = new Placeholders();
          const expression = renderUpdate(actions, p, context, lowerCase);
          let actual: AvItem | 'refused';
          try {
            await clients.documentClient.send(
              new UpdateCommand({
                TableName: table,
                Key: { pk },
                UpdateExpression: expression,
                ExpressionAttributeNames: p.names,
                ...(Object.keys(p.values).length > 0 ? { ExpressionAttributeValues: p.values } : {}),
              }),
            );
            actual = (await stored(pk)) ?? { pk: { S: pk } };
          } catch (error) {
            if ((error as Error).name !== 'ValidationException') throw error;
            actual = 'refused';
          }
          expect(actual === 'refused' ? actual : printAv(actual), `${expression} on ${printAv(before)}`).toBe(
            expected === 'refused' ? expected : printAv(expected),
          );
        },
      ),
      { numRuns: 60, seed: 20_261_201 },
    );
  }, 120_000);

  it('evaluates every condition as DynamoDB does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.option(itemAttributes, { nil: undefined }), condition, async (attrs, spec) => {
        const pk = `c${(n += 1)}`;
        await put(pk, attrs);
        const expected = evaluateCondition(spec, await stored(pk));
        const p = new Placeholders();
        const expression = renderCondition(spec, p);
        let actual = true;
        try {
          await clients.documentClient.send(
            new PutCommand({
              TableName: table,
              Item: { pk: `${pk}-probe` },
              ConditionExpression: expression,
              ExpressionAttributeNames: p.names,
              ...(Object.keys(p.values).length > 0 ? { ExpressionAttributeValues: p.values } : {}),
            }),
          );
        } catch (error) {
          if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
          actual = false;
        }
        // The probe item is absent: evaluate on an absent item instead.
        expect(actual, `${expression} on an absent item`).toBe(evaluateCondition(spec, undefined));
        let onItem = true;
        try {
          await clients.documentClient.send(
            new UpdateCommand({
              TableName: table,
              Key: { pk },
              UpdateExpression: 'SET #probe = :probe',
              ConditionExpression: expression,
              ExpressionAttributeNames: { ...p.names, '#probe': 'probe_attr' },
              ExpressionAttributeValues: { ...p.values, ':probe': 1 },
            }),
          );
        } catch (error) {
          if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
          onItem = false;
        }
        expect(onItem, `${expression} on ${printAv(await stored(pk))}`).toBe(expected);
      }),
      { numRuns: 80, seed: 20_261_202 },
    );
  }, 120_000);
});

describe('the design pass and the model', () => {
  it('gives every event the outcome it is meant to have, the same on every source for a gated key', () => {
    const specs = fc.sample(generatedWorkloadArbitrary('sqs'), { seed: 20_261_203, numRuns: 40 });
    const failures: Record<string, RegExp> = {
      apply: /^applied$/,
      reject: /^dead:(?!RetriesExhausted)/,
      wait: /^dead:RetriesExhausted$/,
      readThrow: /^dead:/,
      conditionFails: /^dead:ConditionalWriteFailed$/,
      badValue: /^dead:RetriesExhausted$/,
      badOutbox: /^dead:RetriesExhausted$/,
      tooLarge: /^dead:InvalidWrite$/,
      tooManyActions: /^dead:InvalidWrite$/,
    };
    for (const spec of specs) {
      const consumer = buildGeneratedConsumer(spec, 'p', 3);
      const standard = runGeneratedModel(spec, consumer, 'sqs');
      const ordered = runGeneratedModel(spec, consumer, 'fifo');
      spec.keys.forEach((key, k) =>
        key.steps.forEach((step, s) => {
          if (step.poison !== undefined) return;
          const id = consumer.eventId(k, s);
          const verdict = standard.verdicts.get(id)!;
          expect(ordered.verdicts.get(id), `${id} on FIFO`).toEqual(verdict);
          const text = verdict.kind === 'applied' ? 'applied' : `dead:${verdict.reason}`;
          expect(text, `${id} meant to ${step.intent}`).toMatch(failures[step.intent]!);
        }),
      );
    }
  });

  it('marshalls what the document client takes and refuses what it refuses', () => {
    expect(printAv(marshallItem({ a: 10n ** 20n, b: Buffer.from('x'), c: new Set([1, 2]) }))).toBe(
      '{"a":{"N":"100000000000000000000"},"b":{"B":"eA=="},"c":{"NS":["1","2"]}}',
    );
    expect(() => marshallItem({ a: Number.NaN })).toThrow();
    expect(() => marshallItem({ a: new Set() })).toThrow();
    expect(() => marshallItem({ a: 2 ** 60 })).toThrow();
  });

  it('reads back a schedule with a generated workload from its JSON, as a replay does', () => {
    const [schedule] = fc.sample(scheduleArbitrary({ source: 'kafka', workload: 'generated' }), { seed: 20_261_204, numRuns: 1 });
    const text = JSON.stringify(schedule);
    expect(JSON.stringify(parseSchedule(JSON.parse(text)))).toBe(text);
    const broken = JSON.parse(text) as { workload: { items: { table: number }[] } };
    broken.workload.items[0]!.table = 99;
    expect(() => parseSchedule(broken)).toThrow(/workload\.items\[0\]\.table/);
  });
});

describe('the simulated sources mark a redrive', () => {
  const clock: VirtualClock = { now: () => 1_800_000_000_000, advance: () => undefined, advanceTo: () => undefined, offsetMs: 0 };

  it('SQS: the message attribute ic.redrive, as a Lambda record carries it', () => {
    const queue = new SimulatedSqsQueue({
      fifo: false,
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
      visibilityTimeoutSeconds: 30,
      maxReceiveCount: 10,
      clock,
      seed: 1,
      staleReceiptDeletes: false,
    });
    queue.send('m-2', 'body', undefined, { 'ic.redrive': 'm-1' });
    const [record] = queue.receive(1);
    expect(record?.messageAttributes).toEqual({
      'ic.redrive': { stringValue: 'm-1', stringListValues: [], binaryListValues: [], dataType: 'String' },
    });
  });

  it('Kafka: the record header ic.redrive', () => {
    const topic = new SimulatedKafkaTopic({
      topic: 't',
      partitions: 1,
      batchSize: 1,
      retryAttempts: 3,
      retryReading: 'resume-from-lowest-offset',
      clock,
    });
    topic.append('k', 'value', 0, { 'ic.redrive': 't-0@3' });
    const batch = topic.poll();
    expect(batch?.event.records['t-0']?.[0]?.headers).toEqual([{ 'ic.redrive': [...Buffer.from('t-0@3')] }]);
  });
});
