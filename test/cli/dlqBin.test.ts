/**
 * The real command line, run as an operator runs it: `node bin/idempotent-consumer.js ...` in a
 * child process, against this file's own SQS server. The bin runs the compiled JavaScript in
 * `dist/`, which `beforeAll` builds fresh from the sources (see `buildCli`).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli } from './buildCli.js';
import { DeadLetterQueue } from '../../packages/idempotent-consumer/src/dlq/DeadLetterQueue.js';
import {
  comparable,
  contextOf,
  createBucket,
  createQueue,
  createQueuePair,
  eventBody,
  moveByRedrivePolicy,
  readAll,
  s3For,
  seedDeadLetters,
  startSqs,
  visibleCount,
  type FauxqsServer,
} from './dlqFixtures.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'idempotent-consumer.js');
const skewClock = join(root, 'test', 'cli', 'skewClock.mjs');

let server: FauxqsServer;
let sqs: SQSClient;
let endpoint: string;
let folder: string;
let source: { url: string; arn: string };
let dlq: { url: string; arn: string };

beforeAll(async () => {
  const written = buildCli();
  expect(written).toContain(join('packages', 'cli', 'dist', 'main.js'));
  ({ server, sqs, endpoint } = await startSqs());
  folder = await mkdtemp(join(tmpdir(), 'dlq-bin-'));
  ({ source, dlq } = await createQueuePair(sqs, 'events'));
  await seedDeadLetters(sqs, dlq.url, [
    { reason: 'ValidationError', body: '{"eventId": 1', source: source.arn, originalMessageId: 's-1' },
    { reason: 'ValidationError', body: eventBody('s-2', { points: 'many' }), source: source.arn, originalMessageId: 's-2' },
    { reason: 'BusinessRuleViolation', body: eventBody('s-3'), source: source.arn, originalMessageId: 's-3' },
  ]);
});

afterAll(async () => {
  sqs?.destroy();
  await server?.stop();
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
});

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the bin with a clean AWS environment (no credentials, no config files, no instance
 * metadata). `clockSkewMs` moves the child's wall clock (the server keeps the true time).
 */
