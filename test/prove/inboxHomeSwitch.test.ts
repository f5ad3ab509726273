/**
 * The proof suite with a deploy that switches `inboxHome` mid-schedule (`--switch`): generated
 * consumers run with inbox rows, then with `inboxHome` and `inboxHome.rowsUntil` an inbox window
 * ahead ("on"), or from that to `inboxHome` with `marks: false` ("off"), the execution environments created before the
 * deploy running the old options for a few more invocations (docs/inbox-home.md, "Turning it on
 * or off"). Every applied event is delivered again under the new options at the end: with
 * `rowsUntil`, no invariant breaks; without it (turning it on, the negative control), a
 * redelivery of an event applied with rows is taken for a new event, and the invariants say so.
 */
import fc from 'fast-check';
import { payloadHash } from 'idempotent-consumer/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkInvariants, type Evidence, type RecordShape } from '../../tools/prove/invariants.js';
import { createProveSession, formatReport, type ProveSession, runProve } from '../../tools/prove/runProve.js';
import { parseSchedule, scheduleArbitrary } from '../../tools/prove/schedule.js';
import type { StoredInboxRow, StoredMark } from '../../tools/prove/storedState.js';
import { uninstallVirtualClock } from '../../tools/prove/virtualClock.js';
import { MessageRole } from '../../tools/prove/workload.js';
import { awsEndpoints } from '../support/awsEndpoints.js';

describe('a deploy that switches inboxHome (schedules and the inbox-record invariant)', () => {
  it('draws a switch only with --switch, and a replay file keeps it', () => {
    const plain = fc.sample(scheduleArbitrary({ source: 'fifo', workload: 'generated', inboxHome: 'always' }), { seed: 5, numRuns: 5 });
    expect(plain.every((schedule) => schedule.homeSwitch === undefined)).toBe(true);
    const switched = fc.sample(scheduleArbitrary({ source: 'fifo', workload: 'generated', inboxHome: 'always', homeSwitch: 'mixed' }), {
      seed: 5,
      numRuns: 20,
    });
    // Without a switch a run draws what it drew before switches existed.
    expect(switched.slice(0, 5).map(({ homeSwitch: _s, ...rest }) => rest)).toEqual(plain);
    expect(new Set(switched.map((schedule) => schedule.homeSwitch!.direction))).toEqual(new Set(['on', 'off']));
    const text = JSON.stringify(switched[0]);
    expect(JSON.stringify(parseSchedule(JSON.parse(text)))).toBe(text);
    expect(() => parseSchedule({ ...JSON.parse(text), homeSwitch: { direction: 'sideways', at: 0, overlap: 0 } })).toThrow(
      /homeSwitch\.direction/,
    );
  });

  const now = 1_800_000_000_000;
  const hash = 'a'.repeat(64);
  const body = '{"id":"e1"}';
  const good: StoredMark = { status: 'applied', messageId: 'm1', payloadHash: hash, expiresAt: now / 1000 + 3600, reason: undefined };
  const row: StoredInboxRow = { status: 'applied', messageId: 'm1', payloadHash: hash };
  const evidence = (marks: Record<string, StoredMark>, rows: Record<string, StoredInboxRow>, shapes: readonly RecordShape[]): Evidence => ({
    workload: { appliedTwice: () => [] } as never,
    model: { outcomes: new Map([['e1', { kind: 'applied' }]]), items: new Map(), outbox: new Map(), sideEffects: new Map() },
    sent: [{ sourceId: 'm1', input: { id: 'm1', body, group: 'g', role: MessageRole.Event, key: 'e1' }, redriven: false }],
    inbox: new Map(Object.entries(rows)),
    marks: {
      byHome: new Map([['H', new Map(Object.entries(marks))]]),
      stubs: new Set(),
      problems: new Map(),
      homeOf: (key) => (key === 'e1' ? 'H' : undefined),
      nowMs: now,
      inboxTtlSeconds: 30 * 24 * 3600,
      switched: { allowed: () => ({ shapes: new Set(shapes), under: 'the options of the test' }) },
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

  it('takes a row and an agreeing mark (rowsUntil), or a row alone (rows), as the records of the options in force', () => {
    expect(
      found(evidence({ e1: { ...good, payloadHash: hashOf(body) } }, { e1: { ...row, payloadHash: hashOf(body) } }, ['both'])),
    ).toEqual([]);
    expect(found(evidence({}, { e1: { ...row, payloadHash: hashOf(body) } }, ['row', 'both']))).toEqual([]);
  });

  it('reports records the options in force do not write, and a row and a mark that disagree', () => {
    const h = hashOf(body);
    expect(found(evidence({}, { e1: { ...row, payloadHash: h } }, ['both']))).toEqual([
      expect.stringMatching(
        /^inbox-record: e1 \(applied under the options of the test\) has an applied row and no applied mark; those options write both/,
      ),
    ]);
    expect(found(evidence({ e1: { ...good, payloadHash: h } }, {}, ['row']))).toEqual([
      expect.stringMatching(/^inbox-record: e1 .* has an applied mark and no applied row; those options write row/),
    ]);
    expect(
      found(evidence({ e1: { ...good, payloadHash: h } }, { e1: { ...row, payloadHash: h, messageId: 'm2' } }, ['both'])).filter((line) =>
        line.startsWith('inbox-record'),
      ),
    ).toEqual([expect.stringMatching(/^inbox-record: e1 has two records of being applied that disagree/)]);
  });
});

function hashOf(text: string): string {
  return payloadHash(JSON.parse(text));
}

describe('exactly-once across a deploy that switches inboxHome (--switch)', () => {
  let session: ProveSession;
  beforeAll(() => {
    session = createProveSession(awsEndpoints());
  });
  afterAll(async () => {
    await session?.dispose();
    uninstallVirtualClock();
  });

  it('on and off with rowsUntil: every invariant holds, and redeliveries of events applied before the switch cross it', async () => {
    const report = await runProve(session, {
      schedules: 6,
      seed: 11,
      sources: ['sqs', 'fifo', 'kafka'],
      workload: 'generated',
      inboxHome: 'always',
      homeSwitch: 'mixed',
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
    expect(report.totals.switchedSchedules).toBeGreaterThan(0);
    expect(report.totals.switchedOff).toBeGreaterThan(0);
    expect(report.totals.switchedSchedules - report.totals.switchedOff).toBeGreaterThan(0);
    expect(report.totals.switchReplayCrossings).toBeGreaterThan(0);
  }, 180_000);

  it('on without rowsUntil (negative control): a redelivery of an event applied with rows is applied again, and the invariants catch it', async () => {
    const report = await runProve(session, {
      // Seeded so that keys applied with rows are delivered again to the consumer with marks alone.
      schedules: 4,
      seed: 3,
      sources: ['sqs'],
      workload: 'generated',
      inboxHome: 'always',
      homeSwitch: 'on-without-rows-until',
      coverKillPoints: false,
      shrinkSeconds: 0,
      log: () => undefined,
    });
    console.info(formatReport(report));
    expect(report.totals.switchedSchedules).toBeGreaterThan(0);
    expect(report.violations).toBeGreaterThan(0);
    expect(report.byInvariant['replay-unchanged']).toBeGreaterThan(0);
  }, 180_000);
});
