/**
 * `dlq redrive` and `dlq replay` refuse a message older than the consumer's inbox window (it
 * would be applied again) unless `--allow-outside-window`, against fauxqs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveDeadLetters } from '../../packages/cli/src/dlq/archive.js';
import { inboxWindowFrom, OutsideInboxWindowError } from '../../packages/cli/src/dlq/inboxWindow.js';
import { formatRedrive } from '../../packages/cli/src/dlq/output.js';
import { redriveDeadLetters } from '../../packages/cli/src/dlq/redrive.js';
import { replayArchive } from '../../packages/cli/src/dlq/replay.js';
import { createQueuePair, eventBody, readAll, seedDeadLetters, startSqs, visibleCount, type FauxqsServer } from './dlqFixtures.js';
import { runInProcess } from './inProcessCli.js';

let server: FauxqsServer;
let sqs: SQSClient;
let endpoint: string;
let folder: string;
const fast = { waitTimeSeconds: 0, visibilityTimeoutSeconds: 30 };
const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000);

beforeAll(async () => {
  ({ server, sqs, endpoint } = await startSqs());
  folder = await mkdtemp(join(tmpdir(), 'dlq-window-'));
});

afterAll(async () => {
  sqs.destroy();
  await server.stop();
  await rm(folder, { recursive: true, force: true });
});

/** A DLQ with one dead letter that failed 40 days ago (outside the default 30-day window) and one that failed now. */
async function oldAndNew() {
  const { source, dlq } = await createQueuePair(sqs, 'window');
  await seedDeadLetters(sqs, dlq.url, [
    { reason: 'RetriesExhausted', body: eventBody('old-1'), source: source.arn, originalMessageId: 'old-1', failedAt: daysAgo(40) },
    { reason: 'RetriesExhausted', body: eventBody('new-1'), source: source.arn, originalMessageId: 'new-1' },
  ]);
  return { source, dlq };
}

describe('redrive and the inbox window', () => {
  it('lists a message older than the window in the dry run as staying, with its age, the window and what would happen', async () => {
    const { dlq } = await oldAndNew();

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, dryRun: true, ...fast });

    const old = result.selected.find((item) => item.target === undefined);
    expect(result.selected).toHaveLength(2);
    expect(old?.detail).toMatch(/^outside the inbox window: (39d23h|40d00h) old \(failedAt \d{4}-/);
    expect(old?.detail).toContain(
      "the inbox keeps a key 2592000 s (30 days, the library's default; pass --inbox-ttl if the consumer's differs)",
    );
    expect(old?.detail).toContain('the consumer would apply it again; pass --allow-outside-window to send it anyway');
    const text = formatRedrive(result);
    expect(text).toContain('Dry run: would redrive 1 message(s) by receive → send → delete, and leave 1 that cannot go anywhere');
    expect(text).toMatch(/outside the inbox window: (39d23h|40d00h) old/);
    expect(await visibleCount(sqs, dlq.url)).toBe(2);
  });

  it('leaves a message older than the window in the DLQ and moves the others', async () => {
    const { source, dlq } = await oldAndNew();

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, yes: true, ...fast });

    expect(result.moved.map((item) => item.messageId)).toHaveLength(1);
    expect(result.skipped).toHaveLength(1);
    expect(result.skipped[0]?.detail).toMatch(/^outside the inbox window: (39d23h|40d00h) old/);
    expect((await readAll(sqs, source.url)).map((m) => m.Body)).toEqual([eventBody('new-1')]);
    expect((await readAll(sqs, dlq.url)).map((m) => m.Body)).toEqual([eventBody('old-1')]);
  });

  it('sends it anyway with --allow-outside-window, and says so', async () => {
    const { source, dlq } = await oldAndNew();

    const result = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, yes: true, allowOutsideWindow: true, ...fast });

    expect(result.moved).toHaveLength(2);
    expect(result.moved.map((item) => item.detail).filter((d) => d !== undefined)).toEqual([
      expect.stringMatching(/^outside the inbox window: (39d23h|40d00h) old .*\(sent anyway: --allow-outside-window\)$/),
    ]);
    expect((await readAll(sqs, source.url)).map((m) => m.Body).sort()).toEqual([eventBody('new-1'), eventBody('old-1')].sort());
    expect(await visibleCount(sqs, dlq.url)).toBe(0);
  });

  it('measures a Kafka dead letter from its record timestamp, and the window from --inbox-ttl', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'window-kafka');
    const kafkaSource = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';
    const coordinates = (hours: number) => ({ topic: 'orders', partition: 0, offset: hours, timestamp: Date.now() - hours * 3_600_000 });
    await seedDeadLetters(sqs, dlq.url, [
      {
        reason: 'RetriesExhausted',
        body: eventBody('k-1'),
        source: kafkaSource,
        originalMessageId: 'orders-0@3',
        coordinates: coordinates(3),
      },
      {
        reason: 'RetriesExhausted',
        body: eventBody('k-2'),
        source: kafkaSource,
        originalMessageId: 'orders-0@1',
        coordinates: coordinates(1),
      },
    ]);

    const result = await redriveDeadLetters(
      { sqs },
      { queueUrl: dlq.url, to: source.url, yes: true, inboxWindow: inboxWindowFrom('2h', {}), ...fast },
    );

    expect(result.moved).toHaveLength(1);
    expect(result.skipped[0]?.detail).toMatch(
      /^outside the inbox window: (2h59m|3h00m) old \(Kafka record timestamp .*\), the inbox keeps a key 7200 s \(2 hours, --inbox-ttl\)/,
    );
    expect((await readAll(sqs, source.url)).map((m) => m.Body)).toEqual([eventBody('k-2')]);
  });

  it('refuses through the command line with --inbox-ttl, and sends with --allow-outside-window', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'window-cli');
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('c-1'), source: source.arn, originalMessageId: 'c-1', failedAt: daysAgo(2) },
    ]);
    const common = ['dlq', 'redrive', '--queue-url', dlq.url, '--endpoint', endpoint, '--yes', '--json', '--inbox-ttl', '1d'];

    const refused = await runInProcess(common);
    const stillThere = await visibleCount(sqs, dlq.url);
    const allowed = await runInProcess([...common, '--allow-outside-window']);

    expect(refused.code).toBe(1);
    const result = JSON.parse(refused.stdout) as { moved: unknown[]; skipped: { detail: string }[]; nothingMoved: string };
    expect(result.moved).toEqual([]);
    expect(result.skipped[0]?.detail).toMatch(
      /^outside the inbox window: (1d23h|2d00h) old .*the inbox keeps a key 86400 s \(1 day, --inbox-ttl\)/,
    );
    expect(result.nothingMoved).toContain('every one of the 1 selected message(s) has to stay');
    expect(stillThere).toBe(1);
    expect(allowed.code).toBe(0);
    expect((await readAll(sqs, source.url)).map((m) => m.Body)).toEqual([eventBody('c-1')]);
  });
});

