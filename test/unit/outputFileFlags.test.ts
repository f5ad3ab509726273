/**
 * `local --outputs-file` and `--endpoints-file`: a bad value stops the command before anything
 * starts (no synthesis, no emulator), saying which flag is wrong and why, with exit code 2.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOutputFileFlags } from '../../packages/cli/src/local/outputFileFlags.js';
import { UsageError } from '../../packages/cli/src/dlq/errors.js';
import { runInProcess } from '../cli/inProcessCli.js';

describe('local --outputs-file and --endpoints-file', () => {
  let dir: string;
  let input: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'output-file-flags-'));
    input = join(dir, 'in.jsonl');
    await writeFile(input, '{"eventId":"e1","type":"OrderPlaced","orderId":"O-1","occurredAt":"2026-01-01T00:00:00Z"}\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  /** `local --app` of a folder that is no CDK app: a flag that passes its check would fail later, on the app, not on the flag. */
  const local = (...flags: string[]) =>
    runInProcess(['local', '--app', join(dir, 'no-app'), '--stack', 'CafeOrders', '--input', input, ...flags]);

  it('names a directory that does not exist, with exit code 2, before anything starts', async () => {
    const run = await local('--keep-running', '--outputs-file', join(dir, 'nope', 'cdk-outputs.json'));

    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`error: --outputs-file ${join(dir, 'nope', 'cdk-outputs.json')}: no such directory ${join(dir, 'nope')}`);
    expect(run.stderr).not.toContain('Synthesizing');
  });

  it('refuses a directory, and a file under something that is not a directory', async () => {
    const asDirectory = await local('--keep-running', '--endpoints-file', dir);
    expect(asDirectory.code).toBe(2);
    expect(asDirectory.stderr).toContain(`error: --endpoints-file ${dir}: a directory, not a file`);

    const underFile = await local('--keep-running', '--outputs-file', join(input, 'cdk-outputs.json'));
    expect(underFile.code).toBe(2);
    expect(underFile.stderr).toContain(`${input} is not a directory`);
  });

  it('needs --keep-running and --app: the files name local resources that live only while the run does', async () => {
    const once = await local('--outputs-file', join(dir, 'cdk-outputs.json'));
    expect(once.code).toBe(2);
    expect(once.stderr).toContain('--outputs-file needs --keep-running');

    const handler = await runInProcess([
      'local',
      '--handler',
      'examples/cafe/handler.ts',
      '--input',
      input,
      '--keep-running',
      '--endpoints-file',
      join(dir, 'local.env'),
    ]);
    expect(handler.code).toBe(2);
    expect(handler.stderr).toContain('--endpoints-file goes with --app');
  });

  it('refuses one file for both', async () => {
    const file = join(dir, 'both');
    const run = await local('--keep-running', '--outputs-file', file, '--endpoints-file', file);

    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--outputs-file and --endpoints-file name the same file');
  });

  it('passes good files on as absolute paths, and nothing without them', async () => {
    await expect(
      checkOutputFileFlags({ app: '.', keepRunning: true, outputsFile: join(dir, 'o.json'), endpointsFile: join(dir, 'e.env') }),
    ).resolves.toEqual({ outputsFile: join(dir, 'o.json'), endpointsFile: join(dir, 'e.env') });
    await expect(checkOutputFileFlags({ app: '.', keepRunning: true })).resolves.toEqual({});
    await expect(checkOutputFileFlags({ app: '.', keepRunning: true, outputsFile: ' ' })).rejects.toThrow(UsageError);
  });
});
