/**
 * The proof suite with inbox marks on home items (`inboxHome`): generated consumers that all keep
 * each applied event's inbox record as a mark on a home item of their own tables (`--home always`)
 * — the head of the event's key, an item it deletes and re-creates (stubs), an item nothing writes,
 * one home shared by every key, another key's head — under seeded fault schedules, with every
 * invariant of exactly-once processing checked against what is stored: the marks on the home items
 * and the inbox rows together must give every applied event exactly one record, and the business
 * items, marks left out and stubs taken as absent, must equal the reference model's.
 */
import fc from 'fast-check';
import { payloadHash } from 'idempotent-consumer/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGeneratedConsumer } from '../../tools/prove/generated/consumer.js';
import { generatedWorkloadArbitrary } from '../../tools/prove/generated/grammar.js';
import { runGeneratedModel } from '../../tools/prove/generated/model.js';
import type { GeneratedWorkloadSpec } from '../../tools/prove/generated/spec.js';
import { checkInvariants, type Evidence, Invariant } from '../../tools/prove/invariants.js';
import { createProveSession, formatReport, type ProveSession, runProve } from '../../tools/prove/runProve.js';
import { parseSchedule, scheduleArbitrary } from '../../tools/prove/schedule.js';
import type { StoredInboxRow, StoredMark } from '../../tools/prove/storedState.js';
import { uninstallVirtualClock } from '../../tools/prove/virtualClock.js';
import { awsEndpoints } from '../support/awsEndpoints.js';

/** The run's seed: the same schedules every time. */
const SEED = 4711;
/** Random schedules per source. */
const SCHEDULES_PER_SOURCE = 8;

describe('generated consumers with an inbox home (design)', () => {
  it('--home always gives every consumer a home item per key, in its home table, that survives a replay file', () => {
    const specs = fc.sample(generatedWorkloadArbitrary('sqs', 'always'), { seed: 20_261_205, numRuns: 40 });
    const places = new Set<string>();
    for (const spec of specs) {
      const home = spec.inboxHome;
      expect(home, 'every generated consumer has an inbox home').toBeDefined();
      expect(home!.items).toHaveLength(spec.keys.length);
      for (const [k, item] of home!.items.entries()) {
        expect(spec.items[item]!.table, `key ${k}'s home is an item of the home table`).toBe(home!.table);
        places.add(item === spec.keys[k]!.head ? 'head' : spec.items[item]!.owner === k ? 'own item' : 'another key or none');
      }
    }
    // The homes vary: a key's head, another item of its own (fresh or written), an item of another key or of none.
    expect([...places].sort()).toEqual(['another key or none', 'head', 'own item']);
    expect(
      fc.sample(generatedWorkloadArbitrary('sqs', 'never'), { seed: 20_261_205, numRuns: 20 }).every((s) => s.inboxHome === undefined),
    ).toBe(true);
    const mixed = fc
      .sample(generatedWorkloadArbitrary('kafka'), { seed: 20_261_205, numRuns: 60 })
      .filter((s) => s.inboxHome !== undefined);
    expect(mixed.length).toBeGreaterThan(10);
    expect(mixed.length).toBeLessThan(50);
    const [schedule] = fc.sample(scheduleArbitrary({ source: 'fifo', workload: 'generated', inboxHome: 'always' }), {
      seed: 20_261_206,
      numRuns: 1,
    });
    const text = JSON.stringify(schedule);
    expect(JSON.stringify(parseSchedule(JSON.parse(text)))).toBe(text);
    const broken = JSON.parse(text) as { workload: GeneratedWorkloadSpec & { inboxHome: { items: number[] } } };
    broken.workload.inboxHome.items.push(0);
    expect(() => parseSchedule(broken)).toThrow(/workload\.inboxHome\.items/);
  });

  it('gives every event the outcome it is meant to have with its mark on its home item (the commit counts the home item among its items)', () => {
    // The seed of generatedModel.test.ts's check: the same consumers, each with an inbox home.
    const specs = fc.sample(generatedWorkloadArbitrary('sqs', 'always'), { seed: 20_261_203, numRuns: 40 });
    const steps = specs.flatMap((spec) => spec.keys.flatMap((key) => key.steps));
    // Commits at the limit of 100 actions: one over it (tooManyActions), exactly at it (an apply padded with outgoing messages).
    expect(steps.filter((step) => step.intent === 'tooManyActions').length).toBeGreaterThan(0);
    expect(steps.filter((step) => step.intent === 'apply' && step.outbox.length > 80).length).toBeGreaterThan(0);
    const failures: Record<string, RegExp> = {
      apply: /^applied$/,
      reject: /^dead:(?!RetriesExhausted)/,
      wait: /^dead:RetriesExhausted$/,
      readThrow: /^dead:/,
      conditionFails: /^dead:ConditionalWriteFailed$/,
      badValue: /^dead:RetriesExhausted$/,
      badOutbox: /^dead:RetriesExhausted$/,
      tooLarge: /^dead:InvalidWrite$/,
      tooManyActions: /^dead:InvalidWrite$/,
    };
    for (const spec of specs) {
      const consumer = buildGeneratedConsumer(spec, 'p', 3);
      expect(consumer.options.inboxHome?.table).toBe(spec.tables[spec.inboxHome!.table]!.name);
      const verdicts = runGeneratedModel(spec, consumer, 'sqs').verdicts;
      spec.keys.forEach((key, k) =>
        key.steps.forEach((step, s) => {
          if (step.poison !== undefined) return;
          const verdict = verdicts.get(consumer.eventId(k, s))!;
          const text = verdict.kind === 'applied' ? 'applied' : `dead:${verdict.reason}`;
          expect(text, `${consumer.eventId(k, s)} meant to ${step.intent}`).toMatch(failures[step.intent]!);
        }),
      );
    }
  });
});

