/**
 * Filter criteria in a local run as a user runs it (`idempotent-consumer local … --settings` with
 * `function.filters`, `kafka.filters`, `stream.filters`): what the mapping drops is never invoked
 * and ends there, counted as filtered out, and the exactly-once check still passes; a stream
 * filter on the other stream source's keys is refused at the start.
 */
import { describe, expect, it } from 'vitest';
import { lastJsonReport, runLocalCli } from '../support/localCli.js';

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
      const result = await runLocalCli([...cafe, '--settings', `${settings}#filteredCafeSettings`, '--source', source, '--json']);
      expect(result.code, result.stderr.slice(-3000)).toBe(0);
      const report = lastJsonReport(result.stdout);
      expect(report.check.ok, report.check.problems.join('\n')).toBe(true);
      // The sample's lines that are not JSON objects with a type: dropped by the mapping.
      expect(report.filteredOut).toBeGreaterThan(0);
      expect(report.applied + report.duplicates + report.deadLettered + (report.filteredOut ?? 0)).toBe(report.messagesIn);
      expect(report.unaccounted).toBe(0);
      expect(result.stderr).toMatch(/filtered out \(not invoked\)/);
    },
    // A whole local run of the sample (about 40 s; its orphan payment alone waits out 30 s of
    // backoff): on a busy machine it takes longer.
    180_000,
  );

  it('refuses a stream filter on the keys of the other stream source, naming the rule', async () => {
    const result = await runLocalCli([...cafe, '--settings', `${settings}#wrongStreamKeySettings`, '--source', 'dynamodb-streams']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /stream\.filters\[0\] filters on "data": a DynamoDB Streams event source mapping filters only on the keys "eventID"/,
    );
  });
});
