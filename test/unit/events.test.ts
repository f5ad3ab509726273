import { describe, expect, it } from 'vitest';
import { parseOrderEvent, payloadHash } from '../../lambda/domain/events.js';
import { body } from '../support/sqsEvents.js';

describe('parseOrderEvent', () => {
  it('accepts each of the five event types', () => {
    const bodies = [
      body.placed('e-1', 'O-1'),
      body.paid('e-2', 'O-1', 10),
      body.shipped('e-3', 'O-1'),
      body.delivered('e-4', 'O-1'),
      body.cancelled('e-5', 'O-1'),
    ];
    const types = bodies.map((b) => parseOrderEvent(JSON.stringify(b)).event.type);
    expect(types).toEqual(['OrderPlaced', 'OrderPaid', 'OrderShipped', 'OrderDelivered', 'OrderCancelled']);
  });

  it.each([
    ['an empty body', '', 'ValidationError', /empty/],
    ['a body that is not JSON', 'not-json', 'ValidationError', /not JSON/],
    ['a JSON array', '[1,2]', 'ValidationError', /array/],
    ['a JSON string', '"hello"', 'ValidationError', /object/],
    ['no eventId', JSON.stringify({ type: 'OrderPlaced', orderId: 'O-1', occurredAt: '2026-01-01T00:00:00Z' }), 'MissingIdempotencyKey', /eventId/],
    ['an empty eventId', JSON.stringify({ eventId: ' ', type: 'OrderPlaced', orderId: 'O-1' }), 'MissingIdempotencyKey', /eventId/],
    ['an unknown type', JSON.stringify({ eventId: 'e-1', type: 'OrderRefunded', orderId: 'O-1' }), 'UnknownMessageType', /OrderRefunded/],
    ['points that are a string (case C7)', JSON.stringify(body.paid('e-1', 'O-1', 'ten')), 'ValidationError', /points/],
    ['negative points', JSON.stringify(body.paid('e-1', 'O-1', -1)), 'ValidationError', /points/],
    ['fractional points', JSON.stringify(body.paid('e-1', 'O-1', 1.5)), 'ValidationError', /points/],
    ['a bad occurredAt', JSON.stringify({ ...body.placed('e-1', 'O-1'), occurredAt: 'yesterday' }), 'ValidationError', /occurredAt/],
    ['no orderId', JSON.stringify({ eventId: 'e-1', type: 'OrderPlaced', occurredAt: '2026-01-01T00:00:00Z' }), 'ValidationError', /orderId/],
  ])('rejects %s with %s', (_what, input, name, message) => {
    expect(() => parseOrderEvent(input)).toThrow(expect.objectContaining({ name, message: expect.stringMatching(message) }));
  });

  it('gives the same payload hash whatever the key order and white space', () => {
    const a = parseOrderEvent('{"eventId":"e-1","type":"OrderPaid","orderId":"O-1","occurredAt":"2026-01-01T00:00:00Z","points":10}');
    const b = parseOrderEvent('{ "points": 10, "orderId": "O-1", "occurredAt": "2026-01-01T00:00:00Z", "type": "OrderPaid", "eventId": "e-1" }');
    expect(a.payloadHash).toBe(b.payloadHash);
  });

  it('gives a different payload hash when a value differs', () => {
    const a = parseOrderEvent(JSON.stringify(body.paid('e-1', 'O-1', 10)));
    const b = parseOrderEvent(JSON.stringify(body.paid('e-1', 'O-1', 11)));
    expect(a.payloadHash).not.toBe(b.payloadHash);
  });
});

describe('payloadHash', () => {
  it('hashes nested objects canonically', () => {
    expect(payloadHash({ b: [1, { d: 1, c: 2 }], a: null })).toBe(payloadHash({ a: null, b: [1, { c: 2, d: 1 }] }));
    expect(payloadHash({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });
});
