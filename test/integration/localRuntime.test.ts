/**
 * `npm start` as a user runs it: its own emulators, a report, the exactly-once check, a kept
 * `--data-dir`, and clear errors for bad input.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../local/report.js';
import { body } from '../support/sqsEvents.js';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function npmStart(args: readonly string[], timeoutMs = 240_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'local/main.ts', ...args], {
      cwd: process.cwd(),
      env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      reject(new Error(`npm start did not finish in ${timeoutMs} ms:\n${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const lastJsonLine = (stdout: string): RunReport => JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as RunReport;

describe('npm start (the local runtime)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-runtime-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('runs the bundled sample: nothing lost, nothing applied twice, every poison message dead-lettered with its reason', async () => {
    const run = await npmStart(['--json']);

    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const report = lastJsonLine(run.stdout);
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report.messagesIn).toBeGreaterThan(400);
    expect(report.applied + report.duplicates + report.deadLettered).toBe(report.messagesIn);
    expect(report.duplicates).toBeGreaterThan(0);
    expect(report.retried).toBeGreaterThan(0);
    for (const reason of ['ValidationError', 'MissingIdempotencyKey', 'UnknownMessageType', 'IdempotencyConflict', 'BusinessRuleViolation', 'RetriesExhausted']) {
      expect(report.deadLetteredByReason[reason], reason).toBeGreaterThan(0);
    }
    expect(run.stderr).toMatch(/applied \d+, duplicates \d+/); // progress while it runs
  }, 300_000);

  it('applies nothing new on a second run over the same --data-dir', async () => {
    const input = join(dir, 'orders.jsonl');
    const lines = [
      body.placed('e-1', 'O-1'),
      body.paid('e-2', 'O-1', 10),
      body.shipped('e-3', 'O-1'),
      body.placed('e-4', 'O-2'),
      body.paid('e-2', 'O-1', 10), // a producer duplicate
      body.cancelled('e-5', 'O-2'),
    ].map((b) => JSON.stringify(b));
    await writeFile(input, `${[...lines, '"not-json"'].join('\n')}\n`);
    const dataDir = join(dir, 'data');
    const args = ['--input', input, '--data-dir', dataDir, '--json', '--transient-failure-rate', '0'];

    const first = await npmStart(args);
    const second = await npmStart(args);

    expect(first.code, first.stderr.slice(-3000)).toBe(0);
    expect(second.code, second.stderr.slice(-3000)).toBe(0);
    const [a, b] = [lastJsonLine(first.stdout), lastJsonLine(second.stdout)];
    expect(a).toMatchObject({ messagesIn: 7, applied: 5, duplicates: 1, deadLettered: 1, check: { ok: true } });
    expect(b).toMatchObject({ messagesIn: 7, applied: 0, duplicates: 6, deadLettered: 1, check: { ok: true } });
    expect(b.deadLetteredByReason).toEqual({ ValidationError: 1 });
  }, 300_000);

  it.each([
    ['a file that does not exist', () => join(dir, 'missing.jsonl'), /missing\.jsonl: cannot read the input file \(no such file\)/],
    [
      'a line that is not JSON',
      async () => {
        const file = join(dir, 'bad.jsonl');
        await writeFile(file, `${JSON.stringify(body.placed('e-1', 'O-1'))}\n{not json\n`);
        return file;
      },
      /bad\.jsonl:2: the line is not JSON/,
    ],
  ])('refuses %s with a clear error and exit code 2, before sending anything', async (_what, file, message) => {
    const run = await npmStart(['--input', await file()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });

  it('FIFO: counts every dead letter of a message group, and sends each group in producer order', async () => {
    const input = join(dir, 'fifo.jsonl');
    const lines = [
      body.paid('e-2', 'G-1', 10, 1), // written before its predecessor: a FIFO producer sends it after
      body.placed('e-1', 'G-1', 0),
      body.paid('e-3', 'G-1', 'ten', 2),
      body.paid('e-4', 'G-1', 'eleven', 3),
    ].map((b) => JSON.stringify(b));
    await writeFile(input, `${lines.join('\n')}\n`);

    const run = await npmStart(['--input', input, '--fifo', '--json', '--transient-failure-rate', '0']);

    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const report = lastJsonLine(run.stdout);
    expect(report).toMatchObject({ applied: 2, deadLettered: 2, retried: 0, check: { ok: true } });
    expect(report.deadLetteredByReason).toEqual({ ValidationError: 2 });
  });

  it('refuses --source kafka with --fifo, as the stack does, with exit code 2', async () => {
    const run = await npmStart(['--source', 'kafka', '--fifo']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/standard dead-letter queue/);
  });

  it('refuses a --data-dir that is a file, with exit code 2', async () => {
    const file = join(dir, 'not-a-dir');
    await writeFile(file, 'x');
    const run = await npmStart(['--data-dir', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/is not a directory/);
  });

  it('refuses a bad flag with exit code 2', async () => {
    const run = await npmStart(['--transient-failure-rate', 'lots']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/from 0 to 1/);
  });
});
