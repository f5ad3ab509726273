/**
 * The `send` command: commander wiring only; the AWS SDK is loaded when it runs.
 *
 * @module
 */
import type { Command } from 'commander';
import type { CliIo, CliOutcome } from '../cliIo.js';
import { outputsFileFlags } from '../outputs/commands.js';
import type { SendFlags } from './sendMessages.js';

const collect = (value: string, previous: readonly string[] | undefined): string[] => [...(previous ?? []), value];

const EXAMPLES = `
Examples:
  idempotent-consumer send --outputs-file cdk-outputs.json --body '{"eventId":"e-1","type":"ItemReserved","sku":"SKU-1"}'
  idempotent-consumer send --outputs-file cdk-outputs.json --file events.jsonl
  idempotent-consumer send --queue-url "$QUEUE_URL" --file events.jsonl --group-id-field sku --dedup-id-field eventId
  AWS_ENDPOINT_URL=http://localhost:4566 idempotent-consumer send --outputs-file cdk-outputs.json --file events.jsonl --json

Bodies: a --body value or a line of --file is a JSON object (sent as written, byte for byte) or a
JSON string (its content is sent, for a body that is not JSON), as the local runner reads its
input. Every body is checked against the queue's maximum message size and SQS's characters before
the first one is sent: a bad one sends nothing. Messages go in SendMessageBatch requests of at most
10 messages and 1 MiB, in order.

FIFO queues: each message needs a message group, --group-id-field FIELD (a top-level body field)
or --group-id ID; its deduplication id is the SHA-256 of its body (the same body within SQS's
5-minute deduplication interval is accepted but not delivered again) unless --dedup-id-field FIELD.

Exit codes: 0 sent; 1 SQS refused a message or could not be reached (those before it were sent:
see the ids printed); 2 a bad flag, body or file (nothing was sent).`;

/** Adds `send` to `program`: sends message bodies to a consumer's source queue. */
export function addSendCommand(program: Command, io: CliIo, outcome: CliOutcome): void {
  const command = program
    .command('send')
    .description("send message bodies to a consumer's source queue (standard or FIFO): --body JSON (repeatable) or --file F.jsonl")
    .option(
      '--queue-url <url>',
      "the source queue's URL (default: the QueueUrl of --outputs-file, else the QUEUE_URL environment variable)",
    );
  outputsFileFlags(command, "the source queue's URL (its QueueUrl output)")
    .option('--body <json>', 'a message body (repeatable): a JSON object, or a JSON string for a body that is not JSON', collect)
    .option('--file <file.jsonl>', "the message bodies, JSON Lines: one body per line (the local runner's --input format)")
    .option(
      '--group-id-field <field>',
      'FIFO: the top-level body field whose value is the message group (e.g. the id of the entity the events are about)',
    )
    .option('--group-id <id>', 'FIFO: one message group for every message')
    .option(
      '--dedup-id-field <field>',
      'FIFO: the top-level body field whose value is the deduplication id (default: the SHA-256 of the body)',
    )
    .option(
      '--endpoint <url>',
      'SQS endpoint, e.g. http://localhost:4566 for LocalStack (default: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, else AWS)',
    )
    .option('--region <region>', 'AWS region (default: the region in the queue URL, else AWS_REGION / the profile)')
    .option('--json', 'print what was sent as one JSON object')
    .addHelpText('after', EXAMPLES)
    .action(async (flags: SendFlags) => {
      const { sendMessages } = await import('./sendMessages.js');
      await sendMessages(flags, io, outcome);
    });
}
