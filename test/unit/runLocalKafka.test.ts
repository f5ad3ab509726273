import { describe, expect, it } from 'vitest';
import { appendInput } from '../../local/kafka/runLocalKafka.js';
import { inProducerOrder } from '../../local/producerOrder.js';
import { PartitionedLog } from '../../local/kafka/PartitionedLog.js';

const event = (eventId: string, orderId: string, minute: number) =>
  JSON.stringify({ eventId, type: 'OrderPaid', orderId, occurredAt: `2026-01-01T12:${String(minute).padStart(2, '0')}:00.000Z`, points: 1 });
const lines = (...bodies: string[]) => bodies.map((body, index) => ({ line: index + 1, body }));

describe('inProducerOrder', () => {
  it("puts each order's events in the order they occurred, keeping the file's interleaving of orders", () => {
    const input = lines(event('a-2', 'A', 2), event('b-1', 'B', 1), event('a-1', 'A', 1), 'not-json', event('a-3', 'A', 3));

    const ordered = inProducerOrder(input);

    const eventIds = ordered.map((m) => (m.body.startsWith('{') ? (JSON.parse(m.body) as { eventId: string }).eventId : m.body));
    expect(eventIds).toEqual(['a-1', 'b-1', 'a-2', 'not-json', 'a-3']);
    expect(ordered.map((m) => m.line)).toEqual([3, 2, 1, 4, 5]); // every message keeps its line
  });

  it('keeps equal times (producer duplicates) and unreadable times in file order', () => {
    const input = lines(event('a-1', 'A', 1), '{"eventId":"a-x","orderId":"A"}', event('a-1', 'A', 1));
    expect(inProducerOrder(input).map((m) => m.line)).toEqual([1, 2, 3]);
  });
});

describe('appendInput', () => {
  it('keys each record by its orderId and names it <topic>-<partition>@<offset>', () => {
    const log = new PartitionedLog({ topic: 'orders', partitions: 3 });
    const sent = appendInput(log, lines(event('a-1', 'A', 1), event('a-2', 'A', 2), ''));

    const partition = log.partitionFor('A');
    expect(sent.slice(0, 2).map((m) => m.messageId)).toEqual([`orders-${partition}@0`, `orders-${partition}@1`]);
    expect(sent[2]?.body).toBe('');
    expect(log.read(partition, 0, 2).map((r) => Buffer.from(r.key!).toString())).toEqual(['A', 'A']);
  });
});