describe('the inbox-record invariant', () => {
  const now = Date.UTC(2026, 0, 1);
  const body = JSON.stringify({ id: 'e1', n: 1 });
  const good: StoredMark = {
    status: 'applied',
    messageId: 'm1',
    payloadHash: payloadHash(JSON.parse(body)),
    expiresAt: now / 1000 + 3600,
    reason: undefined,
  };
  /** The evidence of one event `e1` (message `m1`, home `H`) that applies, with these marks and rows. */
  const evidence = (
    marks: Readonly<Record<string, Readonly<Record<string, StoredMark>>>>,
    rows: Readonly<Record<string, StoredInboxRow>> = {},
    problems: Readonly<Record<string, string>> = {},
  ): Evidence => ({
    workload: { appliedTwice: () => [] } as unknown as Evidence['workload'],
    model: { outcomes: new Map([['e1', { kind: 'applied' }]]), items: new Map(), outbox: new Map(), sideEffects: new Map() },
    sent: [{ sourceId: 'm1', input: { id: 'm1', body, group: 'g', role: 'event', key: 'e1' }, redriven: false }],
    inbox: new Map(Object.entries(rows)),
    marks: {
      byHome: new Map(Object.entries(marks).map(([home, entries]) => [home, new Map(Object.entries(entries))])),
      stubs: new Set(),
      problems: new Map(Object.entries(problems)),
      homeOf: (key) => (key === 'e1' ? 'H' : undefined),
      nowMs: now,
      inboxTtlSeconds: 30 * 24 * 3600,
    },
    outbox: new Map(),
    business: { items: new Map(), effectRecords: new Map() },
    deadLetters: [],
    policyMoves: [],
    gaveUp: [],
    remaining: 0,
    possibleAttempts: new Map(),
    excused: () => false,
    crashes: () => 0,
    maxAttempts: 3,
  });
  const found = (e: Evidence) => checkInvariants(e).map((v) => `${v.invariant}: ${v.detail}`);

  it('takes an applied mark on its home item as the one record of its key', () => {
    expect(found(evidence({ H: { e1: good } }))).toEqual([]);
  });

  it('reports a mark that is not on its home, two applied records, a wrong hash, message id or expiry, a dead-lettered mark without its row', () => {
    expect(found(evidence({ G: { e1: good } }))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^inbox-record: the mark of e1 on G is not on its key's home item \(H\)/),
        expect.stringMatching(/^one-outcome: message m1 .* was lost/),
      ]),
    );
    const row: StoredInboxRow = { status: 'applied', messageId: 'm1', payloadHash: good.payloadHash };
    expect(found(evidence({ H: { e1: good } }, { e1: row }))).toEqual([
      expect.stringMatching(/^inbox-record: e1 has two records of being applied: .* and it was never redriven/),
    ]);
    expect(found(evidence({ H: { e1: { ...good, payloadHash: 'f00' } } }))).toEqual([
      expect.stringMatching(/^inbox-record: the mark of e1 on H carries payload hash f00/),
    ]);
    expect(found(evidence({ H: { e1: { ...good, messageId: 'm9' } } }))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^inbox-record: the mark of e1 on H names message m9, which is no message of it/),
        expect.stringMatching(/^one-outcome: key e1 was applied by m9, which is no message of it/),
      ]),
    );
    expect(found(evidence({ H: { e1: { ...good, expiresAt: now / 1000 - 1 } } }))).toEqual([
      expect.stringMatching(/^inbox-record: the mark of e1 on H expires at .*, not within the inbox window/),
    ]);
    const deadLetter: StoredMark = { ...good, status: 'dead-lettered', reason: 'Rule' };
    expect(found(evidence({ H: { e1: deadLetter } })).filter((line) => line.startsWith(Invariant.inboxRecord))).toEqual([
      expect.stringMatching(/is dead-lettered, but the key has no inbox row/),
    ]);
    expect(
      found(evidence({ H: { e1: good } }, {}, { H: 'it is flagged a stub (absent to decide) but holds attributes of its own: a' })),
    ).toEqual(['inbox-record: home item H: it is flagged a stub (absent to decide) but holds attributes of its own: a']);
  });
});

describe('exactly-once with inbox marks on home items (--home always)', () => {
  let session: ProveSession;
  beforeAll(() => {
    session = createProveSession(awsEndpoints());
  });
  afterAll(async () => {
    await session?.dispose();
    uninstallVirtualClock();
  });

  it('every invariant holds, and applied events are recorded by marks on their home items, not inbox rows', async () => {
    const report = await runProve(session, {
      schedules: SCHEDULES_PER_SOURCE * 3,
      seed: SEED,
      sources: ['sqs', 'fifo', 'kafka'],
      workload: 'generated',
      inboxHome: 'always',
      // Targeted schedules drive the café (no inbox home): not this test's subject.
      coverKillPoints: false,
      shrinkSeconds: 0,
      log: () => undefined,
    });
    console.info(formatReport(report));
    const failures = report.failures.map(
      (failure) => `${failure.invariant}: ${failure.violations[0]?.detail ?? ''}\n  replay: ${JSON.stringify(failure.replay)}`,
    );
    expect(failures, "violations (replay each with npm run prove -- --replay '<json>')").toEqual([]);
    expect(report.violations).toBe(0);
    expect(report.totals.homeSchedules).toBe(report.schedules);
    expect(report.totals.homeMarks).toBeGreaterThan(0);
    // An applied event's inbox row is written only by a redrive (beside its mark).
    expect(report.totals.homeAppliedRows).toBe(0);
    expect(report.totals.homeStubs).toBeGreaterThan(0);
  }, 300_000);
});
