import { describe, expect, it, vi } from 'vitest';
import { BusinessRuleViolation, PredecessorNotApplied } from '../../../packages/idempotent-consumer/src/errors.js';
import { earlierWithKey, planRound } from '../../../packages/idempotent-consumer/src/engine/planRound.js';
import type { Decision, State } from '../../../packages/idempotent-consumer/src/types.js';
import { batch, definitionOf, planContext, putAccount, type TestEvent, unit } from './fixtures.js';

const add = (event: TestEvent, state: State): Decision => {
  const balance = Number(state.get('accounts', { id: event.account })?.balance ?? 0) + Number(event.amount ?? 1);
  return { writes: [putAccount(event.account, { balance })] };
};

describe('planRound: deciding in batch order and folding', () => {
  it('lets each unit see the item as the earlier ones left it, and writes the item once', () => {
    const units = batch([{ amount: 10 }], [{ amount: 5 }]);
    const plan = planRound(units, planContext(definitionOf(add), { A: { id: 'A', balance: 1, _version: 'v0' } }));

    expect(plan.plans.map((p) => p.unit.index)).toEqual([0, 1]);
    const [op] = [...plan.ops.values()];
    expect(op?.kind).toBe('put');
    expect(op?.current).toEqual({ id: 'A', balance: 16, _version: op?.version });
    expect(op?.authors.map((u) => u.index)).toEqual([0, 1]);
    expect(op?.base).toEqual({ exists: true, item: { id: 'A', balance: 1, _version: 'v0' }, verified: false });
  });

  it('hands decide a deep copy: a decision that mutates its state changes nothing the engine holds', () => {
    const item = { id: 'A', tags: new Set(['x']), nested: { list: [1] } };
    const decide = (event: TestEvent, state: State): Decision => {
      const account = state.get('accounts', { id: event.account })!;
      (account.tags as Set<string>).add('y');
      (account.nested as { list: number[] }).list.push(2);
      return {};
    };
    planRound(batch([{}]), planContext(definitionOf(decide), { A: item }));
    expect(item).toEqual({ id: 'A', tags: new Set(['x']), nested: { list: [1] } });
  });

  it('refuses a state.get() of an item read() did not name', () => {
    const decide = (_: TestEvent, state: State): Decision => {
      state.get('accounts', { id: 'other' });
      return {};
    };
    const units = batch([{}, { verified: true, snapshot: true }]);
    planRound(units, planContext(definitionOf(decide)));
    expect(units[0]?.verdict).toMatchObject({ kind: 'failed', failure: { errorType: 'ConsumerDefinitionError', retryable: true } });
  });

  it('fails as a definition error a decide that returns something other than a decision', () => {
    const units = batch([{}, { verified: true, snapshot: true }]);
    planRound(units, planContext(definitionOf(() => 42 as never)));
    expect(units[0]?.verdict).toMatchObject({ kind: 'failed', failure: { errorType: 'ConsumerDefinitionError' } });
  });
});

