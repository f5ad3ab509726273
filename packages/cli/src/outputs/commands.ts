/**
 * The `outputs` command: commander wiring only; reading the outputs file is loaded when it runs.
 *
 * @module
 */
import type { Command } from 'commander';
import type { CliIo, CliOutcome } from '../cliIo.js';
import type { OutputsFileFlags } from '../stackOutputs.js';

/**
 * Adds `--outputs-file`, `--stack` and `--consumer` to `command`.
 *
 * @param what - what the file gives the command, for the help text (e.g. "the dead-letter queue's URL")
 */
export function outputsFileFlags(command: Command, what: string): Command {
  return command
    .option('--outputs-file <file>', `read ${what} from the file \`cdk deploy --outputs-file FILE\` (or cdklocal) wrote`)
    .option('--stack <name>', 'with --outputs-file: the stack, when the file holds several consumers')
    .option('--consumer <name>', 'with --outputs-file: the consumer (its ConsumerName output or key prefix), when a stack holds several');
}

const EXAMPLES = `
Examples:
  npx cdk deploy MyStack --outputs-file cdk-outputs.json
  idempotent-consumer outputs --outputs-file cdk-outputs.json
  eval "$(idempotent-consumer outputs --shell --outputs-file cdk-outputs.json)"   # QUEUE_URL, DLQ_URL, FUNCTION_NAME, …
  idempotent-consumer outputs --outputs-file cdk-outputs.json --stack MyStack --json | jq -r .queueUrl

The outputs are those IdempotentConsumer.addOutputs() adds to the stack (config/outputKeys.ts).

Exit codes: 0 printed; 2 a bad flag, or the file is missing, not an outputs file, or does not
name one consumer (the message lists what it holds).`;

/** Adds `outputs` to `program`: prints a deployed consumer's resources from a stack outputs file. */
export function addOutputsCommand(program: Command, io: CliIo, _outcome: CliOutcome): void {
  outputsFileFlags(
    program
      .command('outputs')
      .description(
        "print a deployed consumer's resources (queues, tables, function, log group, dashboard) from the file `cdk deploy --outputs-file` writes",
      ),
    'the resources',
  )
    .option('--shell', 'print `export NAME=\'value\'` lines for eval "$(…)" in sh, bash or zsh')
    .option('--json', 'print the resources as one JSON object')
    .addHelpText('after', EXAMPLES)
    .action(async (flags: OutputsFileFlags & { shell?: boolean; json?: boolean }) => {
      const { printOutputs } = await import('./printOutputs.js');
      await printOutputs(flags, io);
    });
}
