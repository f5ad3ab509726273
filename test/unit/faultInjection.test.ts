import { DynamoDBClient, GetItemCommand, TransactWriteItemsCommand, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DeserializeHandlerOutput, DeserializeMiddleware } from '@smithy/types';
import { describe, expect, it } from 'vitest';
import {
  FaultFlagError,
  faultRatesFromFlags,
  installFaults,
  parseFaultFlag,
  parseSeedFlag,
} from '../../packages/local/src/faultInjection.js';
import type { FaultOptions } from '../../packages/local/src/faultInjection.js';

/** Clients whose calls never leave the process: the innermost middleware answers 200 `{}` for what the injector lets through. */
function offlineClients() {
  const config = {
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
  };
  const dynamoDb = new DynamoDBClient(config);
  const sqs = new SQSClient(config);
  let served = 0;
  const server: DeserializeMiddleware<object, object> = () => async () => {
    served += 1;
    const body = new TextEncoder().encode('{}');
    return {
      response: { statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.0' }, body },
      output: undefined,
    } as unknown as DeserializeHandlerOutput<object>;
  };
  return {
    dynamoDb,
    sqs,
    served: () => served,
    /** Installs the injector, then the fake server inside it. */
    install(client: DynamoDBClient | SQSClient, options: FaultOptions) {
      const injector = client instanceof DynamoDBClient ? installFaults(client, options) : installFaults(client, options);
      (client.middlewareStack as unknown as { add(middleware: unknown, options: object): void }).add(server, {
        step: 'deserialize',
        priority: 'low',
        name: 'fakeServer',
      });
      return injector;
    },
  };
}

const getItem = () => new GetItemCommand({ TableName: 'table', Key: { pk: { S: 'a' } } });

async function failures(options: FaultOptions, calls: number): Promise<Array<string | undefined>> {
  const { dynamoDb, install } = offlineClients();
  install(dynamoDb, options);
  const results: Array<string | undefined> = [];
  for (let i = 0; i < calls; i += 1) {
    results.push(
      await dynamoDb.send(getItem()).then(
        () => undefined,
        (error: Error) => error.name,
      ),
    );
  }
  dynamoDb.destroy();
  return results;
}

describe('fault injection', () => {
  describe('parseFaultFlag', () => {
    it.each([
      ['transaction-conflict=0.05', { kind: 'transaction-conflict', rate: 0.05 }],
      ['throttle=0.02', { kind: 'throttle', rate: 0.02 }],
      ['dynamodb-5xx=1', { kind: 'dynamodb-5xx', rate: 1 }],
      ['sqs-5xx=0', { kind: 'sqs-5xx', rate: 0 }],
      [' throttle = .5 ', { kind: 'throttle', rate: 0.5 }],
    ])('reads %j', (flag, expected) => {
      expect(parseFaultFlag(flag)).toEqual(expected);
    });

    it.each([
      ['throttle', /is not <kind>=<rate>/],
      ['slow=0.1', /unknown kind "slow"/],
      ['throttle=1.5', /from 0 to 1, got "1.5"/],
      ['throttle=-0.1', /from 0 to 1/],
      ['throttle=5%', /from 0 to 1, got "5%"/],
      ['throttle=abc', /from 0 to 1/],
    ])('refuses %j, saying what is accepted', (flag, message) => {
      expect(() => parseFaultFlag(flag)).toThrow(FaultFlagError);
      expect(() => parseFaultFlag(flag)).toThrow(message);
      expect(() => parseFaultFlag(flag)).toThrow(/throttle, transaction-conflict, dynamodb-5xx, sqs-5xx/);
    });

    it('merges several flags and refuses a kind given twice', () => {
      expect(faultRatesFromFlags(['transaction-conflict=0.05', 'throttle=0.02'])).toEqual({ 'transaction-conflict': 0.05, throttle: 0.02 });
      expect(() => faultRatesFromFlags(['throttle=0.1', 'throttle=0.2'])).toThrow(/given twice/);
    });
  });

  describe('parseSeedFlag', () => {
    it('reads a whole number and refuses anything else', () => {
      expect(parseSeedFlag('7')).toBe(7);
      expect(parseSeedFlag('-3')).toBe(-3);
      for (const text of ['', 'seven', '1.5', '1e3', '9007199254740993']) expect(() => parseSeedFlag(text), text).toThrow(FaultFlagError);
    });
  });

  describe('installFaults', () => {
    it('refuses rates outside 0..1, unknown kinds and a seed that is not an integer', () => {
      const { dynamoDb } = offlineClients();
      expect(() => installFaults(dynamoDb, { rates: { throttle: 2 }, seed: 1 })).toThrow(RangeError);
      expect(() => installFaults(dynamoDb, { rates: { slow: 0.1 } as never, seed: 1 })).toThrow(/unknown fault kind/);
      expect(() => installFaults(dynamoDb, { rates: {}, seed: 1.5 })).toThrow(/safe integer/);
      expect(() => installFaults(dynamoDb, { rates: {}, seed: 1, after: -1 })).toThrow(/after/);
    });

    it('injects the same faults for the same seed and calls, other faults for another seed', async () => {
      const options = { rates: { throttle: 0.5 }, seed: 7 };

      const first = await failures(options, 40);
      const again = await failures(options, 40);
      const otherSeed = await failures({ ...options, seed: 8 }, 40);

      expect(again).toEqual(first);
      expect(otherSeed).not.toEqual(first);
      const thrown = first.filter((name) => name !== undefined).length;
      expect(thrown).toBeGreaterThan(5);
      expect(thrown).toBeLessThan(35);
      expect(new Set(first.filter(Boolean))).toEqual(new Set(['ProvisionedThroughputExceededException', 'ThrottlingException']));
    });

    it('never fires a kind at rate 0 and always at rate 1, and leaves calls it does not fail to the server', async () => {
      const { dynamoDb, install, served } = offlineClients();
      const never = install(dynamoDb, { rates: { 'dynamodb-5xx': 0 }, seed: 1 });
      for (let i = 0; i < 20; i += 1) await dynamoDb.send(getItem());
      expect(never.injected).toEqual([]);
      expect(served()).toBe(20);

      expect(await failures({ rates: { 'dynamodb-5xx': 1 }, seed: 1 }, 20)).toSatisfy((names: Array<string | undefined>) =>
        names.every((name) => name === 'InternalServerError' || name === 'ServiceUnavailable'),
      );
    });

    it('cancels a transaction with one TransactionConflict reason among None, one per action', async () => {
      const { dynamoDb, install } = offlineClients();
      const injector = install(dynamoDb, { rates: { 'transaction-conflict': 1 }, seed: 3 });
      const items = Array.from({ length: 4 }, (_, i) => ({ Put: { TableName: 't', Item: { pk: { S: `k${i}` } } } }));

      const error = await dynamoDb.send(new TransactWriteItemsCommand({ TransactItems: items })).then(
        () => undefined,
        (caught: unknown) => caught,
      );

      expect(error).toBeInstanceOf(TransactionCanceledException);
      const codes = (error as TransactionCanceledException).CancellationReasons?.map((reason) => reason.Code);
      expect(codes).toHaveLength(4);
      expect(codes?.filter((code) => code === 'TransactionConflict')).toHaveLength(1);
      expect(codes?.filter((code) => code === 'None')).toHaveLength(3);
      expect(injector.counts()).toEqual({ throttle: 0, 'transaction-conflict': 1, 'dynamodb-5xx': 0, 'sqs-5xx': 0 });
    });

    it('gives SQS its own codes: RequestThrottled (403), InternalFailure or ServiceUnavailable', async () => {
      const { sqs, install } = offlineClients();
      install(sqs, { rates: { throttle: 1 }, seed: 1 });
      const send = () => sqs.send(new SendMessageCommand({ QueueUrl: 'http://127.0.0.1:9/000000000000/q', MessageBody: 'b' }));

      const error = (await send().catch((caught: unknown) => caught)) as { name: string; $metadata: { httpStatusCode: number } };

      expect(error.name).toBe('RequestThrottled');
      expect(error.$metadata.httpStatusCode).toBe(403);
    });

    it('lets the SDK retry an injected throttle: three attempts, three faults, then the caller sees it', async () => {
      const { install } = offlineClients();
      const retrying = new DynamoDBClient({
        region: 'us-east-1',
        endpoint: 'http://127.0.0.1:9',
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
        maxAttempts: 3,
      });
      const injector = install(retrying, { rates: { throttle: 1 }, seed: 1 });

      const error = (await retrying.send(getItem()).catch((caught: unknown) => caught)) as { $metadata: { attempts: number } };

      expect(error.$metadata.attempts).toBe(3);
      expect(injector.injected.map((fault) => fault.attempt)).toEqual([1, 2, 3]);
      expect(injector.injected.every((fault) => fault.when === 'before')).toBe(true);
    });
  });
});
