import { describe, expect, it } from 'vitest';
import {
  actionBytes,
  componentsOf,
  MAX_TRANSACTION_BYTES,
  packTransactions,
  type ActionBuilder,
} from '../../../packages/idempotent-consumer/src/engine/packTransactions.js';
import { planRound } from '../../../packages/idempotent-consumer/src/engine/planRound.js';
import { inboxAction, itemAction, outboxActions } from '../../../packages/idempotent-consumer/src/engine/transactionActions.js';
import type { Decision, State } from '../../../packages/idempotent-consumer/src/types.js';
import { batch, definitionOf, planContext, putAccount, type TestEvent, unit } from './fixtures.js';

const config = { inboxTable: 'inbox', consumerName: 'c', inboxTtlSeconds: 60 };
const at = new Date(0);
const definition = definitionOf((event: TestEvent, state: State): Decision => {
  const n = Number(state.get('accounts', { id: event.account })?.n ?? 0) + 1;
  return {
    writes: [putAccount(event.account, { n, pad: 'x'.repeat(Number(event.pad ?? 0)) })],
    outbox: Array.from({ length: Number(event.outbox ?? 0) }, (_, i) => ({ body: `m${i}` })),
  };
});
const builder: ActionBuilder = {
  unitActions: (p) => [
    { action: inboxAction(p.unit, config, at), role: { role: 'inbox', unit: p.unit } },
    ...outboxActions(p.unit, p.outbox, config, at).map((action) => ({ action, role: { role: 'outbox' as const, unit: p.unit } })),
  ],
  itemAction: (op) => itemAction(op, definition),
};

describe('packTransactions', () => {
  it('commits a batch of independent units in one transaction', () => {
    const units = batch([{ account: 'A' }], [{ account: 'B' }], [{ account: 'C' }]);
    const packing = packTransactions(planRound(units, planContext(definition)), builder);
    expect(packing.transactions).toHaveLength(1);
    expect(packing.transactions[0]?.actions).toHaveLength(6);
    expect(packing.transactions[0]?.roles.map((r) => r.role)).toEqual(['inbox', 'item', 'inbox', 'item', 'inbox', 'item']);
    expect(packing.deferred.size).toBe(0);
  });

  it('writes a folded item once, in the transaction of the units that fold it', () => {
    const units = batch([{}], [{}], [{}]);
    const packing = packTransactions(planRound(units, planContext(definition)), builder);
    expect(packing.transactions[0]?.roles.map((r) => r.role)).toEqual(['inbox', 'item', 'inbox', 'inbox']);
  });

  it('defers the units of a component that do not fit, never fails them (C29)', () => {
    const units = Array.from({ length: 10 }, (_, i) =>
      unit({ key: `k${i}`, account: `A${i}`, outbox: 98 }, { index: i, scope: 'group:g' }),
    );
    const packing = packTransactions(planRound(units, planContext(definition)), builder);
    expect(packing.transactions).toHaveLength(1);
    expect(packing.transactions[0]?.units.map((u) => u.index)).toEqual([0]);
    expect([...packing.deferred].map((u) => u.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(packing.tooLarge.size).toBe(0);
  });

  it('gives each component a transaction of its own when told not to share (under contention)', () => {
    const units = batch([{ account: 'A' }], [{ account: 'B' }], [{ account: 'A' }], [{ account: 'C' }]);
    const packing = packTransactions(planRound(units, planContext(definition)), builder, { shareComponents: false });
    expect(packing.transactions.map((t) => t.units.map((u) => u.index))).toEqual([[0, 2], [1], [3]]);
  });

  it('shares a transaction among components while it fits, then opens another', () => {
    const units = Array.from({ length: 3 }, (_, i) => unit({ key: `k${i}`, account: `A${i}`, outbox: 40 }, { index: i }));
    const packing = packTransactions(planRound(units, planContext(definition)), builder);
    expect(packing.transactions.map((t) => t.units.map((u) => u.index))).toEqual([[0, 1], [2]]);
  });

  it('fails a unit whose commit alone exceeds 4 MB', () => {
    const reads = [
      { table: 'accounts', key: { id: 'A' } },
      ...Array.from({ length: 11 }, (_, j) => ({ table: 'accounts', key: { id: `R${j}` } })),
    ];
    const only = unit({ key: 'big', account: 'A' }, { index: 0, reads });
    // Each of its 12 items written at 390 KB: 4.7 MB in all.
    const big = {
      ...builder,
      itemAction: (op: Parameters<ActionBuilder['itemAction']>[0]) => ({
        Put: { TableName: 't', Item: { id: op.key.key.id, pad: 'x'.repeat(390_000) } },
      }),
    };
    const packing = packTransactions(planRound([only], planContext(definition)), big);
    expect(packing.tooLarge.get(only)?.message).toMatch(
      /its commit needs 13 actions and about \d+ bytes, more than one DynamoDB transaction takes/,
    );
    expect(packing.transactions).toHaveLength(0);
    expect(MAX_TRANSACTION_BYTES).toBe(3_800_000);
  });

  it('gives a solo unit a transaction of its own', () => {
    const units = batch([{ account: 'A' }], [{ account: 'B' }], [{ account: 'C' }]);
    units[1]!.solo = true;
    const packing = packTransactions(planRound(units, planContext(definition)), builder);
    expect(packing.transactions.map((t) => t.units.map((u) => u.index))).toEqual([[0, 2], [1]]);
  });

  it('links units by item, ordering key and scope', () => {
    const units = batch([{ account: 'A' }, { scope: 's' }], [{ account: 'B' }, { scope: 's' }], [{ account: 'C' }], [{ account: 'C' }]);
    const plan = planRound(units, planContext(definition));
    expect(componentsOf(plan.plans).map((members) => members.map((p) => p.unit.index))).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it('joins two components a later unit links, keeping batch order', () => {
    const bridge = unit(
      { key: 'k2', account: 'C' },
      {
        index: 2,
        reads: [
          { table: 'accounts', key: { id: 'A' } },
          { table: 'accounts', key: { id: 'B' } },
        ],
      },
    );
    const units = [unit({ key: 'k0', account: 'A' }, { index: 0 }), unit({ key: 'k1', account: 'B' }, { index: 1 }), bridge];
    // k2 reads A and B, which k0 and k1 write: the three commit together, in batch order.
    const plan = planRound(
      units,
      planContext(definitionOf((event: TestEvent): Decision => ({ writes: [putAccount(event.account, { n: 1 })] }))),
    );
    expect(plan.plans.map((p) => p.unit.index)).toEqual([0, 1, 2]);
    expect(componentsOf(plan.plans).map((members) => members.map((p) => p.unit.index))).toEqual([[0, 1, 2]]);
  });

  it('sends no action for an item the builder has nothing to send for', () => {
    const units = batch([{ account: 'A' }], [{ account: 'B' }]);
    const reading = definitionOf(() => ({}));
    const packing = packTransactions(planRound(units, planContext(reading)), {
      ...builder,
      itemAction: (op) => (op.kind === 'check' ? undefined : itemAction(op, reading)),
    });
    expect(packing.transactions[0]?.roles.map((r) => r.role)).toEqual(['inbox', 'inbox']);
  });

  it('measures an action by its items, keys and values', () => {
    expect(actionBytes({ Put: { TableName: 't', Item: { id: 'abc' } } })).toBe(5);
    expect(
      actionBytes({
        Update: { TableName: 't', Key: { id: 'a' }, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': 12 } },
      }),
    ).toBe(3 + 2 + 2);
    expect(actionBytes({} as never)).toBe(0);
  });
});
