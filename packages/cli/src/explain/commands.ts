/**
 * The `explain` command: commander wiring only; reading the inbox is loaded when it runs.
 *
 * @module
 */
import type { Command } from 'commander';
import type { CliIo, CliOutcome } from '../cliIo.js';
import { outputsFileFlags } from '../outputs/commands.js';
import type { ExplainFlags } from './explainItem.js';

const EXAMPLES = `
Examples:
  idempotent-consumer explain --table accounts --key '{"accountId":"A-1"}'
  idempotent-consumer explain --table accounts --key '{"accountId":"A-1"}' --outputs-file cdk-outputs.json --json

It needs provenance on (settings.idempotency.provenance: the function's PROVENANCE=true): each
applied inbox row then records the keys its message wrote. It reads the whole inbox with a Scan
filtered by contains(wrote, :key): about (inbox size / 4 KB) read units, half that unless
--consistent (docs/performance.md). Only messages still in the inbox window are found.

Exit codes: 0 listed (possibly none); 1 no inbox row records what it wrote (provenance is off),
or DynamoDB failed; 2 a bad flag: --key not a JSON object, or not the table's key attributes.`;

/** Adds `explain` to `program`: the messages that wrote an item, from the inbox (provenance). */
export function addExplainCommand(program: Command, io: CliIo, outcome: CliOutcome): void {
  outputsFileFlags(
    program.command('explain').description('list the messages that wrote an item of a business table, newest first (needs provenance on)'),
    'the inbox and business table names',
  )
    .requiredOption('--table <logical name>', "the business table, by its logical name (a key of the consumer's tables)")
    .requiredOption('--key <json>', 'the item\'s key as a JSON object, e.g. \'{"accountId":"A-1"}\' (binary values as {"B":"<base64>"})')
    .option('--json', 'print the result as JSON')
    .option('--consistent', 'a strongly consistent Scan (twice the read units)')
    .option(
      '--endpoint <url>',
      'DynamoDB endpoint, e.g. http://localhost:8000 for the local emulator (default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, else AWS)',
    )
    .option('--region <region>', 'AWS region (default: AWS_REGION / the profile)')
    .addHelpText('after', EXAMPLES)
    .action(async (flags: ExplainFlags) => {
      const { explainCommand } = await import('./explainItem.js');
      outcome.exitCode = await explainCommand(flags, io);
    });
}
