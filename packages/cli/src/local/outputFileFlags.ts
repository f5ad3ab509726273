/**
 * The `local` command's `--outputs-file` and `--endpoints-file`: the files a run of a CDK app
 * (`--app … --keep-running`) writes once its stack runs locally, checked before anything starts.
 *
 * @module
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../dlq/errors.js';

/** The flags {@link checkOutputFileFlags} reads. */
export interface OutputFileFlags {
  readonly app?: string;
  readonly keepRunning?: boolean;
  /** `--outputs-file`: the stack's outputs, as `cdk deploy --outputs-file` writes them. */
  readonly outputsFile?: string;
  /** `--endpoints-file`: the emulators' endpoints, region and credentials, as `NAME=value` lines. */
  readonly endpointsFile?: string;
}

/**
 * Checks `--outputs-file` and `--endpoints-file` before the run starts: they go with `--app` (the outputs
 * come from the stack's template) and `--keep-running` (the local resources they name live only
 * while the run does); each names a file in an existing, writable directory, not a directory; the
 * two are not the same file.
 *
 * @returns the files given, as absolute paths
 * @throws UsageError (exit 2) saying which flag is wrong and why
 */
export async function checkOutputFileFlags(flags: OutputFileFlags): Promise<{ outputsFile?: string; endpointsFile?: string }> {
  const given: [name: '--outputs-file' | '--endpoints-file', value: string][] = [];
  if (flags.outputsFile !== undefined) given.push(['--outputs-file', flags.outputsFile]);
  if (flags.endpointsFile !== undefined) given.push(['--endpoints-file', flags.endpointsFile]);
  if (given.length === 0) return {};
  const [flag] = given[0]!;
  if (flags.app === undefined)
    throw new UsageError(`${flag} goes with --app (the outputs and endpoints of a CDK app's stack run locally), not with --handler`);
  if (flags.keepRunning !== true) {
    throw new UsageError(
      `${flag} needs --keep-running: the file names the run's local queues, tables and endpoints, which exist only while it keeps running`,
    );
  }
  const files: { outputsFile?: string; endpointsFile?: string } = {};
  for (const [name, value] of given) {
    if (value.trim() === '') throw new UsageError(`${name} needs a file name (e.g. ${name} cdk-outputs.json)`);
    const file = resolve(value);
    const existing = await stat(file).catch(() => undefined);
    if (existing?.isDirectory() === true) throw new UsageError(`${name} ${value}: a directory, not a file`);
    const directory = dirname(file);
    const parent = await stat(directory).catch(() => undefined);
    if (parent === undefined) throw new UsageError(`${name} ${value}: no such directory ${directory} (create it first)`);
    if (!parent.isDirectory()) throw new UsageError(`${name} ${value}: ${directory} is not a directory`);
    const writable = await access(directory, constants.W_OK).then(
      () => true,
      () => false,
    );
    if (!writable) throw new UsageError(`${name} ${value}: the directory ${directory} is not writable`);
    if (name === '--outputs-file') files.outputsFile = file;
    else files.endpointsFile = file;
  }
  if (files.outputsFile !== undefined && files.outputsFile === files.endpointsFile)
    throw new UsageError(`--outputs-file and --endpoints-file name the same file ${flags.outputsFile}: give each its own`);
  return files;
}
