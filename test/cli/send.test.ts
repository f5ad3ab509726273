/**
 * `idempotent-consumer send` against this file's own SQS server (fauxqs with the strict SQS
 * layer), run in-process: what reaches the queue, byte for byte, with FIFO groups and
 * deduplication ids; and every refusal sends nothing.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SendReport } from '../../packages/cli/src/send/sendMessages.js';
import { createQueue, createQueuePair, readAll, startSqs, visibleCount, type FauxqsServer } from './dlqFixtures.js';
import { runInProcess } from './inProcessCli.js';

let server: FauxqsServer;
let sqs: SQSClient;
let folder: string;

beforeAll(async () => {
  ({ server, sqs } = await startSqs());
  folder = await mkdtemp(join(tmpdir(), 'send-'));
});

afterAll(async () => {
  sqs?.destroy();
  await server?.stop();
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
});

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

async function file(name: string, lines: readonly string[]): Promise<string> {
  const path = join(folder, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

async function outputsFile(name: string, content: object): Promise<string> {
  const path = join(folder, name);
  await writeFile(path, JSON.stringify(content));
  return path;
}

describe('send to a standard queue', () => {
  it('sends every line of --file, body for body, and prints each message id', async () => {
    const { url } = await createQueue(sqs, 'standard');
    const lines = ['{"eventId":"e-1","type":"OrderPlaced","orderId":"O-1"}', '"not-json"', '{"eventId":"e-2","note":"☕ 🍰"}'];
    const input = await file('standard.jsonl', lines);

    const run = await runInProcess(['send', '--queue-url', url, '--file', input]);

    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const received = await readAll(sqs, url);
    expect(received.map((m) => m.Body).sort()).toEqual([lines[0], 'not-json', lines[2]].sort());
    expect(run.stdout).toContain(`Sent 3 messages to ${url} (standard queue):`);
    for (const message of received) expect(run.stdout).toContain(message.MessageId);
    expect(run.stdout).toContain(`${input}:2`);
  });

  it('sends each --body, in order, and prints JSON with --json; QUEUE_URL names the queue', async () => {
    const { url } = await createQueue(sqs, 'bodies');

    const run = await runInProcess(['send', '--body', '{"eventId":"b-1"}', '--body', '{"eventId":"b-2"}', '--json'], { QUEUE_URL: url });

    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as SendReport;
    expect(report.queueUrl).toBe(url);
    expect(report.fifo).toBe(false);
    expect(report.sent.map((m) => m.input)).toEqual(['--body #1', '--body #2']);
    const received = await readAll(sqs, url);
    const bodyById = new Map(received.map((m) => [m.MessageId, m.Body]));
    expect(report.sent.map((m) => bodyById.get(m.messageId))).toEqual(['{"eventId":"b-1"}', '{"eventId":"b-2"}']);
  });
});

describe('send to a FIFO queue', () => {
  it('takes the queue from --outputs-file, the group from --group-id-field, and the SHA-256 of the body as deduplication id', async () => {
    const { source, dlq } = await createQueuePair(sqs, 'fifo', true);
    const outputs = await outputsFile('fifo-outputs.json', {
      Shop: { QueueUrl: source.url, DeadLetterQueueUrl: dlq.url, ConsumerName: 'shop' },
    });
    const first = '{"eventId":"f-1","orderId":"O-7"}';
    const second = '{"eventId":"f-2","orderId":"O-8"}';

    const run = await runInProcess([
      'send',
      '--outputs-file',
      outputs,
      '--body',
      first,
      '--body',
      second,
      '--group-id-field',
      'orderId',
      '--json',
    ]);

    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as SendReport;
    expect(report.fifo).toBe(true);
    expect(report.sent.map((m) => [m.messageGroupId, m.messageDeduplicationId])).toEqual([
      ['O-7', sha256(first)],
      ['O-8', sha256(second)],
    ]);
    const received = await readAll(sqs, source.url);
    expect(received.map((m) => [m.Body, m.Attributes?.MessageGroupId, m.Attributes?.MessageDeduplicationId]).sort()).toEqual(
      [
        [first, 'O-7', sha256(first)],
        [second, 'O-8', sha256(second)],
      ].sort(),
    );
  });

  it('uses --group-id for every message and --dedup-id-field for the deduplication id', async () => {
    const { url } = await createQueue(sqs, 'fixed.fifo');
    const input = await file('fifo.jsonl', ['{"eventId":"g-1","n":1}', '{"eventId":"g-2","n":2}']);

    const run = await runInProcess([
      'send',
      '--queue-url',
      url,
      '--file',
      input,
      '--group-id',
      'everything',
      '--dedup-id-field',
      'eventId',
    ]);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('(FIFO queue)');
    expect(run.stdout).toContain('group everything');
    const received = await readAll(sqs, url, { consume: true });
    expect(received.map((m) => [m.Attributes?.MessageGroupId, m.Attributes?.MessageDeduplicationId])).toEqual([
      ['everything', 'g-1'],
      ['everything', 'g-2'],
    ]);
  });
});

describe('send refuses, and sends nothing', () => {
  it.each([
    ['a FIFO queue without a message group', 'fifo', [], /is a FIFO queue: give each message a group with --group-id-field FIELD/],
    [
      'a body without the group field',
      'fifo',
      ['--group-id-field', 'customerId'],
      /\.jsonl:2: the body has no top-level field "customerId"/,
    ],
    ["a group that breaks SQS's rule", 'fifo', ['--group-id', 'café'], /the message group "café" breaks SQS's rule/],
    ['group flags on a standard queue', 'standard', ['--group-id', 'g'], /--group-id apply to a FIFO queue; .* is a standard queue/],
  ] as const)('%s (exit 2)', async (_case, kind, extra, message) => {
    const { url } = await createQueue(sqs, kind === 'fifo' ? 'refused.fifo' : 'refused');
    const input = await file(`refused-${kind}.jsonl`, ['{"eventId":"r-1","customerId":"C-1"}', '{"eventId":"r-2"}']);

    const run = await runInProcess(['send', '--queue-url', url, '--file', input, ...extra]);

    expect(run.stderr).toMatch(message);
    expect(run.code).toBe(2);
    expect(await visibleCount(sqs, url)).toBe(0);
  });

  it('a body larger than the queue takes, after good ones (exit 2)', async () => {
    const { url } = await createQueue(sqs, 'small', { MaximumMessageSize: '1024' });
    const input = await file('large.jsonl', ['{"eventId":"ok"}', JSON.stringify({ eventId: 'big', pad: 'x'.repeat(1100) })]);

    const run = await runInProcess(['send', '--queue-url', url, '--file', input]);

    expect(run.stderr).toMatch(/large\.jsonl:2: the body is \d+ bytes; the source queue takes at most 1024/);
    expect(run.code).toBe(2);
    expect(await visibleCount(sqs, url)).toBe(0);
  });

  it('bad flags: no body, both sources, no queue, a body that is not JSON, an ARN for a URL (exit 2)', async () => {
    const { url } = await createQueue(sqs, 'flags');
    const input = await file('flags.jsonl', ['{"eventId":"x"}']);

    const cases: [string[], RegExp][] = [
      [['send', '--queue-url', url], /send needs --body JSON \(repeatable\) or --file F\.jsonl/],
      [['send', '--queue-url', url, '--body', '{}', '--file', input], /give --body or --file, not both/],
      [['send', '--body', '{}'], /send needs --queue-url URL or --outputs-file FILE/],
      [['send', '--queue-url', url, '--body', '{"eventId":'], /--body #1: the value is not JSON/],
      [['send', '--queue-url', 'arn:aws:sqs:us-east-1:000000000000:flags', '--body', '{}'], /--queue-url takes a queue URL, not an ARN/],
      [['send', '--stack', 'Shop', '--queue-url', url, '--body', '{}'], /--stack need --outputs-file FILE/],
    ];
    for (const [args, message] of cases) {
      const run = await runInProcess(args);
      expect(run.stderr, args.join(' ')).toMatch(message);
      expect(run.code, args.join(' ')).toBe(2);
    }
    expect(await visibleCount(sqs, url)).toBe(0);
  });

  it('an outputs file with two consumers and no --stack lists them (exit 2)', async () => {
    const { url } = await createQueue(sqs, 'two');
    const outputs = await outputsFile('two.json', {
      A: { QueueUrl: url, DeadLetterQueueUrl: url },
      B: { QueueUrl: url, DeadLetterQueueUrl: url },
    });

    const run = await runInProcess(['send', '--outputs-file', outputs, '--body', '{}']);

    expect(run.stderr).toContain('holds 2 consumers; pick one with --stack NAME:\n  A\n  B');
    expect(run.code).toBe(2);
    expect(await visibleCount(sqs, url)).toBe(0);
  });

  it('a queue that does not exist (exit 1)', async () => {
    const { url } = await createQueue(sqs, 'exists');
    const missing = url.replace(/exists-\d+$/, 'no-such-queue');

    const run = await runInProcess(['send', '--queue-url', missing, '--body', '{}']);

    expect(run.stderr).toContain(`queue not found: ${missing}`);
    expect(run.code).toBe(1);
  });
});
