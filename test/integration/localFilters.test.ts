/**
 * Filter criteria in a local run as a user runs it (`idempotent-consumer local … --settings` with
 * `function.filters`, `kafka.filters`, `stream.filters`): what the mapping drops is never invoked
 * and ends there, counted as filtered out, and the exactly-once check still passes; a stream
 * filter on the other stream source's keys is refused at the start.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { RunReport } from '../../packages/local/src/report.js';

/** `idempotent-consumer local …` from the sources; resolves with its exit code and output. */
function local(args: readonly string[], timeoutMs = 400_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

const settings = 'test/integration/fixtures/filteredCafeSettings.ts';
const cafe = [
  '--handler',
  'examples/cafe/handler.ts',
  '--check',
  'examples/cafe/check.ts',
  '--input',
  'examples/cafe/samples/orders.jsonl',
  '--event-time',
  'occurredAt',
];

describe('filter criteria in a local run', () => {
  it.each([['sqs'], ['kafka'], ['kinesis']])(
    '%s: the messages no pattern matches are never invoked, counted as filtered out, and the check passes',
    async (source) => {
      const result = await local([...cafe, '--settings', `${settings}#filteredCafeSettings`, '--source', source, '--json']);
      expect(result.code, result.stderr.slice(-3000)).toBe(0);
      const report = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as RunReport;
      expect(report.check.ok, report.check.problems.join('\n')).toBe(true);
      // The sample's lines that are not JSON objects with a type: dropped by the mapping.
      expect(report.filteredOut).toBeGreaterThan(0);
      expect(report.applied + report.duplicates + report.deadLettered + (report.filteredOut ?? 0)).toBe(report.messagesIn);
      expect(report.unaccounted).toBe(0);
      expect(result.stderr).toMatch(/filtered out \(not invoked\)/);
    },
  );

  it('refuses a stream filter on the keys of the other stream source, naming the rule', async () => {
    const result = await local([...cafe, '--settings', `${settings}#wrongStreamKeySettings`, '--source', 'dynamodb-streams']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /stream\.filters\[0\] filters on "data": a DynamoDB Streams event source mapping filters only on the keys "eventID"/,
    );
  });
});
