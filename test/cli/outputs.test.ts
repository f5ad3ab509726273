/**
 * The compiled bin with a stack outputs file (`cdk deploy --outputs-file`): `outputs` (text,
 * `--shell` read back by a real shell, `--json`), the `dlq` commands and `send` finding their
 * queues in it, against this file's own SQS server; and the new commands' `--help` and
 * `--version`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsumerResources } from '../../packages/cli/src/stackOutputs.js';
import { buildCli } from './buildCli.js';
import { createQueuePair, eventBody, readAll, seedDeadLetters, startSqs, visibleCount, type FauxqsServer } from './dlqFixtures.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'idempotent-consumer.js');

let server: FauxqsServer;
let sqs: SQSClient;
let folder: string;
let outputsFile: string;
let source: { url: string; arn: string };
let dlq: { url: string; arn: string };

beforeAll(async () => {
  buildCli();
  ({ server, sqs } = await startSqs());
  folder = await mkdtemp(join(tmpdir(), 'outputs-'));
  ({ source, dlq } = await createQueuePair(sqs, 'deployed'));
  await seedDeadLetters(sqs, dlq.url, [
    { reason: 'ValidationError', body: '{"eventId": 1', source: source.arn, originalMessageId: 'o-1' },
    { reason: 'BusinessRuleViolation', body: eventBody('o-2'), source: source.arn, originalMessageId: 'o-2' },
  ]);
  // What `cdk deploy CafeOrders --outputs-file` writes (cdklocal: LocalStack's URLs; here this file's server), and a second stack.
  outputsFile = join(folder, 'cdk-outputs.json');
  await writeFile(
    outputsFile,
    JSON.stringify(
      {
        CafeOrders: {
          ConsumerName: 'cafe-orders',
          QueueUrl: source.url,
          DeadLetterQueueUrl: dlq.url,
          InboxTableName: 'CafeOrders-ConsumerInbox-1',
          OrdersTableName: 'CafeOrders-Orders-1',
          FunctionName: 'CafeOrders-ConsumerFunction-1',
          LogGroupName: 'CafeOrders-ConsumerFunctionLogGroup-1',
        },
        Network: { VpcId: 'vpc-0123' },
      },
      null,
      2,
    ),
  );
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

/** Runs the bin with no AWS credentials or configuration of the machine's. */
function run(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('AWS_') && name !== 'DLQ_URL' && name !== 'QUEUE_URL' && value !== undefined) clean[name] = value;
  }
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: root,
    env: {
      ...clean,
      HOME: folder,
      AWS_CONFIG_FILE: join(folder, 'no-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(folder, 'no-credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('idempotent-consumer outputs', () => {
  it("prints the consumer's resources as text", async () => {
    const result = await run(['outputs', '--outputs-file', outputsFile]);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('CafeOrders (consumer cafe-orders)\n');
    expect(result.stdout).toMatch(new RegExp(`DLQ_URL +${dlq.url.replaceAll('.', '\\.')}\\n`));
    expect(result.stdout).toMatch(/TABLE_NAME_ORDERS +CafeOrders-Orders-1/);
  });

  it('--shell prints exports that a shell evaluates into QUEUE_URL, DLQ_URL, LOG_GROUP_NAME, …', async () => {
    const result = await run(['outputs', '--shell', '--outputs-file', outputsFile, '--stack', 'CafeOrders']);
    expect(result.code).toBe(0);

    const echoed = execFileSync(
      'sh',
      ['-c', `eval "$EXPORTS"; printf '%s|%s|%s|%s' "$QUEUE_URL" "$DLQ_URL" "$LOG_GROUP_NAME" "$TABLE_NAME_ORDERS"`],
      {
        env: { PATH: process.env.PATH, EXPORTS: result.stdout },
        encoding: 'utf8',
      },
    );

    expect(echoed).toBe(`${source.url}|${dlq.url}|CafeOrders-ConsumerFunctionLogGroup-1|CafeOrders-Orders-1`);
  });

  it('--json prints the resources as one object', async () => {
    const result = await run(['outputs', '--json', '--outputs-file', outputsFile]);

    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout) as ConsumerResources).toMatchObject({
      stackName: 'CafeOrders',
      queueUrl: source.url,
      deadLetterQueueUrl: dlq.url,
      tables: { Orders: 'CafeOrders-Orders-1' },
    });
  });

  it('exits 2 with what the file holds when it names no such stack, and on a missing file or flag', async () => {
    const wrongStack = await run(['outputs', '--outputs-file', outputsFile, '--stack', 'Cafe']);
    const noConsumer = await run(['outputs', '--outputs-file', outputsFile, '--stack', 'Network']);
    const missing = await run(['outputs', '--outputs-file', join(folder, 'missing.json')]);
    const noFile = await run(['outputs']);
    const both = await run(['outputs', '--outputs-file', outputsFile, '--shell', '--json']);

    expect(wrongStack).toMatchObject({ code: 2, stdout: '' });
    expect(wrongStack.stderr).toContain('has no stack "Cafe"; it holds "CafeOrders", "Network"');
    expect(noConsumer.code).toBe(2);
    expect(noConsumer.stderr).toContain('stack "Network" of');
    expect(noConsumer.stderr).toContain('consumers in the file:\n  CafeOrders (consumer cafe-orders)');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing.json: no such file');
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toContain('outputs needs --outputs-file FILE');
    expect(both.code).toBe(2);
  });
});

describe('the dlq commands and send with --outputs-file', () => {
  it('dlq list finds the dead-letter queue in the outputs file', async () => {
    const result = await run(['dlq', 'list', '--outputs-file', outputsFile, '--json']);

    expect(result.code, result.stderr).toBe(0);
    const list = JSON.parse(result.stdout) as { seen: number; groups: { reason: string; count: number }[] };
    expect(list.seen).toBe(2);
    expect(list.groups.map((g) => g.reason).sort()).toEqual(['BusinessRuleViolation', 'ValidationError']);
    expect(await visibleCount(sqs, dlq.url)).toBe(2);
  });

  it('dlq refuses --queue-url with --outputs-file, and --stack without it (exit 2)', async () => {
    const both = await run(['dlq', 'list', '--outputs-file', outputsFile, '--queue-url', dlq.url]);
    const stray = await run(['dlq', 'list', '--stack', 'CafeOrders'], { DLQ_URL: dlq.url });

    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --queue-url or --outputs-file, not both');
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('--stack need --outputs-file FILE');
  });

  it('send finds the source queue in the outputs file', async () => {
    const result = await run(['send', '--outputs-file', outputsFile, '--body', eventBody('o-3')]);

    expect(result.code, result.stderr).toBe(0);
    const received = await readAll(sqs, source.url, { consume: true });
    expect(received.map((m) => m.Body)).toEqual([eventBody('o-3')]);
    expect(result.stdout).toContain(received[0]!.MessageId);
  });
});

describe('the new commands answer --help, and --version', () => {
  it.each([['invoke'], ['send'], ['outputs']])('%s --help', async (command) => {
    const result = await run([command, '--help']);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Usage: idempotent-consumer ${command} [options]`);
    expect(result.stdout).toContain('Exit codes:');
    expect(result.stderr).toBe('');
  });

  it('--version, and --help lists them', async () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };

    expect(await run(['--version'])).toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' });
    const help = await run(['--help']);
    for (const command of ['local', 'invoke', 'outputs', 'send', 'dlq']) expect(help.stdout).toMatch(new RegExp(`\\n  ${command} `));
  });
});