describe('planRound: a FIFO group or Kafka partition stops at its first failure, wherever it is raised (C25)', () => {
  it('does not act on a unit behind a delivery that failed before the engine', () => {
    const units = [
      unit({ key: 'k1' }, { index: 1, scope: 'group:T-1' }),
      unit({ key: 'k2', account: 'B' }, { index: 2, scope: 'group:T-2' }),
    ];
    const plan = planRound(units, planContext(definitionOf(add), {}, { stops: new Map([['group:T-1', 0]]) }));

    expect(units[0]?.verdict).toMatchObject({ kind: 'failed', failure: { errorType: 'NotAttempted', countsAsAttempt: false } });
    expect(plan.plans.map((p) => p.unit.index)).toEqual([2]);
  });

  it('does not act on a unit behind a unit that failed retryably', () => {
    const failed = unit(
      { key: 'k0' },
      {
        index: 0,
        scope: 'g',
        verdict: {
          kind: 'failed',
          failure: { retryable: true, reason: undefined, errorType: 'X', errorMessage: '', countsAsAttempt: true },
        },
      },
    );
    const later = unit({ key: 'k1', account: 'B' }, { index: 1, scope: 'g' });
    planRound([failed, later], planContext(definitionOf(add)));
    expect(later.verdict).toMatchObject({ kind: 'failed', failure: { errorType: 'NotAttempted' } });
  });

  it('fails a verified unit whose decision fails, and stops its scope; a dead letter only holds it for its marker', () => {
    const decide = (event: TestEvent): Decision => {
      if (event.fail === 'retry') throw new PredecessorNotApplied('not yet');
      if (event.fail === 'never') throw new BusinessRuleViolation('never');
      return {};
    };
    const retry = batch([{ fail: 'retry' }, { verified: true, scope: 'g' }], [{ account: 'B' }, { scope: 'g' }]);
    planRound(retry, planContext(definitionOf(decide)));
    expect(retry[0]?.verdict).toMatchObject({ kind: 'failed', failure: { errorType: 'PredecessorNotApplied', retryable: true } });
    expect(retry[1]?.verdict).toMatchObject({ failure: { errorType: 'NotAttempted' } });

    const never = batch([{ fail: 'never' }, { verified: true, snapshot: true, scope: 'g' }], [{ account: 'B' }, { scope: 'g' }]);
    const plan = planRound(never, planContext(definitionOf(decide)));
    expect(never[0]?.verdict).toMatchObject({ failure: { reason: 'BusinessRuleViolation', retryable: false } });
    expect(never[1]?.verdict).toBeUndefined();
    expect(plan.plans).toEqual([]);
  });
});

describe('planRound: reading before acting on doubt', () => {
  it('reads consistently before a retry, and takes a snapshot before a dead letter (after its inbox row alone, unless read)', () => {
    const decide = (event: TestEvent): Decision => {
      if (event.fail === 'retry') throw new PredecessorNotApplied('not yet');
      throw new BusinessRuleViolation('never');
    };
    const units = batch(
      [{ fail: 'retry' }],
      [{ account: 'B', fail: 'never' }],
      [{ account: 'C', fail: 'never' }, { verified: true }],
      [{ account: 'D', fail: 'never' }, { inboxRead: true }],
    );
    const plan = planRound(units, planContext(definitionOf(decide)));
    expect([...plan.verify].map(([u, level]) => [u.index, level])).toEqual([
      [0, 'consistent'],
      [1, 'inbox'],
      [2, 'snapshot'],
      [3, 'snapshot'],
    ]);
    expect(units.every((u) => u.verdict === undefined)).toBe(true);
  });

  it('reads every unit that waits this round with the ones that must be read (C30: one read, not one per unit)', () => {
    const decide = (event: TestEvent): Decision => ({
      sideEffects: [{ name: 'notify' }],
      writes: [putAccount(event.account, { seen: true })],
    });
    const units = Array.from({ length: 50 }, (_, i) => unit({ key: `k${i}`, account: `U${i}` }, { index: i, scope: 'partition:logins-0' }));
    const plan = planRound(units, planContext(definitionOf(decide)));
    expect(plan.verify.size).toBe(50);
    expect([...plan.verify.values()].every((level) => level === 'consistent')).toBe(true);

    for (const u of units) u.verified = true;
    const next = planRound(units, planContext(definitionOf(decide)));
    expect(next.plans).toHaveLength(50);
    expect(next.verify.size).toBe(0);
  });

  it('does not decide again on the same state after a failure (decide is pure)', () => {
    const decide = vi.fn((): Decision => {
      throw new PredecessorNotApplied('not yet');
    });
    const units = batch([{}]);
    planRound(units, planContext(definitionOf(decide)));
    units[0]!.verified = true;
    planRound(units, planContext(definitionOf(decide)));
    expect(decide).toHaveBeenCalledTimes(1);
    expect(units[0]?.verdict).toMatchObject({ failure: { errorType: 'PredecessorNotApplied' } });
  });

  it("lets a failure seen through an earlier unit's uncommitted write wait for that commit", () => {
    const decide = (event: TestEvent, state: State): Decision => {
      if (event.check === true && state.get('accounts', { id: event.account })?.frozen === true) throw new BusinessRuleViolation('frozen');
      return { writes: [putAccount(event.account, { frozen: true })] };
    };
    const units = batch([{}], [{ check: true }, { verified: true, snapshot: true }]);
    const plan = planRound(units, planContext(definitionOf(decide)));
    expect(plan.plans.map((p) => p.unit.index)).toEqual([0]);
    expect(units[1]?.verdict).toBeUndefined();
    expect(plan.verify.size).toBe(0);
  });
});

