/**
 * The `invoke` command: commander wiring only; the emulators and the user's handler are loaded
 * when it runs, so `--help` answers at once.
 *
 * @module
 */
import { type Command, Option } from 'commander';
import type { CliIo, CliOutcome } from '../cliIo.js';
import type { InvokeFlags } from './invokeEvent.js';

const EXAMPLES = `
Examples:
  idempotent-consumer invoke --handler src/handler.ts -e events/sqs-event.json
  idempotent-consumer invoke --handler src/handler.ts#handler --settings src/settings.ts#settings -e event.json --json | jq .response
  idempotent-consumer invoke --handler src/handler.ts -e event.json --data-dir .local-data   # twice: "duplicate" the second time

The event is what Lambda delivers: an SQS event ({"Records":[{"eventSource":"aws:sqs",…}]}) or an
Amazon MSK / self-managed Kafka event ({"eventSource":"aws:kafka"|"SelfManagedKafka","records":{…}}).
An SQS event's queue ARN is rewritten to the provisioned queue's; a FIFO queue is used when the event
comes from one. The handler's response (the partial batch response) goes to standard output, each
record's outcome (applied, duplicate, retried, dead-lettered with its reason) to standard error.
Needs Java 17 or newer for DynamoDB Local; everything listens on 127.0.0.1 only.

Exit codes: 0 the handler returned; 1 it threw or timed out, or the emulators did not start; 2 a bad
flag, handler, settings or event file.`;

/** Adds `invoke` to `program`: runs one Lambda event through a consumer's handler on the embedded emulators. */
export function addInvokeCommand(program: Command, io: CliIo, outcome: CliOutcome): void {
  program
    .command('invoke')
    .description(
      "run one Lambda event (SQS or Kafka) through a consumer's handler on embedded emulators; print the partial batch response and each record's outcome",
    )
    .requiredOption(
      '--handler <file[#export]>',
      'the module of the handler made by createIdempotentConsumer (.ts or .js); export "handler" unless named',
    )
    .requiredOption('-e, --event <file.json>', 'the event, as Lambda delivers it (SQS or Kafka)')
    .option(
      '--settings <file[#export]>',
      'the consumer settings the stack uses; export "settings" unless named (default: the library defaults)',
    )
    .option('--data-dir <dir>', "keep DynamoDB Local's data in this directory between invokes (the inbox remembers what was applied)")
    .option('--json', 'print the response, the outcomes and the resources as one JSON object on standard output')
    .addOption(
      new Option('--log-level <level>', "the consumer's log level (default: POWERTOOLS_LOG_LEVEL, else ERROR)").choices([
        'DEBUG',
        'INFO',
        'WARN',
        'ERROR',
        'SILENT',
      ]),
    )
    .addHelpText('after', EXAMPLES)
    .action(async (flags: InvokeFlags) => {
      const { invokeEvent } = await import('./invokeEvent.js');
      outcome.exitCode = await invokeEvent(flags, io);
    });
}
