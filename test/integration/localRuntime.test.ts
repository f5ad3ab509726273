/**
 * The local runtime as a user runs it: `npm start` (the café) and `idempotent-consumer local` with
 * any handler (the inventory example), each with its own emulators, a report, the exactly-once
 * check, a kept `--data-dir`, faults, the Kafka source, and clear errors for bad input.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../packages/local/src/report.js';
import { body } from '../support/sqsEvents.js';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 300_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: process.cwd(),
      env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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

/** `idempotent-consumer local …` from the sources, as `npm run cli -- local …` runs it. */
const local = (args: readonly string[], env: NodeJS.ProcessEnv = {}) =>
  run(process.execPath, ['--conditions=@idempotent-consumer/source', '--import', 'tsx', 'packages/cli/src/run.ts', 'local', ...args], env);

/** The café's flags, as `npm start` passes them. */
const cafe = [
  '--handler',
  'examples/cafe/handler.ts',
  '--settings',
  'examples/cafe/settings.ts#cafeSettings',
  '--check',
  'examples/cafe/check.ts',
  '--event-time',
  'occurredAt',
];
const inventory = [
  '--handler',
  'examples/inventory/handler.ts',
  '--settings',
  'examples/inventory/settings.ts#inventorySettings',
  '--check',
  'examples/inventory/check.ts',
  '--event-time',
  'at',
];

const lastJsonLine = (stdout: string): RunReport => JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as RunReport;

