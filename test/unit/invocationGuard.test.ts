import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { DeserializeHandlerOutput, DeserializeMiddleware } from '@smithy/types';
import { describe, expect, it } from 'vitest';
import {
  createInvocationGuard,
  currentInvocationGuard,
  guardInvocations,
  InvocationStoppedError,
} from '../../packages/local/src/aws/invocationGuard.js';

/** A client whose requests never leave the process: the innermost middleware counts them and answers 200 `{}`. */
function offlineClient(maxAttempts = 1) {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts,
  });
  const sent: string[] = [];
  const server: DeserializeMiddleware<object, object> = () => async () => {
    sent.push('request');
    const body = new TextEncoder().encode('{}');
    return {
      response: { statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.0' }, body },
      output: undefined,
    } as unknown as DeserializeHandlerOutput<object>;
  };
  (client.middlewareStack as unknown as { add(middleware: unknown, options: object): void }).add(server, {
    step: 'deserialize',
    priority: 'low',
    name: 'fakeServer',
  });
  return { client, sent };
}

const get = () => new GetItemCommand({ TableName: 'table', Key: { pk: { S: 'a' } } });
const later = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('invocation guard', () => {
  it('lets an invocation call before it is killed and refuses its later calls, even from a promise it left running', async () => {
    const { client, sent } = offlineClient();
    guardInvocations(client);
    const guard = createInvocationGuard({ deadlineMs: Date.now() + 60_000 });
    let abandoned: Promise<unknown> | undefined;

    await guard.run(async () => {
      await client.send(get());
      abandoned = later().then(() => client.send(get()));
    });
    guard.kill('function timeout of 30 s');

    await expect(abandoned).rejects.toThrow(InvocationStoppedError);
    await expect(abandoned).rejects.toThrow(/function timeout of 30 s/);
    expect(sent).toHaveLength(1);
  });

  it('refuses calls once the deadline has passed, without a kill', async () => {
    const { client, sent } = offlineClient();
    guardInvocations(client);
    let now = 1_000;
    const guard = createInvocationGuard({ deadlineMs: 2_000, now: () => now });

    await guard.run(() => client.send(get()));
    now = 2_000;
    const refused = guard.run(() => client.send(get()));

    await expect(refused).rejects.toThrow(/deadline/);
    expect(guard.stopped).toBe(true);
    expect(sent).toHaveLength(1);
  });

  it('leaves calls outside any invocation, and calls of another invocation, alone', async () => {
    const { client, sent } = offlineClient();
    guardInvocations(client);
    const stopped = createInvocationGuard({ deadlineMs: Date.now() + 60_000 });
    const running = createInvocationGuard({ deadlineMs: Date.now() + 60_000 });
    stopped.kill();

    await client.send(get());
    await running.run(() => client.send(get()));

    expect(sent).toHaveLength(2);
    expect(currentInvocationGuard()).toBeUndefined();
    expect(running.run(() => currentInvocationGuard())).toBe(running);
  });

  it('refuses every later call of a client installed for one invocation, whatever context makes it', async () => {
    const { client, sent } = offlineClient();
    const guard = createInvocationGuard({ deadlineMs: Date.now() + 60_000 });
    guard.install(client);

    await client.send(get());
    guard.kill();

    await expect(client.send(get())).rejects.toThrow(InvocationStoppedError);
    expect(sent).toHaveLength(1);
  });

  it('stops a call that is retrying when the invocation is killed: no attempt after the kill', async () => {
    const client = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      maxAttempts: 5,
    });
    guardInvocations(client);
    const guard = createInvocationGuard({ deadlineMs: Date.now() + 60_000 });
    let attempts = 0;
    const throttled: DeserializeMiddleware<object, object> = () => async () => {
      attempts += 1;
      if (attempts === 1) guard.kill('function timeout');
      const body = new TextEncoder().encode('{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}');
      return {
        response: { statusCode: 400, headers: { 'content-type': 'application/x-amz-json-1.0' }, body },
        output: undefined,
      } as unknown as DeserializeHandlerOutput<object>;
    };
    (client.middlewareStack as unknown as { add(middleware: unknown, options: object): void }).add(throttled, {
      step: 'deserialize',
      priority: 'low',
      name: 'throttlingServer',
    });

    const call = guard.run(() => client.send(get()));

    await expect(call).rejects.toThrow(InvocationStoppedError);
    expect(attempts).toBe(1);
  });
});
