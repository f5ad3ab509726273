/**
 * The local run's exactly-once check cannot pass a lost service: a valid message dead-lettered for
 * a reason that is not its own fails it (exit 1, the reason printed), unless the run injects that
 * kind of fault on purpose; and a run that hits its time limit still prints its report and fails
 * the check with its messages unaccounted for. Each run starts its own emulators, as a user's does.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../packages/local/src/report.js';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `idempotent-consumer local …` from the sources, as `npm run cli -- local …` runs it. */
function local(args: readonly string[], timeoutMs = 240_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@idempotent-consumer/source', '--import', 'tsx', 'packages/cli/src/run.ts', 'local', ...args],
      {
        cwd: process.cwd(),
        env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new Error(`local ${args.join(' ')} did not finish in ${timeoutMs} ms:\n${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const lastJsonLine = (stdout: string): RunReport => JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as RunReport;

const fixture = 'test/integration/fixtures/sideEffectConsumer.ts';
const sideEffectConsumer = ['--handler', fixture, '--settings', fixture, '--source', 'kafka', '--partitions', '2'];

describe('the local check and dead letters that are not the message own', () => {
  let dir: string;
  let input: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-check-'));
    input = join(dir, 'events.jsonl');
    const events = [
      { id: 'e-1', kind: 'ok' },
      { id: 'e-2', kind: 'conflict' },
      { id: 'e-3', kind: 'ok' },
      { id: 'e-4', kind: 'downstream' },
      { id: 'e-5', kind: 'conflict' },
      { id: 'e-6', kind: 'ok' },
    ];
    await writeFile(input, `${[...events.map((event) => JSON.stringify(event)), '"not json"'].join('\n')}\n`);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('fails, exit 1, when valid messages are dead-lettered after a TransactionConflict their side effect kept meeting, and prints which and why', async () => {
    const result = await local([...sideEffectConsumer, '--input', input, '--json']);

    expect(result.code, result.stderr.slice(-3000)).toBe(1);
    const report = lastJsonLine(result.stdout);
    expect(report).toMatchObject({ messagesIn: 7, applied: 3, duplicates: 0, deadLettered: 4, unaccounted: 0, countsAddUp: true });
    expect(report.deadLetteredByReason).toEqual({ RetriesExhausted: 3, ValidationError: 1 });
    expect(report.check.ok).toBe(false);
    // Only the two conflicts fail it: the invalid body and the consumer's own DownstreamUnavailable are the messages' own.
    expect(report.check.problems).toEqual([
      "2 message(s) dead-lettered for a reason that is not their own — RetriesExhausted after TransactionConflict: contention or rounds of the library's batch commit, not the message's data nor the consumer's code: lines 2, 5",
    ]);
    expect(report.deadLetterCauses.map((group) => [group.verdict, group.reason, group.errorType ?? null, group.count])).toEqual([
      ['not-own', 'RetriesExhausted', 'TransactionConflict', 2],
      ['own', 'RetriesExhausted', 'DownstreamUnavailable', 1],
      ['own', 'ValidationError', null, 1],
    ]);
    // The text report (standard error with --json) shows the equation and the verdict with the reason.
    expect(result.stderr).toContain('  7 in = 3 applied + 0 duplicates + 4 dead-lettered + 0 unaccounted');
    expect(result.stderr).toMatch(/NOT THEIR OWN +2 {2}RetriesExhausted after TransactionConflict: .*; lines 2, 5/);
    expect(result.stderr).toMatch(/Exactly-once check: FAILED\n {2}- 2 message\(s\) dead-lettered for a reason that is not their own/);
  }, 300_000);

  it('excuses them when the run says it injects transaction conflicts on purpose, and says so', async () => {
    const result = await local([...sideEffectConsumer, '--input', input, '--fault', 'transaction-conflict=0.01', '--json']);

    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const report = lastJsonLine(result.stdout);
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report.injected).toEqual({ faults: { 'transaction-conflict': 0.01 } });
    // (A conflict the faults inject could, rarely, exhaust another message's retries too: excused alike.)
    const note = report.notes.find((n) => n.includes('RetriesExhausted after TransactionConflict'));
    expect(note).toMatch(
      /^excused: \d+ dead letter\(s\) not their own, produced by a fault this run injects on purpose \(--fault transaction-conflict\) — /,
    );
    expect(note?.slice(note.lastIndexOf('lines ') + 6).split(', ')).toEqual(expect.arrayContaining(['2', '5']));
    expect(result.stderr).toMatch(
      /Exactly-once check: PASSED .*\(\d+ dead letter\(s\) excused: produced by the faults this run injects on purpose\)\./,
    );
  }, 300_000);
});

describe('the local check and the run time limit', () => {
  it('a run that hits --timeout prints its report, fails the check with the messages left unaccounted for, and exits 1', async () => {
    const cafe = [
      '--handler',
      'examples/cafe/handler.ts',
      '--settings',
      'examples/cafe/settings.ts#cafeSettings',
      '--check',
      'examples/cafe/check.ts',
      '--event-time',
      'occurredAt',
    ];
    const result = await local([
      ...cafe,
      '--input',
      'examples/cafe/samples/orders.jsonl',
      '--transient-failure-rate',
      '0.05',
      '--timeout',
      '2',
      '--json',
    ]);

    expect(result.code, result.stderr.slice(-3000)).toBe(1);
    const report = lastJsonLine(result.stdout);
    expect(report.timedOut?.limitMs).toBe(2000);
    expect(report.unaccounted).toBeGreaterThan(0);
    expect(report.countsAddUp).toBe(true);
    expect(report.applied + report.duplicates + report.deadLettered + report.unaccounted).toBe(report.messagesIn);
    expect(report.check.ok).toBe(false);
    expect(report.check.problems[0]).toMatch(/^the run hit its time limit \(2 s, --timeout\) before the source drained: /);
    expect(report.check.problems).toContainEqual(
      expect.stringMatching(/^\d+ message\(s\) have no final outcome \(still in flight in the source, or lost\): lines /),
    );
    expect(result.stderr).toMatch(/Run report \(sqs, [\d.]+ s, \d+ invocations; stopped at its time limit of 2 s\)/);
    expect(result.stderr).toMatch(/ {2}510 in = \d+ applied \+ \d+ duplicates \+ \d+ dead-lettered \+ \d+ unaccounted\n/);
  }, 300_000);
});
