/**
 * The local runtime's stream sources as a user runs them: `idempotent-consumer local --source
 * kinesis` and `--source dynamodb-streams` (an in-process shard log with the stream mappings'
 * semantics) on the café sample and on the inventory example, each passing the exactly-once check.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { RunReport } from '../../packages/local/src/report.js';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `idempotent-consumer local …` from the sources, as `npm run cli -- local …` runs it. */
function local(args: readonly string[], timeoutMs = 400_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@idempotent-consumer/source', '--import', 'tsx', 'packages/cli/src/run.ts', 'local', ...args],
      { cwd: process.cwd(), env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' }, stdio: ['ignore', 'pipe', 'pipe'] },
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
      reject(new Error(`${args.join(' ')} did not finish in ${timeoutMs} ms:\n${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const lastJsonLine = (stdout: string): RunReport => JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as RunReport;

const cafe = [
  '--handler',
  'examples/cafe/handler.ts',
  '--settings',
  'examples/cafe/settings.ts#cafeSettings',
  '--check',
  'examples/cafe/check.ts',
  '--input',
  'examples/cafe/samples/orders.jsonl',
  '--event-time',
  'occurredAt',
  '--transient-failure-rate',
  '0.05',
];

describe('idempotent-consumer local --source kinesis | dynamodb-streams', () => {
  it.each([['kinesis'], ['dynamodb-streams']])(
    'runs the café sample through %s: every message applied once, a duplicate, or dead-lettered for a reason of its own',
    async (source) => {
      const result = await local([...cafe, '--source', source, '--shards', '3', '--json']);

      expect(result.code, result.stderr.slice(-3000)).toBe(0);
      const report = lastJsonLine(result.stdout);
      expect(report).toMatchObject({ source, check: { ok: true, problems: [] } });
      expect(report.applied + report.duplicates + report.deadLettered).toBe(report.messagesIn);
      expect(report.retried).toBeGreaterThan(0);
      for (const reason of [
        'ValidationError',
        'MissingIdempotencyKey',
        'IdempotencyConflict',
        'BusinessRuleViolation',
        'RetriesExhausted',
      ]) {
        expect(report.deadLetteredByReason[reason], reason).toBeGreaterThan(0);
      }
      expect(report.outbox?.published).toBe(report.outbox?.written);
    },
    500_000,
  );

  it('refuses a stream source with --fifo, before starting anything', async () => {
    const result = await local([...cafe, '--source', 'kinesis', '--fifo']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--source kinesis cannot run with --fifo/);
  }, 120_000);
});
