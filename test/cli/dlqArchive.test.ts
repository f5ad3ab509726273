import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteMessageBatchCommand, DeleteMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveDeadLetters } from '../../packages/cli/src/dlq/archive.js';
import { ArchiveFileError, ArchiveFormatError, ArchiveIncompleteError } from '../../packages/cli/src/dlq/errors.js';
import { formatArchive, formatReplay } from '../../packages/cli/src/dlq/output.js';
import { replayArchive } from '../../packages/cli/src/dlq/replay.js';
import {
  comparable,
  createQueue,
  createQueuePair,
  eventBody,
  readAll,
  seedDeadLetters,
  startSqs,
  visibleCount,
  type FauxqsServer,
} from './dlqFixtures.js';

let server: FauxqsServer;
let sqs: SQSClient;
let folder: string;
const fast = { waitTimeSeconds: 0, visibilityTimeoutSeconds: 30 };

beforeAll(async () => {
  ({ server, sqs } = await startSqs());
  folder = await mkdtemp(join(tmpdir(), 'dlq-archive-'));
});

afterAll(async () => {
  sqs.destroy();
  await server.stop();
  await rm(folder, { recursive: true, force: true });
});

let files = 0;
const newFile = (): string => join(folder, `archive-${++files}.jsonl`);

async function scenario() {
  const { source, dlq } = await createQueuePair(sqs, 'orders');
  await seedDeadLetters(sqs, dlq.url, [
    {
      reason: 'ValidationError',
      body: '{"eventId":"a-1",\n "multi": "line ✓"}',
      source: source.arn,
      originalMessageId: 'a-1',
      originalAttributes: { blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([0, 255, 10, 13]) } },
    },
    { reason: 'IdempotencyConflict', body: eventBody('a-2'), source: source.arn, originalMessageId: 'a-2' },
    { reason: 'RetriesExhausted', body: eventBody('a-3'), source: source.arn, originalMessageId: 'a-3' },
  ]);
  return { source, dlq };
}

/** Body and message attributes of each message, sorted: what a round trip must keep. */
function fingerprint(messages: { Body?: string; MessageAttributes?: Parameters<typeof comparable>[0] }[]) {
  return messages
    .map((m) => ({ body: m.Body, attributes: comparable(m.MessageAttributes) }))
    .sort((a, b) => (a.body ?? '').localeCompare(b.body ?? ''));
}

