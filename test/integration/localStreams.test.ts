/**
 * The local runtime's stream sources as a user runs them: `idempotent-consumer local --source
 * kinesis` and `--source dynamodb-streams` (an in-process shard log with the stream mappings'
 * semantics) on the café sample and on the inventory example, each passing the exactly-once check.
 */
import { describe, expect, it } from 'vitest';
import { lastJsonReport, runLocalCli } from '../support/localCli.js';

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
      const result = await runLocalCli([...cafe, '--source', source, '--shards', '3', '--json']);

      expect(result.code, result.stderr.slice(-3000)).toBe(0);
      const report = lastJsonReport(result.stdout);
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
    const result = await runLocalCli([...cafe, '--source', 'kinesis', '--fifo']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--source kinesis cannot run with --fifo/);
  }, 120_000);
});