function run(args: readonly string[], env: Record<string, string> = {}, options: { clockSkewMs?: number } = {}): Promise<Run> {
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('AWS_') && name !== 'DLQ_URL' && value !== undefined) clean[name] = value;
  }
  const preload = options.clockSkewMs !== undefined ? ['--import', skewClock] : [];
  const child = spawn(process.execPath, [...preload, bin, ...args], {
    cwd: root,
    env: {
      ...clean,
      HOME: folder,
      AWS_CONFIG_FILE: join(folder, 'no-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(folder, 'no-credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
      ...(options.clockSkewMs !== undefined ? { TEST_CLOCK_SKEW_MS: String(options.clockSkewMs) } : {}),
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('idempotent-consumer (the bin, compiled)', () => {
  it("--version prints the package's version; --help lists the commands", async () => {
    const version = await run(['--version']);
    const help = await run(['--help']);
    const dlqHelp = await run(['dlq', 'redrive', '--help']);

    const manifest = JSON.parse(readFileSync(join(root, 'packages', 'cli', 'package.json'), 'utf8')) as { version: string };
    expect(version).toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Commands:\n[\s\S]*^\s+dlq\s/m);
    expect(help.stdout).toMatch(/^\s+local \[options\]\s/m);
    expect(dlqHelp.code).toBe(0);
    expect(dlqHelp.stdout).toContain('--move-task');
    expect(dlqHelp.stdout).toContain('Exit codes: 0 done; 1 an error, or nothing that was asked for moved');
  });

  it('runs the compiled JavaScript: the bin names no TypeScript runtime', async () => {
    const text = await readFile(bin, 'utf8');
    expect(text).toContain('../dist/main.js');
    expect(text).not.toMatch(/tsx|\.ts['"]/);
  });
});

describe('idempotent-consumer dlq (the bin)', () => {
  it('list: groups by reason, exit 0, leaves every message visible, and prints no AWS SDK notice', async () => {
    const result = await run(['dlq', 'list', '--queue-url', dlq.url, '--endpoint', endpoint]);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/ValidationError \(2\)[\s\S]*BusinessRuleViolation \(1\)/);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('list --json through AWS_ENDPOINT_URL and DLQ_URL', async () => {
    const result = await run(['dlq', 'list', '--json'], { AWS_ENDPOINT_URL: endpoint, DLQ_URL: dlq.url });

    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout) as { groups: { reason: string; count: number }[] };
    expect(parsed.groups.map((g) => [g.reason, g.count])).toEqual([
      ['ValidationError', 2],
      ['BusinessRuleViolation', 1],
    ]);
  });

  it('reaches the emulator from the queue URL alone (sqs.<region>.localhost)', async () => {
    const result = await run(['dlq', 'list', '--queue-url', dlq.url, '--reason', 'BusinessRuleViolation']);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain('BusinessRuleViolation (1)');
  });

  it('list --reason Foo: a warning naming the reasons present, never a refusal', async () => {
    const result = await run(['dlq', 'list', '--queue-url', dlq.url, '--endpoint', endpoint, '--reason', 'Foo']);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      'warning: --reason Foo matches no message seen; reasons present: ValidationError (2), BusinessRuleViolation (1)',
    );
  });

  it('show ID: prints the body and every attribute', async () => {
    const result = await run(['dlq', 'show', 's-2', '--queue-url', dlq.url, '--endpoint', endpoint]);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain(eventBody('s-2', { points: 'many' }));
    expect(result.stdout).toMatch(/ic\.failureReason\s+String\s+ValidationError/);
  });

  it("show of a body offloaded to S3 (C20) reads it back from the emulator's S3 endpoint", async () => {
    const { s3 } = s3For(endpoint);
    const own = await createQueue(sqs, 'bin-c20');
    const bucket = await createBucket(s3);
    const value = Buffer.alloc(800 * 1024, 0xfe).toString('base64');
    await new DeadLetterQueue({ sqs, s3, queueUrl: own.url, maxMessageSizeBytes: 1_048_576, payloadBucket: bucket }).send(
      contextOf({
        reason: 'ValidationError',
        body: value,
        bodyEncoding: 'base64',
        source: 'arn:aws:kafka:us-east-1:1:cluster/c/1',
        originalMessageId: 'events-0@10',
      }),
    );
    s3.destroy();

    const result = await run(['dlq', 'show', 'events-0@10', '--json', '--queue-url', own.url, '--endpoint', endpoint]);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const shown = JSON.parse(result.stdout) as { message: { offloaded: { location: string; body: string } } };
    expect(shown.message.offloaded.location).toMatch(new RegExp(`^s3://${bucket}/dead-letters/`));
    expect(shown.message.offloaded.body).toBe(value);
  });

  it('redrive --reason ValidationError --dry-run: exit 0, nothing changes', async () => {
    const result = await run([
      'dlq',
      'redrive',
      '--reason',
      'ValidationError',
      '--dry-run',
      '--queue-url',
      dlq.url,
      '--endpoint',
      endpoint,
    ]);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Dry run: would redrive 2 message(s)');
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
    expect(await visibleCount(sqs, source.url)).toBe(0);
  });

  it('redrive without --yes and without a terminal refuses, changing nothing', async () => {
    const result = await run(['dlq', 'redrive', '--reason', 'ValidationError', '--queue-url', dlq.url, '--endpoint', endpoint]);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('pass --yes');
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
    expect(await visibleCount(sqs, source.url)).toBe(0);
  });

  it('redrive that moves nothing: exit 1 with a sentence saying why (also with --json, on stderr)', async () => {
    const text = await run(['dlq', 'redrive', '--reason', 'Typo', '--yes', '--queue-url', dlq.url, '--endpoint', endpoint]);
    const json = await run(['dlq', 'redrive', '--reason', 'Typo', '--yes', '--json', '--queue-url', dlq.url, '--endpoint', endpoint]);

    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      'Nothing moved: no message matched the selection among the 3 seen (--reason Typo matches no message seen',
    );
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as { nothingMoved: string }).nothingMoved).toMatch(/^nothing moved: no message matched/);
    expect(json.stderr).toMatch(/^nothing moved: no message matched/);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('C22: list shows a message moved by the redrive policy as such, with source=web-checkout and attempts=3; redrive --reason none --yes puts it back with both intact', async () => {
    const pair = await createQueuePair(sqs, 'c22');
    const producer = { source: { DataType: 'String', StringValue: 'web-checkout' }, attempts: { DataType: 'Number', StringValue: '3' } };
    await moveByRedrivePolicy(sqs, pair.source.url, eventBody('c22'), producer);

    const listed = await run(['dlq', 'list', '--queue-url', pair.dlq.url, '--endpoint', endpoint]);
    const redriven = await run(['dlq', 'redrive', '--reason', 'none', '--yes', '--queue-url', pair.dlq.url, '--endpoint', endpoint]);

    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('none (1): moved by the redrive policy, no reason given');
    expect(listed.stdout).toContain('source=web-checkout, attempts=3');
    expect(redriven.code).toBe(0);
    expect(redriven.stdout).toContain('1 moved');
    const back = await readAll(sqs, pair.source.url);
    expect(back.map((m) => m.Body)).toEqual([eventBody('c22')]);
    expect(comparable(back[0]?.MessageAttributes)).toEqual(comparable(producer));
    expect(await visibleCount(sqs, pair.dlq.url)).toBe(0);
  });

  it('a local clock 2 minutes behind does not make a redrive skip a fresh message', async () => {
    const pair = await createQueuePair(sqs, 'skew-behind');
    await seedDeadLetters(sqs, pair.dlq.url, [
      { reason: 'ValidationError', body: eventBody('fresh'), source: pair.source.arn, originalMessageId: 'fresh' },
    ]);

    const result = await run(
      ['dlq', 'redrive', '--yes', '--queue-url', pair.dlq.url, '--endpoint', endpoint],
      {},
      { clockSkewMs: -120_000 },
    );

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('1 moved');
    expect((await readAll(sqs, pair.source.url)).map((m) => m.Body)).toEqual([eventBody('fresh')]);
  });

  it('a local clock 2 minutes ahead does not make a fresh message look older than 1m', async () => {
    const pair = await createQueuePair(sqs, 'skew-ahead');
    await moveByRedrivePolicy(sqs, pair.source.url, eventBody('fresh-2'), {});

    const result = await run(
      ['dlq', 'redrive', '--older-than', '1m', '--yes', '--queue-url', pair.dlq.url, '--endpoint', endpoint],
      {},
      { clockSkewMs: 120_000 },
    );

    expect(result.code).toBe(1);
    expect(result.stdout).toContain('Nothing moved: no message matched the selection among the 1 seen');
    expect(await visibleCount(sqs, pair.dlq.url)).toBe(1);
  });

  it('archive --delete --yes, then replay: every message back in the DLQ', async () => {
    const own = await createQueue(sqs, 'bin-dlq');
    await seedDeadLetters(sqs, own.url, [
      { reason: 'UnknownMessageType', body: eventBody('t-1', { type: 'Nope' }), source: source.arn, originalMessageId: 't-1' },
      { reason: 'ValidationError', body: 'x', source: source.arn, originalMessageId: 't-2' },
    ]);
    const before = (await readAll(sqs, own.url)).map((m) => m.Body).sort();
    const out = join(folder, 'bin-archive.jsonl');

    const archived = await run(['dlq', 'archive', '--out', out, '--delete', '--yes', '--queue-url', own.url, '--endpoint', endpoint]);
    const empty = await visibleCount(sqs, own.url);
    const replayed = await run(['dlq', 'replay', '--in', out, '--queue-url', own.url, '--endpoint', endpoint]);

    expect(archived.code).toBe(0);
    expect(empty).toBe(0);
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain('Sent 2 of 2');
    expect((await readAll(sqs, own.url)).map((m) => m.Body).sort()).toEqual(before);
    const lines = (await readFile(out, 'utf8')).trimEnd().split('\n');
    expect(lines.filter((line) => !line.startsWith('{"trailer"'))).toHaveLength(2);
    expect(lines.at(-1)).toMatch(/^\{"trailer":\{"v":1,"messages":2,"sha256":"[0-9a-f]{64}","final":true\}\}$/);
  });

  it('replay of an archive cut at a line boundary: exit 1, a clear error, nothing sent', async () => {
    const own = await createQueue(sqs, 'bin-cut');
    await seedDeadLetters(
      sqs,
      own.url,
      Array.from({ length: 10 }, (_, i) => ({
        reason: 'ValidationError',
        body: eventBody(`cut-${i}`),
        source: source.arn,
        originalMessageId: `cut-${i}`,
      })),
    );
    const out = join(folder, 'to-cut.jsonl');
    const cut = join(folder, 'cut.jsonl');
    const archived = await run(['dlq', 'archive', '--out', out, '--delete', '--yes', '--queue-url', own.url, '--endpoint', endpoint]);
    await writeFile(cut, `${(await readFile(out, 'utf8')).split('\n').slice(0, 7).join('\n')}\n`);

    const result = await run(['dlq', 'replay', '--in', cut, '--queue-url', own.url, '--endpoint', endpoint]);

    expect(archived.code).toBe(0);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error: ${cut} does not end with the trailer line that archive writes`);
    expect(result.stderr).toContain('(7 message line(s) are there)');
    expect(await visibleCount(sqs, own.url)).toBe(0);
  });

  it('replay that sends nothing: exit 1 with a sentence saying why', async () => {
    const file = join(folder, 'short.jsonl');
    await writeFile(file, `${JSON.stringify({ body: 'hand-written' })}\n`);

    const result = await run([
      'dlq',
      'replay',
      '--in',
      file,
      '--from-line',
      '5',
      '--no-trailer-check',
      '--queue-url',
      dlq.url,
      '--endpoint',
      endpoint,
    ]);

    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`Nothing to send: ${file} has no message at or after line 5 (its last is line 1).`);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('archive --dry-run writes nothing', async () => {
    const out = join(folder, 'dry.jsonl');

    const result = await run(['dlq', 'archive', '--out', out, '--dry-run', '--queue-url', dlq.url, '--endpoint', endpoint]);

    expect(result.code).toBe(0);
    expect(existsSync(out)).toBe(false);
  });

  it('replay of a bad archive: exit 1, the error names file and line, nothing sent', async () => {
    const bad = join(folder, 'bad.jsonl');
    await writeFile(bad, `${JSON.stringify({ body: 'fine' })}\n{"messageId":"x"}\n`);

    const result = await run(['dlq', 'replay', '--in', bad, '--no-trailer-check', '--queue-url', dlq.url, '--endpoint', endpoint]);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${bad}:2: missing "body"`);
    expect(await visibleCount(sqs, dlq.url)).toBe(3);
  });

  it('wrong queue URL: a clear error and exit 1', async () => {
    const wrong = dlq.url.replace(/[^/]+$/, 'no-such-dlq');

    const result = await run(['dlq', 'list', '--queue-url', wrong, '--endpoint', endpoint]);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error: queue not found: ${wrong}`);
  });

  it('a queue that is not a dead-letter queue: a clear error and exit 1', async () => {
    const withPolicy = await createQueue(sqs, 'source-with-policy', {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
    });

    const result = await run(['dlq', 'list', '--queue-url', withPolicy.url, '--endpoint', endpoint]);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('is not a dead-letter queue: it has a redrive policy of its own');
  });

  it('missing credentials: a clear error and exit 1', async () => {
    const result = await run(['dlq', 'list', '--queue-url', 'https://sqs.eu-west-1.amazonaws.com/123456789012/events-dlq']);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: no AWS credentials found');
  });

  it('cannot reach the endpoint: a clear error and exit 1', async () => {
    const result = await run(['dlq', 'list', '--queue-url', dlq.url, '--endpoint', 'http://127.0.0.1:9']);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('cannot reach SQS at http://127.0.0.1:9');
  });

  it('bad flags: exit 2', async () => {
    const noUrl = await run(['dlq', 'list']);
    const notUrl = await run(['dlq', 'list', '--queue-url', 'arn:aws:sqs:us-east-1:123456789012:q']);
    const badReason = await run(['dlq', 'redrive', '--reason', 'not a name', '--queue-url', dlq.url, '--endpoint', endpoint]);
    const badDuration = await run(['dlq', 'list', '--older-than', '3 days', '--queue-url', dlq.url, '--endpoint', endpoint]);
    const unknown = await run(['dlq', 'list', '--frobnicate']);
    const moveTaskWithSelection = await run([
      'dlq',
      'redrive',
      '--move-task',
      '--reason',
      'ValidationError',
      '--queue-url',
      dlq.url,
      '--endpoint',
      endpoint,
    ]);

    expect([noUrl.code, notUrl.code, badReason.code, badDuration.code, unknown.code, moveTaskWithSelection.code]).toEqual([
      2, 2, 2, 2, 2, 2,
    ]);
    expect(noUrl.stderr).toContain('--queue-url (or the DLQ_URL environment variable) is required');
    expect(notUrl.stderr).toContain('takes a queue URL, not an ARN');
    expect(badReason.stderr).toContain('--reason "not a name" cannot be a failure reason');
    expect(badDuration.stderr).toContain('units s, m, h, d, w');
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");
    expect(moveTaskWithSelection.stderr).toContain('--move-task moves every message');
  });
});