describe('archiveDeadLetters and replayArchive', () => {
  it('round-trip every message unchanged: archive --delete, then replay', async () => {
    const { dlq } = await scenario();
    const before = fingerprint(await readAll(sqs, dlq.url));
    const out = newFile();

    const archived = await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out, delete: true, yes: true, ...fast });
    const emptied = await visibleCount(sqs, dlq.url);
    const replayed = await replayArchive({ sqs }, { in: out, queueUrl: dlq.url });

    expect(archived.archived).toBe(3);
    expect(archived.deleted).toBe(3);
    expect(emptied).toBe(0);
    expect(replayed.sent).toBe(3);
    expect(fingerprint(await readAll(sqs, dlq.url))).toEqual(before);
    const lines = (await readFile(out, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    const first = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    expect(Object.keys(first)).toEqual(
      expect.arrayContaining(['v', 'messageId', 'body', 'md5OfBody', 'messageAttributes', 'attributes', 'queueUrl', 'archivedAt']),
    );
    expect(JSON.parse(lines[3] ?? '{}')).toMatchObject({ trailer: { v: 1, messages: 3, final: false } });
    expect(JSON.parse(lines[4] ?? '{}')).toMatchObject({
      trailer: { v: 1, messages: 3, final: true, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    expect(replayed.trailer).toEqual({ status: 'complete', messages: 3 });
    expect(formatArchive(archived)).toContain('Archived 3 message(s)');
    expect(formatReplay(replayed)).toContain('Sent 3 of 3');
  });

  it('archive without --delete leaves every message in the queue', async () => {
    const { dlq } = await scenario();

    const result = await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out: newFile(), ...fast });

    expect(result.archived).toBe(3);
    expect(result.deleted).toBe(0);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('refuses to replay an archive cut at a line boundary (70 of 100 lines), sending nothing', async () => {
    const { dlq } = await createQueuePair(sqs, 'cut');
    const source = 'arn:aws:sqs:us-east-1:000000000000:cut';
    await seedDeadLetters(
      sqs,
      dlq.url,
      Array.from({ length: 100 }, (_, i) => ({
        reason: 'ValidationError',
        body: eventBody(`c-${i}`),
        source,
        originalMessageId: `c-${i}`,
      })),
    );
    const out = newFile();
    const archived = await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out, delete: true, yes: true, ...fast });
    const cut = newFile();
    await writeFile(cut, `${(await readFile(out, 'utf8')).split('\n').slice(0, 70).join('\n')}\n`);

    const error = await replayArchive({ sqs }, { in: cut, queueUrl: dlq.url }).catch((e: unknown) => e);
    const whole = await replayArchive({ sqs }, { in: out, queueUrl: dlq.url });

    expect(archived.archived).toBe(100);
    expect(error).toBeInstanceOf(ArchiveIncompleteError);
    expect((error as Error).message).toBe(
      `${cut} does not end with the trailer line that archive writes (its count and SHA-256): the file was cut ` +
        '(70 message line(s) are there) or written by hand. Nothing was sent. For a file written by hand, pass --no-trailer-check.',
    );
    expect(whole.sent).toBe(100);
    expect(await visibleCount(sqs, dlq.url)).toBe(100);
  });

  it('an interrupted archive --delete still ends with its final trailer', async () => {
    const { dlq } = await scenario();
    const out = newFile();
    const controller = new AbortController();
    let deletes = 0;
    const interrupting = {
      config: sqs.config,
      send: async (command: object) => {
        const output = await sqs.send(command as never);
        if (command instanceof DeleteMessageBatchCommand && ++deletes === 1) controller.abort();
        return output;
      },
    } as unknown as SQSClient;

    const result = await archiveDeadLetters(
      { sqs: interrupting, signal: controller.signal },
      { queueUrl: dlq.url, out, delete: true, yes: true, ...fast },
    );
    const replayed = await replayArchive({ sqs }, { in: out, queueUrl: dlq.url, dryRun: true });

    expect(result.interrupted).toBe(true);
    expect(replayed.trailer).toEqual({ status: 'complete', messages: 3 });
  });

  it('deletes only after the file holding the messages is complete on disk', async () => {
    const { dlq } = await scenario();
    const out = newFile();
    const linesAtDelete: number[] = [];
    const watching = {
      config: sqs.config,
      send: (command: object) => {
        if (command instanceof DeleteMessageBatchCommand || command instanceof DeleteMessageCommand) {
          linesAtDelete.push(existsSync(out) ? readFileSync(out, 'utf8').trimEnd().split('\n').length : 0);
        }
        return sqs.send(command as never);
      },
    } as unknown as SQSClient;

    const result = await archiveDeadLetters({ sqs: watching }, { queueUrl: dlq.url, out, delete: true, yes: true, ...fast });

    expect(result.deleted).toBe(3);
    expect(linesAtDelete).toEqual([4]);
  });

  it('deletes nothing when the file cannot be written', async () => {
    const { dlq } = await scenario();

    await expect(
      archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out: join(folder, 'missing-folder', 'x.jsonl'), delete: true, yes: true, ...fast }),
    ).rejects.toThrow(ArchiveFileError);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('refuses to overwrite an existing archive without --force', async () => {
    const { dlq } = await scenario();
    const out = newFile();
    await writeFile(out, 'precious\n');

    await expect(archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out, ...fast })).rejects.toThrow(/exists; pass --force/);
    expect(await readFile(out, 'utf8')).toBe('precious\n');
  });

  it('keeps the messages when the deletion is declined, and writes nothing on --dry-run', async () => {
    const { dlq } = await scenario();
    const declined = newFile();
    const dry = newFile();

    const no = await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out: declined, delete: true, confirm: async () => false, ...fast });
    const dryRun = await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out: dry, delete: true, dryRun: true, ...fast });

    expect(no.cancelled).toBe(true);
    expect((await readFile(declined, 'utf8')).trimEnd().split('\n')).toHaveLength(5);
    expect(dryRun.archived).toBe(3);
    expect(existsSync(dry)).toBe(false);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('says a FIFO archive without --delete is incomplete when SQS holds back a group (more than one receive of it): warning and incomplete, so exit 1', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'heads', true);
    // One group of 12: a receive returns at most 10, and while they are held SQS returns no more of the group.
    await seedDeadLetters(
      sqs,
      dlq.url,
      Array.from({ length: 12 }, (_, i) => ({
        reason: 'ValidationError',
        body: eventBody(`h-${i}`),
        source: source.arn,
        originalMessageId: `h-${i}`,
        messageGroupId: 'A',
      })),
    );
    const out = newFile();

    const result = await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out, ...fast });

    expect(result.archived).toBeLessThan(12);
    expect(result.incomplete).toBe(true);
    expect(result.warnings.join('\n')).toContain('the archive is incomplete');
    expect(await visibleCount(sqs, dlq.url)).toBe(12);
  });

  it('archives a FIFO queue past the first message of each group with --delete, and replays the groups', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'orders', true);
    await seedDeadLetters(sqs, dlq.url, [
      { reason: 'ValidationError', body: eventBody('g-1'), source: source.arn, originalMessageId: 'g-1', messageGroupId: 'A' },
      { reason: 'ValidationError', body: eventBody('g-2'), source: source.arn, originalMessageId: 'g-2', messageGroupId: 'A' },
      { reason: 'BusinessRuleViolation', body: eventBody('g-3'), source: source.arn, originalMessageId: 'g-3', messageGroupId: 'B' },
    ]);
    const out = newFile();

    const archived = await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out, delete: true, yes: true, ...fast });
    const replayed = await replayArchive({ sqs }, { in: out, queueUrl: dlq.url });

    expect(archived.archived).toBe(3);
    expect(replayed.sent).toBe(3);
    const back = await readAll(sqs, dlq.url, { consume: true });
    expect(back.map((m) => [m.Attributes?.MessageGroupId, m.Body])).toEqual(
      expect.arrayContaining([
        ['A', eventBody('g-1')],
        ['A', eventBody('g-2')],
        ['B', eventBody('g-3')],
      ]),
    );
    const groupA = back.filter((m) => m.Attributes?.MessageGroupId === 'A').map((m) => m.Body);
    expect(groupA).toEqual([eventBody('g-1'), eventBody('g-2')]);
  });
});