describe('npm start and idempotent-consumer local (the local runtime)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-runtime-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('npm start runs the café sample: nothing lost, nothing applied twice, every poison message dead-lettered with its reason, the outbox published; --json is the last line of stdout through npm', async () => {
    const result = await run('npm', ['start', '--silent', '--', '--json']);

    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const report = lastJsonLine(result.stdout);
    expect(result.stdout.trim().split('\n')).toHaveLength(1); // nothing but the report on stdout
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report.messagesIn).toBeGreaterThan(400);
    expect(report.applied + report.duplicates + report.deadLettered).toBe(report.messagesIn);
    expect(report.duplicates).toBeGreaterThan(0);
    expect(report.retried).toBeGreaterThan(0); // the 5% transient failures npm start injects, and out-of-order events
    for (const reason of [
      'ValidationError',
      'MissingIdempotencyKey',
      'UnknownMessageType',
      'IdempotencyConflict',
      'BusinessRuleViolation',
      'RetriesExhausted',
    ]) {
      expect(report.deadLetteredByReason[reason], reason).toBeGreaterThan(0);
    }
    expect(report.outbox?.written).toBeGreaterThan(0);
    expect(report.outbox?.published).toBe(report.outbox?.written);
    expect(result.stderr).toMatch(/applied \d+, duplicates \d+/); // progress while it runs
    expect(result.stderr).toMatch(/ERROR message dead-lettered {2}.*reason=ValidationError/); // logs shortened for a person
  }, 400_000);

  it('runs another consumer (inventory reservations: its own key names, table and reason) on a FIFO queue with its own check', async () => {
    const result = await local([...inventory, '--input', 'examples/inventory/samples/reservations.jsonl', '--fifo', '--json']);

    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const report = lastJsonLine(result.stdout);
    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report.applied).toBeGreaterThan(100);
    expect(report.deadLetteredByReason.OutOfStock).toBeGreaterThan(0);
    expect(result.stderr).toMatch(/inventory-reservations \(SQS FIFO event source\)/);
  }, 300_000);

  it('runs the Kafka source, with injected DynamoDB faults, and still passes the check', async () => {
    const result = await local([
      ...inventory,
      '--input',
      'examples/inventory/samples/reservations.jsonl',
      '--source',
      'kafka',
      '--partitions',
      '2',
      '--fault',
      'transaction-conflict=0.1',
      '--fault',
      'throttle=0.05',
      '--seed',
      '3',
      '--json',
    ]);

    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const report = lastJsonLine(result.stdout);
    expect(report).toMatchObject({ source: 'kafka', check: { ok: true, problems: [] } });
    expect(report.applied).toBeGreaterThan(100);
  }, 300_000);

  it('applies nothing new on a second run over the same --data-dir, and writes the HTML report', async () => {
    const input = join(dir, 'orders.jsonl');
    const lines = [
      body.placed('e-1', 'O-1'),
      body.paid('e-2', 'O-1', 10),
      body.shipped('e-3', 'O-1'),
      body.placed('e-4', 'O-2'),
      body.paid('e-2', 'O-1', 10), // a producer duplicate
      body.cancelled('e-5', 'O-2'),
    ].map((b) => JSON.stringify(b));
    await writeFile(input, `${[...lines, '"not-json"'].join('\n')}\n`);
    const dataDir = join(dir, 'data');
    const page = join(dir, 'run.html');
    const args = [...cafe, '--input', input, '--data-dir', dataDir, '--json'];

    const first = await local([...args, '--report', page]);
    const second = await local(args);

    expect(first.code, first.stderr.slice(-3000)).toBe(0);
    expect(second.code, second.stderr.slice(-3000)).toBe(0);
    const [a, b] = [lastJsonLine(first.stdout), lastJsonLine(second.stdout)];
    expect(a).toMatchObject({
      messagesIn: 7,
      applied: 5,
      duplicates: 1,
      deadLettered: 1,
      check: { ok: true },
      outbox: { written: 1, published: 1 },
    });
    expect(b).toMatchObject({ messagesIn: 7, applied: 0, duplicates: 6, deadLettered: 1, check: { ok: true } });
    expect(b.deadLetteredByReason).toEqual({ ValidationError: 1 });
    const html = await readFile(page, 'utf8');
    expect(html).toMatch(/cafe-orders: local run \(sqs\)/);
  }, 300_000);

  it('FIFO: counts every dead letter of a message group, and sends each group in event-time order', async () => {
    const input = join(dir, 'fifo.jsonl');
    const lines = [
      body.paid('e-2', 'G-1', 10, 1), // written before its predecessor: a FIFO producer sends it after
      body.placed('e-1', 'G-1', 0),
      body.paid('e-3', 'G-1', 'ten', 2),
      body.paid('e-4', 'G-1', 'eleven', 3),
    ].map((b) => JSON.stringify(b));
    await writeFile(input, `${lines.join('\n')}\n`);

    const result = await local([...cafe, '--input', input, '--fifo', '--json']);

    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const report = lastJsonLine(result.stdout);
    expect(report).toMatchObject({ applied: 2, deadLettered: 2, retried: 0, check: { ok: true } });
    expect(report.deadLetteredByReason).toEqual({ ValidationError: 2 });
  });

  it.each([
    [
      'an input file that does not exist',
      () => [...cafe, '--input', join(dir, 'missing.jsonl')],
      /missing\.jsonl: cannot read the input file \(no such file\)/,
    ],
    [
      'an input line that is not JSON',
      async () => {
        const file = join(dir, 'bad.jsonl');
        await writeFile(file, `${JSON.stringify(body.placed('e-1', 'O-1'))}\n{not json\n`);
        return [...cafe, '--input', file];
      },
      /bad\.jsonl:2: the line is not JSON/,
    ],
    [
      '--source kafka with --fifo, as the stack refuses it',
      () => [...cafe, '--input', 'examples/cafe/samples/orders.jsonl', '--source', 'kafka', '--fifo'],
      /standard dead-letter queue/,
    ],
    [
      'a --data-dir that is a file',
      async () => {
        const file = join(dir, 'not-a-dir');
        await writeFile(file, 'x');
        return [...cafe, '--input', 'examples/cafe/samples/orders.jsonl', '--data-dir', file];
      },
      /is not a directory/,
    ],
    [
      'a rate that is not one',
      () => [...cafe, '--input', 'examples/cafe/samples/orders.jsonl', '--transient-failure-rate', 'lots'],
      /from 0 to 1/,
    ],
    [
      'an unknown fault',
      () => [...cafe, '--input', 'examples/cafe/samples/orders.jsonl', '--fault', 'meteor=0.1'],
      /unknown kind "meteor"/,
    ],
    [
      'a handler module without the export',
      () => ['--handler', 'examples/cafe/consumer.ts', '--input', 'examples/cafe/samples/orders.jsonl'],
      /has no export "handler"; it exports .*"cafeConsumerOptions"/,
    ],
    [
      'an export that is not a handler',
      () => ['--handler', 'examples/cafe/consumer.ts#cafeConsumerOptions', '--input', 'examples/cafe/samples/orders.jsonl'],
      /is not a handler made by createIdempotentConsumer/,
    ],
    [
      'a --screenshot without --report',
      () => [...cafe, '--input', 'examples/cafe/samples/orders.jsonl', '--screenshot', 'x.png'],
      /--screenshot needs --report/,
    ],
    [
      'no --handler',
      () => ['--input', 'examples/cafe/samples/orders.jsonl'],
      /local needs --handler FILE \(a handler module\) or --app COMMAND --stack NAME/,
    ],
  ])('refuses %s with a clear error and exit code 2, before sending anything', async (_what, args, message) => {
    const result = await local(await args());
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe('');
  });

  it('explains a flag given to npm start without `--` (npm keeps it as npm_config_fifo) instead of running without it', async () => {
    const result = await local([...cafe, '--input', 'examples/cafe/samples/orders.jsonl'], {
      npm_lifecycle_event: 'start',
      npm_config_fifo: 'true',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/npm kept --fifo for itself: .*`npm start -- --fifo`/);
  });
});
