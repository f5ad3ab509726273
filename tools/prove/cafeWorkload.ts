/**
 * The café example as a consumer under test: order streams as a producer emits them (a valid
 * path through the state machine per order), producer duplicates, malformed bodies.
 *
 * @module
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Item } from 'idempotent-consumer';
import {
  cafeConsumerOptions,
  LEDGER_SK_PREFIX,
  NOTIFICATION_SK_PREFIX,
  NOTIFY_CUSTOMER,
  notifyCustomer,
  ORDER_SK,
} from '@idempotent-consumer/example-cafe/consumer';
import { cafeTables } from '@idempotent-consumer/example-cafe/settings';
import type { CafePath, CafeWorkloadSpec, PoisonKind } from './schedule.js';
import {
  eventTime,
  inboxHomeOfOptions,
  inOrderParts,
  type InputMessage,
  itemId,
  MessageRole,
  type StoreClients,
  type StoredBusinessState,
  type Workload,
  withoutMarks,
  withoutVersion,
} from './workload.js';

const steps: Readonly<Record<CafePath, readonly { readonly type: string; readonly minute: number }[]>> = {
  placed: [{ type: 'OrderPlaced', minute: 0 }],
  paid: [
    { type: 'OrderPlaced', minute: 0 },
    { type: 'OrderPaid', minute: 1 },
  ],
  shipped: [
    { type: 'OrderPlaced', minute: 0 },
    { type: 'OrderPaid', minute: 1 },
    { type: 'OrderShipped', minute: 2 },
  ],
  delivered: [
    { type: 'OrderPlaced', minute: 0 },
    { type: 'OrderPaid', minute: 1 },
    { type: 'OrderShipped', minute: 2 },
    { type: 'OrderDelivered', minute: 3 },
  ],
  cancelled: [
    { type: 'OrderPlaced', minute: 0 },
    { type: 'OrderCancelled', minute: 4 },
  ],
  'paid-cancelled': [
    { type: 'OrderPlaced', minute: 0 },
    { type: 'OrderPaid', minute: 1 },
    { type: 'OrderCancelled', minute: 4 },
  ],
};

/** A malformed café body and the reason it must be dead-lettered with. */
export function cafePoison(
  kind: PoisonKind,
  ids: { readonly eventId: string; readonly orderId: string; readonly minute: number },
): { body: string; reason: string } {
  const { eventId, orderId } = ids;
  const occurredAt = eventTime(ids.minute);
  switch (kind) {
    case 'not-json':
      return { body: `{"eventId":"${eventId}","type":"OrderPlaced","orderId":"${orderId}"`, reason: 'ValidationError' };
    case 'array':
      return { body: JSON.stringify([{ eventId, type: 'OrderPlaced', orderId, occurredAt }]), reason: 'ValidationError' };
    case 'missing-key':
      return { body: JSON.stringify({ type: 'OrderPlaced', orderId, occurredAt }), reason: 'MissingIdempotencyKey' };
    case 'key-not-string':
      return { body: JSON.stringify({ eventId: 42, type: 'OrderPlaced', orderId, occurredAt }), reason: 'MissingIdempotencyKey' };
    case 'unknown-type':
      return { body: JSON.stringify({ eventId, type: 'OrderRefunded', orderId, occurredAt }), reason: 'UnknownMessageType' };
    case 'bad-field':
      return { body: JSON.stringify({ eventId, type: 'OrderPaid', orderId, occurredAt, points: 'ten' }), reason: 'ValidationError' };
  }
}

/**
 * The café workload of a schedule. Ids start with `prefix`, so schedules share tables.
 *
 * @param prefix - letters, digits and `-`
 */