describe("planRound: side effects only on verified state that holds no other unit's uncommitted write (C26)", () => {
  const decide = (event: TestEvent, state: State): Decision => {
    const balance = Number(state.get('accounts', { id: event.account })?.balance ?? 0) + Number(event.amount);
    return { writes: [putAccount(event.account, { balance })], ...(balance >= 150 ? { sideEffects: [{ name: 'notify' }] } : {}) };
  };

  it("makes the unit wait for the earlier unit's commit instead of asking the effect on its write", () => {
    const units = batch([{ key: 'm-1', amount: 60 }, { verified: true }], [{ key: 'm-2', amount: 50 }, { verified: true }]);
    const plan = planRound(units, planContext(definitionOf(decide), { A: { id: 'A', balance: 60, _version: 'v1' } }));
    expect(plan.plans.map((p) => p.unit.idempotencyKey)).toEqual(['m-1']);
    expect(units[1]?.verdict).toBeUndefined();
    expect(plan.verify.size).toBe(0);
  });

  it('reads an unverified unit before its effect', () => {
    const units = batch([{ amount: 200 }]);
    const plan = planRound(units, planContext(definitionOf(decide)));
    expect([...plan.verify.values()]).toEqual(['consistent']);
    expect(plan.plans).toEqual([]);
  });

  it('plans a verified unit with its effect', () => {
    const units = batch([{ amount: 200 }, { verified: true }]);
    const plan = planRound(units, planContext(definitionOf(decide)));
    expect(plan.plans[0]?.sideEffects).toEqual([{ name: 'notify' }]);
  });
});

describe('planRound: deliveries of one key in one batch', () => {
  it('waits for the first delivery, then acknowledges the later one as its duplicate, or a conflict', () => {
    const units = batch([{ key: 'k' }], [{ key: 'k' }], [{ key: 'k' }, { payloadHash: 'other' }]);
    const plan = planRound(units, planContext(definitionOf(add)));
    expect(plan.plans.map((p) => p.unit.index)).toEqual([0]);
    units[0]!.verdict = { kind: 'applied' };
    planRound(units, planContext(definitionOf(add)));
    expect(units[1]?.verdict).toEqual({ kind: 'duplicate', storedPayloadHash: 'hash-k', of: 'applied' });
    expect(units[2]?.verdict).toMatchObject({ kind: 'failed', failure: { reason: 'IdempotencyConflict' } });
  });

  it('makes a copy of a dead-lettered delivery its duplicate, but not a redrive of it (C27)', () => {
    const deadLetter = {
      kind: 'failed' as const,
      failure: { retryable: false, reason: 'OutOfStock', errorType: 'OutOfStock', errorMessage: '', countsAsAttempt: true },
    };
    const [first, copy, redrive] = batch([{ key: 'k' }, { verdict: deadLetter }], [{ key: 'k' }], [{ key: 'k' }, { redriveOf: 'm-0' }]);
    expect(earlierWithKey(copy!, [first!, copy!, redrive!])).toBe(first);
    copy!.verdict = { kind: 'duplicate', storedPayloadHash: 'hash-k', of: 'dead-letter' };
    expect(earlierWithKey(redrive!, [first!, copy!, redrive!])).toBeUndefined();

    const units = batch([{ key: 'k' }, { verdict: deadLetter }], [{ key: 'k', account: 'B' }]);
    planRound(units, planContext(definitionOf(add)));
    expect(units[1]?.verdict).toEqual({ kind: 'duplicate', storedPayloadHash: 'hash-k', of: 'dead-letter' });
  });

  it('takes the stored payload hash of a delivery found a duplicate: a later copy is a duplicate of what is stored', () => {
    const found = { kind: 'duplicate' as const, storedPayloadHash: 'stored' };
    const units = batch(
      [{ key: 'k' }, { verdict: found, payloadHash: 'stored' }],
      [{ key: 'k' }, { payloadHash: 'stored' }],
      [{ key: 'k' }],
    );
    planRound(units, planContext(definitionOf(add)));
    expect(units[1]?.verdict).toEqual({ kind: 'duplicate', storedPayloadHash: 'stored', of: 'applied' });
    expect(units[2]?.verdict).toMatchObject({
      kind: 'failed',
      failure: { reason: 'IdempotencyConflict', errorMessage: expect.stringContaining('stored') },
    });
  });

  it('does not settle a later delivery by one that conflicted or must be retried', () => {
    const conflict = {
      kind: 'failed' as const,
      failure: {
        retryable: false,
        reason: 'IdempotencyConflict',
        errorType: 'IdempotencyConflict',
        errorMessage: '',
        countsAsAttempt: true,
      },
    };
    const retry = {
      kind: 'failed' as const,
      failure: { retryable: true, reason: undefined, errorType: 'X', errorMessage: '', countsAsAttempt: true },
    };
    const units = batch([{ key: 'k' }, { verdict: conflict }], [{ key: 'k' }, { verdict: retry }], [{ key: 'k' }]);
    expect(earlierWithKey(units[2]!, units)).toBeUndefined();
  });
});

