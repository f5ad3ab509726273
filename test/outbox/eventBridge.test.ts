/**
 * The EventBridge destination: the event it makes of an outbox message (detail with the stable id,
 * byte for byte body, detail type, size counted as AWS counts it), and its publishes through the
 * real SDK client against the local EventBridge (`startEventBridgeServer`), which enforces
 * `PutEvents`' documented rules and fails chosen entries: retryable entry failures retried in the
 * call, the others thrown at once.
 */
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxMessageError, type OutboxMessage } from '../../packages/idempotent-consumer/src/outbox/OutboxDestination.js';
import {
  eventBridgeDestination,
  eventBridgeDetail,
  eventBridgeEntry,
  MAX_PUT_EVENTS_ENTRY_BYTES,
  PutEventsEntryError,
  putEventsEntrySize,
} from '../../packages/idempotent-consumer/src/outbox/eventBridgeDestination.js';
import { outboxMessageId } from '../../packages/idempotent-consumer/src/outbox/outboxItems.js';
import { type LocalEventBridge, startEventBridgeServer } from '../../packages/local/src/aws/eventBridgeServer.js';
import { localClientConfig } from '../../packages/local/src/localClientConfig.js';

const CONSUMER = 'orders-consumer';
const traceHeader = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

const message = (key: string, overrides: Partial<OutboxMessage> = {}): OutboxMessage => ({
  messageId: outboxMessageId(CONSUMER, key, 0),
  consumer: CONSUMER,
  idempotencyKey: key,
  position: 0,
  destination: 'default',
  messageGroupId: 'O-1',
  body: JSON.stringify({ type: 'PaymentReceived', orderId: 'O-1' }),
  attributes: {},
  createdAt: '2026-03-01T10:00:00.000Z',
  ...overrides,
});