describe('replayArchive with a bad file', () => {
  it('sends nothing and names the file and every bad line', async () => {
    const { dlq } = await scenario();
    const out = newFile();
    await archiveDeadLetters({ sqs }, { queueUrl: dlq.url, out, ...fast });
    const good = (await readFile(out, 'utf8')).trimEnd().split('\n');
    const bad = newFile();
    await writeFile(bad, `${[good[0], '{"body": 42}', '', 'not json', good[1]].join('\n')}\n`);

    const cut = await replayArchive({ sqs }, { in: bad, queueUrl: dlq.url }).catch((e: unknown) => e);
    const error = await replayArchive({ sqs }, { in: bad, queueUrl: dlq.url, noTrailerCheck: true }).catch((e: unknown) => e);

    expect(cut).toBeInstanceOf(ArchiveIncompleteError);
    expect(error).toBeInstanceOf(ArchiveFormatError);
    expect((error as ArchiveFormatError).problems.map((p) => p.line)).toEqual([2, 4]);
    expect((error as Error).message).toContain(`${bad}:2: missing "body"`);
    expect((error as Error).message).toContain(`${bad}:4: not JSON`);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('with skipInvalid sends the good lines and reports the bad ones', async () => {
    const target = await createQueue(sqs, 'replay-target');
    const bad = newFile();
    await writeFile(bad, `${JSON.stringify({ body: 'hand-written' })}\n{"body":\n`);

    const result = await replayArchive(
      { sqs },
      { in: bad, queueUrl: target.url, dlqCheck: false, skipInvalid: true, noTrailerCheck: true },
    );

    expect(result.sent).toBe(1);
    expect(result.invalid.map((p) => p.line)).toEqual([2]);
    expect((await readAll(sqs, target.url)).map((m) => m.Body)).toEqual(['hand-written']);
  });

  it('refuses a line whose body no longer matches md5OfBody', async () => {
    const bad = newFile();
    await writeFile(bad, `${JSON.stringify({ body: 'edited', md5OfBody: '0'.repeat(32) })}\n`);

    await expect(replayArchive({ sqs }, { in: bad, queueUrl: 'http://localhost/000000000000/x', noTrailerCheck: true })).rejects.toThrow(
      /:1: the body does not match/,
    );
  });

  it('reports an unreadable file', async () => {
    await expect(replayArchive({ sqs }, { in: join(folder, 'nope.jsonl'), queueUrl: 'http://localhost/000000000000/x' })).rejects.toThrow(
      /nope\.jsonl: cannot read the file/,
    );
  });

  it('resumes from a line', async () => {
    const target = await createQueue(sqs, 'resume-target');
    const file = newFile();
    await writeFile(file, ['one', 'two', 'three'].map((body) => JSON.stringify({ body })).join('\n'));

    const result = await replayArchive({ sqs }, { in: file, queueUrl: target.url, dlqCheck: false, fromLine: 2, noTrailerCheck: true });
    const beyond = await replayArchive({ sqs }, { in: file, queueUrl: target.url, dlqCheck: false, fromLine: 9, noTrailerCheck: true });

    expect(result.sent).toBe(2);
    expect(result.nothingMoved).toBeUndefined();
    expect((await readAll(sqs, target.url)).map((m) => m.Body).sort()).toEqual(['three', 'two']);
    expect(beyond.sent).toBe(0);
    expect(beyond.nothingMoved).toBe(`nothing to send: ${file} has no message at or after line 9 (its last is line 3)`);
  });
});