describe('planRound: what cannot share a round', () => {
  it('blocks a unit behind an item another unit updates (its value is not known until the commit)', () => {
    const decide = (event: TestEvent): Decision => ({
      writes: [
        {
          Update: {
            TableName: 'accounts',
            Key: { id: event.account },
            UpdateExpression: 'ADD n :one',
            ExpressionAttributeValues: { ':one': 1 },
          },
        },
      ],
    });
    const units = batch([{}], [{}]);
    const plan = planRound(units, planContext(definitionOf(decide)));
    expect(plan.plans.map((p) => p.unit.index)).toEqual([0]);
    expect([...plan.ops.values()][0]).toMatchObject({ kind: 'update', opaque: true });
  });

  it('defers a unit that updates an item an earlier unit of the round put: they cannot be folded into one action', () => {
    const decide = (event: TestEvent, state: State): Decision =>
      event.update === true
        ? {
            writes: [
              {
                Update: {
                  TableName: 'accounts',
                  Key: { id: event.account },
                  UpdateExpression: 'ADD n :one',
                  ExpressionAttributeValues: { ':one': 1 },
                },
              },
            ],
          }
        : add(event, state);
    const units = batch([{}], [{ update: true }], [{ account: 'B' }]);
    const plan = planRound(units, planContext(definitionOf(decide)));
    expect(plan.plans.map((p) => p.unit.index)).toEqual([0, 2]);
    expect(units[1]?.verdict).toBeUndefined();
    expect(plan.verify.size).toBe(0);
  });

  it('plans a decision that returns nothing: its inbox row, and the check that what it read did not change', () => {
    const units = batch([{}]);
    const plan = planRound(units, planContext(definitionOf(() => undefined)));
    expect(plan.plans.map((p) => [p.unit.index, p.decision])).toEqual([[0, {}]]);
    expect([...plan.ops.values()].map((op) => [op.kind, op.readers.length, op.authors.length])).toEqual([['check', 1, 0]]);
  });

  it('keeps a deferred unit, and a unit of its ordering key, for the next round', () => {
    const units = batch([{}], [{ account: 'B' }], [{ account: 'B' }]);
    const plan = planRound(units, planContext(definitionOf(add), {}, { deferred: new Set([units[1]!]) }));
    expect(plan.plans.map((p) => p.unit.index)).toEqual([0]);
  });

  it('plans a solo unit alone in its chain and items, after what is already planned', () => {
    const units = batch([{}], [{}], [{ account: 'B' }], [{ account: 'B' }], [{ account: 'C' }]);
    units[1]!.solo = true;
    units[2]!.solo = true;
    const plan = planRound(units, planContext(definitionOf(add)));
    // 1 waits behind 0 (same account); 2 is planned alone, so 3 waits; 4 goes on.
    expect(plan.plans.map((p) => p.unit.index)).toEqual([0, 2, 4]);
  });

  it('fails a unit whose decision is malformed, after a consistent read', () => {
    const decide = (): Decision => ({ writes: [{ Put: { TableName: 'nope', Item: { id: 'x' } } }] });
    const units = batch([{}, { verified: true }]);
    planRound(units, planContext(definitionOf(decide)));
    expect(units[0]?.verdict).toMatchObject({ failure: { errorType: 'ConsumerDefinitionError', retryable: true } });
  });
});