describe('the event of an outbox message', () => {
  it('puts the stable id first in the detail and keeps the body text byte for byte after it', () => {
    const sent = message('k-1', { body: '{"amount": 12345678901234567890, "z": 1, "a": "é"}' });
    expect(eventBridgeDetail(sent)).toBe(`{"outboxMessageId":"${sent.messageId}","amount": 12345678901234567890, "z": 1, "a": "é"}`);
    expect(eventBridgeDetail(message('k-2', { body: ' {} ' }))).toBe(`{"outboxMessageId":"${outboxMessageId(CONSUMER, 'k-2', 0)}"}`);
  });

  it("carries the decision's attributes as outboxAttributes, and refuses a body EventBridge cannot take", () => {
    const sent = message('k-3', { attributes: { type: 'PaymentReceived', channel: 'web' } });
    expect(JSON.parse(eventBridgeDetail(sent))).toEqual({
      outboxMessageId: sent.messageId,
      outboxAttributes: { type: 'PaymentReceived', channel: 'web' },
      type: 'PaymentReceived',
      orderId: 'O-1',
    });
    for (const body of ['plain text', '[1,2]', '"a string"', 'null', '42']) {
      expect(() => eventBridgeDetail(message('k-4', { body }))).toThrow(/EventBridge takes a JSON object as an event's Detail/);
    }
    expect(() => eventBridgeDetail(message('k-5', { body: '{"outboxMessageId":"mine"}' }))).toThrow(OutboxMessageError);
    expect(() => eventBridgeDetail(message('k-6', { body: '{"outboxAttributes":{}}' }))).toThrow(/reserved detail field outboxAttributes/);
  });

  it('takes its detail type from the type attribute, else the body, else OutboxMessage; its source from the consumer', () => {
    const entry = (overrides: Partial<OutboxMessage>) => eventBridgeEntry(message('k-7', overrides), { eventBusName: 'orders' });
    expect(entry({ attributes: { type: 'FromAttribute' } }).DetailType).toBe('FromAttribute');
    expect(entry({}).DetailType).toBe('PaymentReceived');
    expect(entry({ body: '{"kind":"x"}' }).DetailType).toBe('OutboxMessage');
    expect(entry({ traceHeader })).toMatchObject({
      EventBusName: 'orders',
      Source: CONSUMER,
      Time: new Date('2026-03-01T10:00:00.000Z'),
      TraceHeader: traceHeader,
    });
    expect(entry({ traceHeader: 'not a trace header' }).TraceHeader).toBeUndefined();
    expect(() => eventBridgeEntry(message('k-8'), { eventBusName: 'orders', source: 'aws.orders' })).toThrow(/not starting with "aws\."/);
    expect(() => eventBridgeEntry(message('k-9'), { eventBusName: 'orders', detailType: () => 'x'.repeat(129) })).toThrow(
      /1 to 128 characters/,
    );
  });

  it('counts the size as AWS documents it: 14 bytes of Time, the UTF-8 bytes of Source, DetailType, Detail and Resources', () => {
    const entry: PutEventsRequestEntry = {
      Time: new Date(),
      Source: 'src',
      DetailType: 'dé',
      Detail: '{"a":"€"}',
      Resources: ['r1', 'r22'],
      EventBusName: 'not counted',
      TraceHeader: 'not counted',
    };
    expect(putEventsEntrySize(entry)).toBe(14 + 3 + 3 + 11 + 2 + 3);
    expect(putEventsEntrySize({ Source: 'a', DetailType: 'b' })).toBe(2);
  });

  it('refuses an entry above 256 KiB before any call, and takes one of exactly 256 KiB', () => {
    const sized = (bytes: number) => {
      const probe = eventBridgeEntry(message('k-10', { body: '{"p":""}' }), { eventBusName: 'orders' });
      const padding = bytes - putEventsEntrySize(probe);
      return message('k-10', { body: `{"p":"${'x'.repeat(padding)}"}` });
    };
    expect(putEventsEntrySize(eventBridgeEntry(sized(MAX_PUT_EVENTS_ENTRY_BYTES), { eventBusName: 'orders' }))).toBe(262_144);
    expect(() => eventBridgeEntry(sized(MAX_PUT_EVENTS_ENTRY_BYTES + 1), { eventBusName: 'orders' })).toThrow(
      /makes an EventBridge entry of 262145 bytes; PutEvents takes at most 262144/,
    );
  });
});

describe('the local EventBridge and the destination through the SDK', () => {
  let eventBridge: LocalEventBridge;
  let client: EventBridgeClient;
  let busArn: string;
  beforeAll(async () => {
    eventBridge = await startEventBridgeServer();
    client = new EventBridgeClient({ ...localClientConfig(eventBridge.endpoint), maxAttempts: 1 });
    busArn = eventBridge.createEventBus('orders');
  });
  afterAll(async () => {
    client.destroy();
    await eventBridge.stop();
  });

  const entry = (overrides: Partial<PutEventsRequestEntry> = {}): PutEventsRequestEntry => ({
    EventBusName: 'orders',
    Source: 'test',
    DetailType: 'Thing',
    Detail: '{"n":1}',
    ...overrides,
  });

  it('enforces PutEvents: 1 to 10 entries, 256 KiB in total, whole-request failures as ValidationException', async () => {
    await expect(client.send(new PutEventsCommand({ Entries: Array.from({ length: 11 }, () => entry()) }))).rejects.toMatchObject({
      name: 'ValidationException',
    });
    const half = 'x'.repeat(140_000);
    await expect(
      client.send(new PutEventsCommand({ Entries: [entry({ Detail: `{"a":"${half}"}` }), entry({ Detail: `{"b":"${half}"}` })] })),
    ).rejects.toMatchObject({ name: 'ValidationException', message: expect.stringMatching(/Total size of the entries/) });
    await expect(client.send(new PutEventsCommand({ Entries: [entry({ Detail: undefined })] }))).rejects.toMatchObject({
      name: 'ValidationException',
    });
    expect(
      eventBridge
        .calls()
        .slice(-3)
        .map((call) => call.requestError),
    ).toEqual(['ValidationException', 'ValidationException', 'ValidationException']);
  });

  it('fails the entries that break a rule alone, in order, with their documented codes', async () => {
    const output = await client.send(
      new PutEventsCommand({
        Entries: [
          entry({ Detail: '{"ok":1}' }),
          entry({ Source: undefined }),
          entry({ Detail: '[1]' }),
          entry({ Detail: '{not json' }),
          entry({ Source: 'aws.orders' }),
          entry({ DetailType: 'x'.repeat(129) }),
          entry({ EventBusName: 'missing' }),
          entry({ EventBusName: 'arn:aws:events:eu-west-1:000000000000:event-bus/orders' }),
          entry({ EventBusName: busArn, Detail: '{"ok":2}' }),
        ],
      }),
    );
    expect(output.FailedEntryCount).toBe(7);
    expect(output.Entries?.map((result) => result.ErrorCode ?? 'ok')).toEqual([
      'ok',
      'InvalidArgument',
      'MalformedDetail',
      'MalformedDetail',
      'NotAuthorizedForSourceException',
      'InvalidArgument',
      'ResourceNotFoundException',
      'ResourceNotFoundException',
      'ok',
    ]);
    expect(
      eventBridge
        .events('orders')
        .slice(-2)
        .map((event) => event.detail),
    ).toEqual([{ ok: 1 }, { ok: 2 }]);
  });

  it('publishes a message as an event whose detail carries the stable id, and returns the event id', async () => {
    const destination = eventBridgeDestination({ eventBusName: busArn, client });
    const sent = message('p-1', { traceHeader, attributes: { channel: 'web' } });
    const receipt = await destination.publish(sent);
    const event = eventBridge.events(busArn).at(-1)!;
    expect(receipt.destinationMessageId).toBe(event.id);
    expect(event).toMatchObject({
      'detail-type': 'PaymentReceived',
      source: CONSUMER,
      time: '2026-03-01T10:00:00Z',
      traceHeader,
      detail: { outboxMessageId: sent.messageId, outboxAttributes: { channel: 'web' }, type: 'PaymentReceived', orderId: 'O-1' },
    });
  });

  it('sends an entry EventBridge failed with a retryable code again in the same call, and only that entry', async () => {
    const destination = eventBridgeDestination({ eventBusName: 'orders', client, retryBaseDelayMs: 1 });
    const sent = message('p-2');
    eventBridge.failEntries({ errorCode: 'ThrottlingException', times: 2, match: (e) => e.Detail?.includes(sent.messageId) ?? false });
    const before = eventBridge.calls().length;
    await destination.publish(sent);
    expect(eventBridge.calls().slice(before)).toEqual([
      { entries: 1, failed: 1 },
      { entries: 1, failed: 1 },
      { entries: 1, failed: 0 },
    ]);
    expect(eventBridge.events('orders').filter((event) => event.detail.outboxMessageId === sent.messageId)).toHaveLength(1);
  });

  it('throws PutEventsEntryError at once for a code that is not retryable, and after maxAttempts for one that is', async () => {
    const destination = eventBridgeDestination({ eventBusName: 'orders', client, maxAttempts: 2, retryBaseDelayMs: 1 });
    const denied = message('p-3');
    eventBridge.failEntries({ errorCode: 'AccessDeniedException', match: (e) => e.Detail?.includes(denied.messageId) ?? false });
    const error = await destination.publish(denied).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PutEventsEntryError);
    expect(error).toMatchObject({ errorCode: 'AccessDeniedException', attempts: 1, retryable: false, messageId: denied.messageId });

    const throttled = message('p-4');
    eventBridge.failEntries({ errorCode: 'InternalFailure', times: 5, match: (e) => e.Detail?.includes(throttled.messageId) ?? false });
    await expect(destination.publish(throttled)).rejects.toMatchObject({
      name: 'PutEventsEntryError',
      errorCode: 'InternalFailure',
      attempts: 2,
    });
    expect(eventBridge.events('orders').some((event) => event.detail.outboxMessageId === throttled.messageId)).toBe(false);

    const missing = eventBridgeDestination({ eventBusName: 'no-such-bus', client });
    await expect(missing.publish(message('p-5'))).rejects.toMatchObject({ errorCode: 'ResourceNotFoundException', attempts: 1 });
  });

  it('loads no client before the first publish, and refuses bad options at once', async () => {
    let made = 0;
    const destination = eventBridgeDestination({
      eventBusName: 'orders',
      client: () => {
        made += 1;
        return client;
      },
    });
    expect(made).toBe(0);
    await destination.publish(message('p-6'));
    await destination.publish(message('p-7'));
    expect(made).toBe(1);
    expect(() => eventBridgeDestination({ eventBusName: ' ' })).toThrow(/eventBusName is empty/);
    expect(() => eventBridgeDestination({ eventBusName: 'orders', maxAttempts: 0 })).toThrow(/maxAttempts 0/);
  });
});
