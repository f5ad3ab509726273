import type { InputMessage } from './inputFile.js';

/**
 * The input as a producer that keeps per-key order would have written it (a FIFO queue's
 * message group, a Kafka partition's key): the messages of one key in the order of their event
 * time (stable for equal or unknown times, which keep the place of the message before them),
 * every message keeping its line, and the file's interleaving of keys unchanged. Messages without
 * a key stay where they are.
 *
 * Why: a sample file may model what a standard queue delivers, successors before predecessors
 * included. A FIFO message group or a Kafka partition cannot reorder one key's records, so a
 * producer that emitted a valid sequence leaves it in that order. Appended literally instead, a
 * successor ahead of its predecessor blocks its group until it is dead-lettered.
 *
 * @param keyOf - the message's ordering key (the consumer's), `undefined` when it has none
 * @param timeOf - the message's event time (any comparable number, e.g. epoch milliseconds), `undefined` when unknown
 */
export function inProducerOrder(
  input: readonly InputMessage[],
  keyOf: (message: InputMessage) => string | undefined,
  timeOf: (message: InputMessage) => number | undefined,
): InputMessage[] {
  const byKey = new Map<string, { message: InputMessage; at: number }[]>();
  const keys = input.map(keyOf);
  input.forEach((message, index) => {
    const key = keys[index];
    if (key === undefined) return;
    const messages = byKey.get(key) ?? [];
    const at = timeOf(message);
    messages.push({ message, at: at === undefined || Number.isNaN(at) ? (messages.at(-1)?.at ?? Number.NEGATIVE_INFINITY) : at });
    byKey.set(key, messages);
  });
  const sorted = new Map([...byKey].map(([key, messages]) => [key, messages.sort((a, b) => a.at - b.at).map((m) => m.message)]));
  const taken = new Map<string, number>();
  return input.map((message, index) => {
    const key = keys[index];
    if (key === undefined) return message;
    const position = taken.get(key) ?? 0;
    taken.set(key, position + 1);
    return sorted.get(key)?.[position] ?? message;
  });
}

/**
 * An event-time reader for {@link inProducerOrder}: the top-level JSON field `field` of a body,
 * read as an ISO 8601 date or a number; `undefined` when the body is not JSON or has no such field.
 */
export function eventTimeField(field: string): (message: InputMessage) => number | undefined {
  return (message) => {
    try {
      const value = (JSON.parse(message.body) as Record<string, unknown> | null)?.[field];
      if (typeof value === 'number') return value;
      if (typeof value === 'string') {
        const at = Date.parse(value);
        return Number.isNaN(at) ? undefined : at;
      }
    } catch {
      // not JSON: no time
    }
    return undefined;
  };
}
