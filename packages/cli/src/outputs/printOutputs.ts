/**
 * The `outputs` command's action.
 *
 * @module
 */
import type { CliIo } from '../cliIo.js';
import { UsageError } from '../dlq/errors.js';
import {
  type ConsumerResources,
  consumerFromFlags,
  describeConsumer,
  formatShellExports,
  type OutputsFileFlags,
  shellVariablesOf,
} from '../stackOutputs.js';

/**
 * Reads the consumer's resources from `--outputs-file` and prints them: as text (one resource a
 * line), as `export` lines (`--shell`) or as JSON (`--json`).
 *
 * @throws UsageError (exit 2) when `--outputs-file` is missing, both `--shell` and `--json` are
 *   given, or the file does not name one consumer
 */
export async function printOutputs(
  flags: OutputsFileFlags & { readonly shell?: boolean; readonly json?: boolean },
  io: CliIo,
): Promise<void> {
  const consumer = await consumerFromFlags(flags);
  if (consumer === undefined) throw new UsageError('outputs needs --outputs-file FILE (the file `cdk deploy --outputs-file FILE` wrote)');
  if (flags.shell === true && flags.json === true) throw new UsageError('give --shell or --json, not both');
  if (flags.shell === true) io.stdout.write(`${formatShellExports(consumer)}\n`);
  else if (flags.json === true) io.stdout.write(`${JSON.stringify(consumer, null, 2)}\n`);
  else io.stdout.write(formatResources(consumer));
}

/** The resources as aligned `variable  value` lines under the consumer's name. */
export function formatResources(consumer: ConsumerResources): string {
  const rows = shellVariablesOf(consumer);
  const width = Math.max(...rows.map(([name]) => name.length));
  return `${describeConsumer(consumer)}\n${rows.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`).join('\n')}\n`;
}
