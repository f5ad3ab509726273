import { describe, expect, it } from 'vitest';
import { parseOrderEvent } from '../domain/events.js';
import { body } from './bodies.js';

describe('parseOrderEvent (the café events)', () => {
  it('accepts each of the five event types', () => {
    const bodies = [
      body.placed('e-1', 'O-1'),
      body.paid('e-2', 'O-1', 10),
      body.shipped('e-3', 'O-1'),
      body.delivered('e-4', 'O-1'),
      body.cancelled('e-5', 'O-1'),
    ];
    expect(bodies.map((b) => parseOrderEvent(b).type)).toEqual([
      'OrderPlaced',
      'OrderPaid',
      'OrderShipped',
      'OrderDelivered',
      'OrderCancelled',
    ]);
  });

  it('keeps unknown fields out of the event', () => {
    expect(parseOrderEvent({ ...body.placed('e-1', 'O-1'), extra: { deep: [1, 2] } })).not.toHaveProperty('extra');
  });

  it.each([
    ['an unknown type', { eventId: 'e-1', type: 'OrderRefunded', orderId: 'O-1' }, 'UnknownMessageType', /OrderRefunded/],
    ['a type that is not a string', { eventId: 'e-1', type: 42, orderId: 'O-1' }, 'UnknownMessageType', /42/],
    ['points that are a string (case C7)', body.paid('e-1', 'O-1', 'ten'), 'ValidationError', /points/],
    ['negative points', body.paid('e-1', 'O-1', -1), 'ValidationError', /points/],
    ['fractional points', body.paid('e-1', 'O-1', 1.5), 'ValidationError', /points/],
    ['a bad occurredAt', { ...body.placed('e-1', 'O-1'), occurredAt: 'yesterday' }, 'ValidationError', /occurredAt/],
    ['no orderId', { eventId: 'e-1', type: 'OrderPlaced', occurredAt: '2026-01-01T00:00:00Z' }, 'ValidationError', /orderId/],
    ['an orderId longer than 256 characters', body.placed('e-1', 'O'.repeat(257)), 'ValidationError', /orderId/],
  ])('rejects %s with %s', (_what, input, reason, message) => {
    expect(() => parseOrderEvent(input)).toThrow(expect.objectContaining({ reason, message: expect.stringMatching(message) }));
  });

  it('never puts free text from the body in the error (an unknown type that looks like an e-mail address)', () => {
    expect(() => parseOrderEvent({ eventId: 'e', type: 'alice@example.com', orderId: 'O' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('alice') }),
    );
  });
});