describe('replay and the inbox window', () => {
  /** Archives (with --delete) a DLQ holding a dead letter 40 days old and a new one; returns the file and the DLQ. */
  async function archived(name: string) {
    const { dlq } = await oldAndNew();
    const out = join(folder, `${name}.jsonl`);
    await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out, delete: true, yes: true, ...fast });
    expect(await visibleCount(sqs, dlq.url)).toBe(0);
    return { out, dlq };
  }

  it('refuses the whole file, dry run included, naming the line, its age and the window; nothing is sent', async () => {
    const { out, dlq } = await archived('refused');

    const dryRun = await replayArchive({ sqs }, { in: out, queueUrl: dlq.url, dryRun: true }).catch((e: unknown) => e);
    const error = await replayArchive({ sqs }, { in: out, queueUrl: dlq.url }).catch((e: unknown) => e);

    for (const refused of [dryRun, error]) {
      expect(refused).toBeInstanceOf(OutsideInboxWindowError);
      expect((refused as OutsideInboxWindowError).lines.map((l) => l.line)).toEqual([1]);
      expect((refused as Error).message).toMatch(/1 message\(s\) older than the inbox window; nothing was sent/);
      expect((refused as Error).message).toMatch(/refused\.jsonl:1: outside the inbox window: (39d23h|40d00h) old/);
    }
    expect(await visibleCount(sqs, dlq.url)).toBe(0);
  });

  it('sends every line with --allow-outside-window, and only the others with --skip-invalid', async () => {
    const all = await archived('allowed');
    const some = await archived('skipped');

    const allowed = await replayArchive({ sqs }, { in: all.out, queueUrl: all.dlq.url, allowOutsideWindow: true });
    const skipped = await replayArchive({ sqs }, { in: some.out, queueUrl: some.dlq.url, skipInvalid: true });

    expect(allowed.sent).toBe(2);
    expect(await visibleCount(sqs, all.dlq.url)).toBe(2);
    expect(skipped.sent).toBe(1);
    expect(skipped.invalid.map((p) => p.line)).toEqual([1]);
    expect((await readAll(sqs, some.dlq.url)).map((m) => m.Body)).toEqual([eventBody('new-1')]);
  });
});
