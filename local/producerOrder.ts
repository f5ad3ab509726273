import type { InputMessage } from './inputFile.js';
import { peekIds } from '../lambda/observability/outcomes.js';

/**
 * The input as a producer that keeps per-key order would have written it (a FIFO queue's
 * message group, a Kafka partition's key): each order's events (same `orderId`) in
 * the order they occurred (`occurredAt`, stable for equal or unreadable times, which keep the
 * place of the event before them), every message keeping its line and the file's interleaving
 * of orders unchanged. Messages without an `orderId` stay where they are.
 *
 * Why: the sample file models what an SQS standard queue delivers, successors before
 * predecessors included. A FIFO message group or a Kafka partition cannot reorder one key's records, so a producer that
 * emitted a valid sequence leaves it in the log in that order. Appended literally instead, a
 * successor ahead of its predecessor blocks its partition until it is dead-lettered as
 * `RetriesExhausted`, and a second run would then apply it (its predecessor is there by then).
 */
export function inProducerOrder(input: readonly InputMessage[]): InputMessage[] {
  const byOrder = new Map<string, { message: InputMessage; at: number }[]>();
  for (const message of input) {
    const orderId = peekIds(message.body).orderId;
    if (orderId === undefined) continue;
    const events = byOrder.get(orderId) ?? [];
    const at = occurredAtOf(message.body);
    events.push({ message, at: Number.isNaN(at) ? (events[events.length - 1]?.at ?? Number.NEGATIVE_INFINITY) : at });
    byOrder.set(orderId, events);
  }
  const sorted = new Map([...byOrder].map(([orderId, events]) => [orderId, events.sort((a, b) => a.at - b.at).map((e) => e.message)]));
  const taken = new Map<string, number>();
  return input.map((message) => {
    const orderId = peekIds(message.body).orderId;
    if (orderId === undefined) return message;
    const index = taken.get(orderId) ?? 0;
    taken.set(orderId, index + 1);
    return sorted.get(orderId)?.[index] ?? message;
  });
}

function occurredAtOf(body: string): number {
  try {
    const value = (JSON.parse(body) as { occurredAt?: unknown } | null)?.occurredAt;
    return typeof value === 'string' ? Date.parse(value) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