export function cafeWorkload(spec: CafeWorkloadSpec, prefix: string): Workload {
  const messages: InputMessage[] = [];
  let next = 0;
  const id = () => `${prefix}-m${(next += 1)}`;
  const orderIds: string[] = [];

  spec.orders.forEach((order, i) => {
    const orderId = `${prefix}-O${i}`;
    orderIds.push(orderId);
    steps[order.path].forEach((step, position) => {
      const eventId = `${orderId}-e${position}`;
      if (order.poisonAt === position) {
        const poison = cafePoison(order.poisonKind ?? 'bad-field', { eventId, orderId, minute: step.minute });
        messages.push({ id: id(), body: poison.body, group: orderId, role: MessageRole.Poison, expectedReason: poison.reason });
        return;
      }
      const body = JSON.stringify({
        eventId,
        type: step.type,
        orderId,
        occurredAt: eventTime(step.minute),
        ...(step.type === 'OrderPaid' ? { points: order.points } : {}),
      });
      messages.push({ id: id(), body, group: orderId, role: MessageRole.Event, key: eventId });
      if (order.duplicates.includes(position)) messages.push({ id: id(), body, group: orderId, role: MessageRole.Duplicate, key: eventId });
    });
  });
  spec.strayPoison.forEach((kind, i) => {
    const orderId = `${prefix}-X${i}`;
    orderIds.push(orderId);
    const poison = cafePoison(kind, { eventId: `${orderId}-e0`, orderId, minute: 0 });
    messages.push({ id: id(), body: poison.body, group: orderId, role: MessageRole.Poison, expectedReason: poison.reason });
  });

  const effectRuns = new Map<string, number>();
  const counted = async (...[input, context]: Parameters<typeof notifyCustomer>) => {
    effectRuns.set(context.effectKey, (effectRuns.get(context.effectKey) ?? 0) + 1);
    return notifyCustomer(input, context);
  };
  const options = { ...cafeConsumerOptions, sideEffects: { [NOTIFY_CUSTOMER]: counted } };
  const versionAttribute = options.versionAttribute ?? '_version';
  // Each event's inbox mark is on its order (`inboxHome`): the checks read the marks there.
  const inboxHome = inboxHomeOfOptions(options as never, cafeTables, messages);

  return {
    consumer: 'cafe',
    options: options as never,
    tables: cafeTables,
    messages,
    ...inOrderParts(options as never, messages),
    ...(inboxHome === undefined ? {} : { inboxHome }),
    effectRuns,
    async readStored({ document: client }: StoreClients, tableNames: Readonly<Record<string, string>>): Promise<StoredBusinessState> {
      const items = new Map<string, Item>();
      const effectRecords = new Map<string, number>();
      for (const orderId of orderIds) {
        let startKey: Record<string, unknown> | undefined;
        do {
          const output = await client.send(
            new QueryCommand({
              TableName: tableNames.orders,
              KeyConditionExpression: 'orderId = :o',
              ExpressionAttributeValues: { ':o': orderId },
              ConsistentRead: true,
              ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
            }),
          );
          for (const item of output.Items ?? []) {
            const sk = String(item.sk);
            if (sk.startsWith(NOTIFICATION_SK_PREFIX)) {
              const effectKey = sk.slice(NOTIFICATION_SK_PREFIX.length);
              effectRecords.set(effectKey, (effectRecords.get(effectKey) ?? 0) + 1);
            } else {
              // An order without its inbox marks; a stub (an order that holds only marks) is absent.
              const business = inboxHome === undefined ? item : withoutMarks(item, inboxHome.attribute);
              if (business !== undefined) items.set(itemId(cafeTables, 'orders', item), withoutVersion(business, versionAttribute));
            }
          }
          startKey = output.LastEvaluatedKey;
        } while (startKey !== undefined);
      }
      return { items, effectRecords };
    },
    appliedTwice(stored, appliedKeys) {
      const problems: string[] = [];
      const ledger = new Map<string, { points: number; eventId: string }[]>();
      const orders: Item[] = [];
      for (const item of stored.items.values()) {
        const sk = String(item.sk);
        if (sk === ORDER_SK) orders.push(item);
        else if (sk.startsWith(LEDGER_SK_PREFIX))
          ledger.set(String(item.orderId), [
            ...(ledger.get(String(item.orderId)) ?? []),
            { points: Number(item.points), eventId: String(item.eventId) },
          ]);
      }
      for (const order of orders) {
        const history = (order.history as { eventId: string }[] | undefined) ?? [];
        const ids = history.map((entry) => entry.eventId);
        const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
        if (twice.length > 0)
          problems.push(`order ${String(order.orderId)} has event(s) ${[...new Set(twice)].join(', ')} twice in its history`);
        for (const id of ids)
          if (!appliedKeys.has(id))
            problems.push(`order ${String(order.orderId)} has ${id} in its history, but the inbox has no applied row for it`);
        const entries = ledger.get(String(order.orderId)) ?? [];
        const points = entries.reduce((sum, entry) => sum + entry.points, 0);
        if (Number(order.pointsAwarded) !== points)
          problems.push(`order ${String(order.orderId)} awarded ${String(order.pointsAwarded)} points, its ledger holds ${points}`);
      }
      for (const [orderId, entries] of ledger) {
        for (const entry of entries)
          if (!appliedKeys.has(entry.eventId))
            problems.push(`order ${orderId} has a ledger entry of ${entry.eventId}, which the inbox does not show applied`);
      }
      return problems;
    },
  };
}
