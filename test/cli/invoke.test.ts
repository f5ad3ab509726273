/**
 * `idempotent-consumer invoke` as a user runs it from the sources (`npm run cli -- invoke …`), in
 * a child process that starts its own emulators: the café handler with the events of
 * `test/events/`, a kept `--data-dir` (applied, then duplicate), the Kafka event, a handler that
 * throws, and refusals before anything starts.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InvokeResult } from '../../packages/cli/src/invoke/invokeEvent.js';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `idempotent-consumer invoke …` from the sources, as `npm run cli -- invoke …` runs it. */
function invoke(args: readonly string[], timeoutMs = 240_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@idempotent-consumer/source', '--import', 'tsx', 'packages/cli/src/run.ts', 'invoke', ...args],
      {
        cwd: process.cwd(),
        env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new Error(`invoke ${args.join(' ')} did not finish in ${timeoutMs} ms:\n${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const cafe = ['--handler', 'examples/cafe/handler.ts', '--settings', 'examples/cafe/settings.ts#cafeSettings'];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'invoke-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('idempotent-consumer invoke', () => {
  it('runs the standard SQS event, then again over the same --data-dir: applied, then duplicate', async () => {
    const dataDir = join(dir, 'data');

    const first = await invoke([...cafe, '-e', 'test/events/sqs-event-standard.json', '--data-dir', dataDir]);

    expect(first.code, first.stderr).toBe(0);
    // stdout is the handler's response, nothing else: the partial batch response.
    expect(JSON.parse(first.stdout)).toEqual({ batchItemFailures: [{ itemIdentifier: '059f36b4-87a3-44ab-83d2-661975830a7d' }] });
    expect(first.stderr).toMatch(/retried +059f36b4-87a3-44ab-83d2-661975830a7d {2}key e-1 {2}PredecessorNotApplied/);
    expect(first.stderr).toMatch(/applied +2e1424d4-f796-459a-8184-9c92662be6da {2}key e-2/);
    expect(first.stderr).toContain(
      "Lambda's event source mapping would read the response as: 1 of 2 messages reported in batchItemFailures",
    );

    const second = await invoke([...cafe, '-e', 'test/events/sqs-event-standard.json', '--data-dir', dataDir, '--json']);

    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim().split('\n')).toHaveLength(1);
    const result = JSON.parse(second.stdout) as InvokeResult;
    expect(result.invocation).toBe('returned');
    expect(result.source).toBe('sqs');
    // The event's queue ARN (OrdersQueue) was rewritten to the provisioned queue's.
    expect(result.queueArn).toMatch(/^arn:aws:sqs:us-east-1:\d{12}:Queue$/);
    expect(result.records.map((r) => [r.messageId, r.outcome, r.idempotencyKey, r.reportedAsFailure])).toEqual([
      ['059f36b4-87a3-44ab-83d2-661975830a7d', 'retried', 'e-1', true],
      ['2e1424d4-f796-459a-8184-9c92662be6da', 'duplicate', 'e-2', false],
    ]);
    expect(result.judgement).toMatchObject({ kind: 'partial', failedIds: ['059f36b4-87a3-44ab-83d2-661975830a7d'] });
  }, 600_000);

  it('runs the MSK event (C8): the first record waits for its predecessor, the partition stops there, with Kafka item identifiers', async () => {
    const run = await invoke([...cafe, '-e', 'test/events/msk-event-c8.json', '--json']);

    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as InvokeResult;
    expect(result.source).toBe('kafka');
    expect(result.response).toEqual({
      batchItemFailures: [10, 11, 12, 13].map((offset) => ({ itemIdentifier: { partition: 'orders-0', offset } })),
    });
    expect(result.records.map((r) => [r.messageId, r.outcome, r.errorType])).toEqual([
      ['orders-0@10', 'retried', 'PredecessorNotApplied'],
      ['orders-0@11', 'retried', 'NotAttempted'],
      ['orders-0@12', 'retried', 'NotAttempted'],
      ['orders-0@13', 'retried', 'NotAttempted'],
    ]);
  }, 300_000);

  it('exits 1 when the handler throws, and says what it threw', async () => {
    const handlerFile = join(dir, 'throwingHandler.mjs');
    await writeFile(
      handlerFile,
      [
        'const fail = async () => { throw new TypeError("the handler broke"); };',
        'export const handler = Object.assign(fail, { sqs: fail, kafka: fail, options: { tables: {} }, withRuntime: () => ({ sqs: fail, kafka: fail }) });',
      ].join('\n'),
    );

    const run = await invoke(['--handler', handlerFile, '-e', 'test/events/sqs-event-standard.json']);

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('the handler threw TypeError: the handler broke');
    expect(run.stderr).toMatch(/not run +059f36b4/);
  }, 300_000);

  it('refuses a bad event, handler or flag before starting anything (exit 2)', async () => {
    const notAnEvent = join(dir, 'not-an-event.json');
    await writeFile(notAnEvent, JSON.stringify({ Records: [{ eventSource: 'aws:sns', messageId: 'm-1', body: '{}' }] }));
    const notJson = join(dir, 'not-json.json');
    await writeFile(notJson, '{"Records": [');

    const cases: [string[], RegExp][] = [
      [[...cafe, '-e', notAnEvent], /Records\[0\]\.eventSource is "aws:sns", not "aws:sqs"; expected an SQS event/],
      [[...cafe, '-e', notJson], /not-json\.json: not JSON/],
      [[...cafe, '-e', join(dir, 'missing.json')], /missing\.json: no such file/],
      [
        ['--handler', 'examples/cafe/settings.ts', '-e', 'test/events/sqs-event-standard.json'],
        /has no export "handler"; it exports "cafeSettings", "cafeTables"/,
      ],
      [['--handler', 'examples/cafe/handler.ts'], /required option '-e, --event <file.json>' not specified/],
    ];
    for (const [args, message] of cases) {
      const run = await invoke(args);
      expect(run.stderr, args.join(' ')).toMatch(message);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).not.toContain('starting DynamoDB Local');
    }
  }, 300_000);
});
