/**
 * The real command line, run as an operator runs it: `node bin/idempotent-consumer.js dlq ...`
 * in a child process, against this file's own fauxqs server.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueue, createQueuePair, eventBody, readAll, seedDeadLetters, startSqs, visibleCount, type FauxqsServer } from './dlqFixtures.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'idempotent-consumer.js');

let server: FauxqsServer;
let sqs: SQSClient;
let endpoint: string;
let folder: string;
let source: { url: string; arn: string };
let dlq: { url: string; arn: string };

beforeAll(async () => {
  ({ server, sqs, endpoint } = await startSqs());
  folder = await mkdtemp(join(tmpdir(), 'dlq-bin-'));
  ({ source, dlq } = await createQueuePair(sqs, 'orders'));
  await seedDeadLetters(sqs, dlq.url, [
    { reason: 'ValidationError', body: '{"eventId": 1', source: source.arn, originalMessageId: 's-1' },
    { reason: 'ValidationError', body: eventBody('s-2', { points: 'many' }), source: source.arn, originalMessageId: 's-2' },
    { reason: 'BusinessRuleViolation', body: eventBody('s-3'), source: source.arn, originalMessageId: 's-3' },
  ]);
});

afterAll(async () => {
  sqs.destroy();
  await server.stop();
  await rm(folder, { recursive: true, force: true });
});

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the bin with a clean AWS environment (no credentials, no config files, no instance metadata). */
function run(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('AWS_') && name !== 'DLQ_URL' && value !== undefined) clean[name] = value;
  }
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: root,
    env: {
      ...clean,
      HOME: folder,
      AWS_CONFIG_FILE: join(folder, 'no-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(folder, 'no-credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
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

describe('idempotent-consumer dlq (the bin)', () => {
  it('list: groups by reason, exit 0, and leaves every message visible', async () => {
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

  it('show ID: prints the body and every attribute', async () => {
    const result = await run(['dlq', 'show', 's-2', '--queue-url', dlq.url, '--endpoint', endpoint]);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain(eventBody('s-2', { points: 'many' }));
    expect(result.stdout).toMatch(/failureReason\s+String\s+ValidationError/);
  });

  it('redrive --reason ValidationError --dry-run: exit 0, nothing changes', async () => {
    const result = await run(['dlq', 'redrive', '--reason', 'ValidationError', '--dry-run', '--queue-url', dlq.url, '--endpoint', endpoint]);

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
    expect((await readAll(sqs, own.url)).map((m) => m.Body).sort()).toEqual(before);
    expect((await readFile(out, 'utf8')).trimEnd().split('\n')).toHaveLength(2);
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

    const result = await run(['dlq', 'replay', '--in', bad, '--queue-url', dlq.url, '--endpoint', endpoint]);

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
    const result = await run(['dlq', 'list', '--queue-url', 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq']);

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
    const badReason = await run(['dlq', 'redrive', '--reason', 'Typo', '--queue-url', dlq.url, '--endpoint', endpoint]);
    const badDuration = await run(['dlq', 'list', '--older-than', '3 days', '--queue-url', dlq.url, '--endpoint', endpoint]);
    const unknown = await run(['dlq', 'list', '--frobnicate']);

    expect([noUrl.code, notUrl.code, badReason.code, badDuration.code, unknown.code]).toEqual([2, 2, 2, 2, 2]);
    expect(noUrl.stderr).toContain('--queue-url (or the DLQ_URL environment variable) is required');
    expect(notUrl.stderr).toContain('takes a queue URL, not an ARN');
    expect(badReason.stderr).toContain('unknown --reason "Typo"');
    expect(badDuration.stderr).toContain('units s, m, h, d, w');
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");
  });
});
