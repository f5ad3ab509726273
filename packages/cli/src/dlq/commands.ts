/**
 * The `dlq` command and its subcommands: commander wiring only. Each action parses its flags,
 * loads its command module (lazily: `--help` and `--version` load no AWS SDK), creates the SQS
 * client, calls the command's function (`listDeadLetters`, ...), and prints the result as text
 * or, with `--json`, as JSON.
 *
 * @module
 */
import { type Command, InvalidArgumentError } from 'commander';
import { builtInFailureReasons } from 'idempotent-consumer/dlq';
import type { Confirm, DlqContext } from './context.js';
import type { DryRunConsumer } from './dryRunConsumer.js';
import type { ResolvedConnection } from './sqsClient.js';
import { parseDuration } from './duration.js';
import { UsageError } from './errors.js';
import type { CliIo, CliOutcome } from '../cliIo.js';
import { outputsFileFlags } from '../outputs/commands.js';
import type { OutputsFileFlags } from '../stackOutputs.js';
import { deadLetterQueueUrlFrom, parseQueueUrl } from './queueUrl.js';
import { parseReasons, type MessageSelection } from './selection.js';

export type { CliIo, CliOutcome } from '../cliIo.js';

interface CommonFlags extends OutputsFileFlags {
  queueUrl?: string;
  endpoint?: string;
  region?: string;
  json?: boolean;
  dlqCheck: boolean;
  visibilityTimeout: number;
  max?: number;
}

/** `--on-failure-bucket` (list, redrive): the Kafka mapping's S3 on-failure destination. */
interface OnFailureBucketFlags {
  onFailureBucket?: string;
}

interface SelectionFlags {
  reason?: string[];
  id?: string[];
  olderThan?: string;
}

const SAFETY_NOTE = `
Nothing is lost: a message is deleted from a queue only after it was sent to its destination
(redrive) or written and flushed to the archive file (archive --delete). A command interrupted
between the two (Ctrl-C, a crash) can leave a duplicate in the destination, never a loss; the
consumer's inbox makes a redriven duplicate harmless. Messages a command only looks at are made
visible again when it ends (after a hard kill: when --visibility-timeout runs out).`;

const DRY_RUN_NOTE = `
Two dry runs:
  --dry-run                      what would move where (targets, messages that cannot go back); reads only SQS
  --dry-run --handler FILE       also what each message would do if redriven now, decided by the consumer's own
                                 code on the state stored now: would apply (its writes, outgoing messages and
                                 side effects), duplicate (already applied at …), outside the inbox window (would
                                 apply again), or would fail (its reason). Reads the consumer's tables (names from
                                 --outputs-file or the function's variables CONSUMER_NAME, INBOX_TABLE_NAME,
                                 TABLE_NAME_<NAME>, INBOX_TTL_SECONDS; DynamoDB at AWS_ENDPOINT_URL_DYNAMODB);
                                 writes nothing, runs no side effect.`;

const EXIT_CODES = `
Exit codes: 0 done; 1 an error, or nothing that was asked for moved (the last line says why);
2 a bad flag; 130 interrupted.`;

/**
 * Adds `dlq` with `list`, `show`, `redrive`, `archive` and `replay` to `program`.
 *
 * @param io - where output goes and answers come from
 * @param outcome - receives the exit code the result calls for
 */
export function addDlqCommands(program: Command, io: CliIo, outcome: CliOutcome): void {
  const dlq = program
    .command('dlq')
    .description('inspect, redrive, archive and replay the dead-letter queue of any consumer built with the library (SQS)')
    .addHelpText('after', SAFETY_NOTE + EXIT_CODES);

  const print = (flags: CommonFlags, result: unknown, text: string): void => {
    io.stdout.write(`${flags.json === true ? JSON.stringify(result, null, 2) : text}\n`);
  };
  /** Exit 1 when nothing that was asked for moved; with --json the sentence goes to stderr too. */
  const nothingMoved = (flags: CommonFlags, sentence: string | undefined): void => {
    if (sentence === undefined) return;
    outcome.exitCode = 1;
    if (flags.json === true) io.stderr.write(`${sentence}\n`);
  };

  selectionFlags(common(dlq.command('list')))
    .description(
      'list the messages grouped by failure reason (those the queue\'s redrive policy moved under "none"), with error, ' +
        "source, age, attempts and the producer's attributes; consumes nothing",
    )
    .option(
      '--on-failure-bucket <s3-uri>',
      "list instead the Kafka on-failure records of the mapping's S3 on-failure destination (s3://BUCKET[/PREFIX]): why " +
        'Lambda gave up, the offsets, and the records each keeps whole; S3 at --endpoint, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL',
    )
    .action(async (flags: CommonFlags & SelectionFlags & OnFailureBucketFlags) => {
      if (flags.onFailureBucket !== undefined) {
        const { listOnFailureRecords, formatOnFailureList } = await import('./onFailureBucket.js');
        const { location, store } = await onFailureBucket(flags);
        const result = await listOnFailureRecords(store, location, flags.max !== undefined ? { maxObjects: flags.max } : {});
        print(flags, result, formatOnFailureList(result));
        return;
      }
      const [{ listDeadLetters }, { formatList }] = await Promise.all([import('./list.js'), import('./output.js')]);
      const { context, queueUrl } = await setUp(flags);
      const result = await listDeadLetters(context, { queueUrl, selection: selection(flags), ...receive(flags), dlqCheck: flags.dlqCheck });
      print(flags, result, formatList(result));
      if (io.signal?.aborted === true) outcome.exitCode = 130;
    });

  common(dlq.command('show'))
    .description('print one message in full: body (read back from S3 when the consumer offloaded it) and every attribute')
    .argument('<id>', "the dead-letter message id, or the consumer's original message id")
    .action(async (id: string, flags: CommonFlags) => {
      const [{ showDeadLetter }, { formatShow }] = await Promise.all([import('./show.js'), import('./output.js')]);
      const { context, queueUrl } = await setUp(flags);
      const result = await showDeadLetter(context, { queueUrl, id, ...receive(flags), dlqCheck: flags.dlqCheck });
      print(flags, result, formatShow(result));
      if (result.message.offloaded?.error !== undefined) outcome.exitCode = 1;
    });

  const redrive = common(dlq.command('redrive'))
    .addHelpText('after', SAFETY_NOTE + EXIT_CODES)
    .description(
      'move messages back to their source queue by receive → send → delete: the original body (read back from S3 ' +
        "when offloaded), the producer's attributes restored exactly, every ic.* attribute removed, the FIFO group kept. " +
        'A Kafka dead letter goes back to the consumer by invoking its function (--function) with the original record. ' +
        'A message that cannot go back as it was stays in the DLQ, with the reason.',
    )
    .option('--to <url>', "send to this queue instead of each message's source queue")
    .option(
      '--on-failure-bucket <s3-uri>',
      "redrive instead the Kafka batches the mapping's S3 on-failure destination kept whole (s3://BUCKET[/PREFIX]): the " +
        'records given up are sent to --function in one Invoke per object, and the object is deleted once acknowledged',
    )
    .option(
      '--function <name>',
      "the consumer's Lambda function (name or ARN): a Kafka dead letter is redriven by invoking it with the original record " +
        '(its coordinates kept, marked as a redrive); default: the FunctionName output of --outputs-file, else FUNCTION_NAME. ' +
        'Lambda at AWS_ENDPOINT_URL_LAMBDA when set (what `local --keep-running` prints)',
    )
    .option('--rate <n>', 'messages per second (move task: 1 to 500)', positiveInteger)
    .option(
      '--move-task',
      'move every message with one SQS message move task (StartMessageMoveTask) instead: fast, server side, but SQS ' +
        'moves each message as it is (ic.* attributes kept, offloaded bodies stay S3 pointers); no selection',
    )
    .option('--no-wait', 'with --move-task: start the task and return without waiting for it')
    .option('--poll-interval <seconds>', 'seconds between progress reports of the move task', positiveInteger, 5)
    .option('--dry-run', 'show what would move; change nothing (with --handler: what each message would do)')
    .option('-y, --yes', 'do not ask for confirmation');
  windowFlags(redrive);
  handlerFlags(redrive).addHelpText('after', DRY_RUN_NOTE);
  selectionFlags(redrive).action(
    async (
      flags: CommonFlags &
        SelectionFlags &
        OnFailureBucketFlags & {
          to?: string;
          function?: string;
          rate?: number;
          moveTask?: boolean;
          wait: boolean;
          pollInterval: number;
          dryRun?: boolean;
          yes?: boolean;
        } & HandlerFlags &
        WindowFlags,
    ) => {
      if (flags.onFailureBucket !== undefined) {
        if (flags.to !== undefined || flags.moveTask === true || flags.handler !== undefined)
          throw new UsageError(
            '--on-failure-bucket redrives by invoking --function: it cannot be combined with --to, --move-task or --handler',
          );
        const [{ redriveOnFailureRecords, formatOnFailureRedrive }, { createFunctionInvoker }] = await Promise.all([
          import('./onFailureBucket.js'),
          import('./functionInvoker.js'),
        ]);
        const functionName = await functionNameFrom(flags);
        if (functionName === undefined)
          throw new UsageError('--on-failure-bucket needs --function NAME (or FUNCTION_NAME, or --outputs-file)');
        const { location, store } = await onFailureBucket(flags);
        // No queue here: Lambda in --region, else the environment's (dummy credentials for a loopback endpoint).
        const region = flags.region ?? (io.env.AWS_REGION || io.env.AWS_DEFAULT_REGION || undefined);
        const connection = { endpoint: undefined, region, dummyCredentials: false };
        const result = await redriveOnFailureRecords(store, createFunctionInvoker({ connection, env: io.env }), {
          location,
          functionName,
          ...(flags.max !== undefined ? { maxObjects: flags.max } : {}),
          dryRun: flags.dryRun === true,
          yes: flags.yes === true,
          confirm: await confirmer(),
        });
        print(flags, result, formatOnFailureRedrive(result));
        if (result.failed.length > 0 || result.notDeleted.length > 0 || result.cancelled) outcome.exitCode = 1;
        return;
      }
      if (flags.to !== undefined) parseQueueUrl(flags.to, '--to');
      const sel = selection(flags);
      if (checkHandlerFlags(flags)) {
        if (flags.moveTask === true) throw new UsageError('--handler decides each message: it cannot be combined with --move-task');
        const [{ decideRedrive }, { formatDecisions }] = await Promise.all([import('./dryRunDecisions.js'), import('./output.js')]);
        const { context, queueUrl, connection } = await setUp(flags);
        const consumer = await dryRunConsumer(flags, flags, connection);
        const result = await decideRedrive(context, consumer, { queueUrl, selection: sel, ...receive(flags), dlqCheck: flags.dlqCheck });
        print(flags, result, formatDecisions(result));
        nothingMoved(flags, result.nothingMoved);
        if (result.interrupted) outcome.exitCode = 130;
        return;
      }
      const [{ redriveDeadLetters }, { formatRedrive }, { createFunctionInvoker }] = await Promise.all([
        import('./redrive.js'),
        import('./output.js'),
        import('./functionInvoker.js'),
      ]);
      const { context, queueUrl, connection } = await setUp(flags);
      const functionName = await functionNameFrom(flags);
      const result = await redriveDeadLetters(
        { ...context, functions: createFunctionInvoker({ connection, env: io.env }) },
        {
          queueUrl,
          selection: sel,
          ...(flags.to !== undefined ? { to: flags.to } : {}),
          ...(functionName !== undefined ? { functionName } : {}),
          ...(flags.rate !== undefined ? { ratePerSecond: flags.rate } : {}),
          useMoveTask: flags.moveTask === true,
          wait: flags.wait,
          pollIntervalSeconds: flags.pollInterval,
          dryRun: flags.dryRun === true,
          yes: flags.yes === true,
          confirm: await confirmer(),
          ...receive(flags),
          dlqCheck: flags.dlqCheck,
          ...(await windowOptions(flags, io.env)),
        },
      );
      print(flags, result, formatRedrive(result));
      if (result.failed.length > 0 || result.notDeleted.length > 0 || result.cancelled) outcome.exitCode = 1;
      nothingMoved(flags, result.nothingMoved);
      if (result.interrupted) outcome.exitCode = 130;
    },
  );

  const archive = common(dlq.command('archive'))
    .addHelpText('after', SAFETY_NOTE + EXIT_CODES)
    .description(
      'write messages to a JSON Lines file (one message per line, all it takes to replay it, offloaded bodies included), ' +
        'ending with a trailer line (count and SHA-256) that replay checks; optionally delete them',
    )
    .requiredOption('--out <file>', 'the file to write (must not exist, unless --force)')
    .option('--delete', 'delete the archived messages from the queue once the file is on disk')
    .option('--force', 'overwrite --out if it exists')
    .option('--dry-run', 'count what would be archived; write and delete nothing')
    .option('-y, --yes', 'do not ask before deleting');
  selectionFlags(archive).action(
    async (flags: CommonFlags & SelectionFlags & { out: string; delete?: boolean; force?: boolean; dryRun?: boolean; yes?: boolean }) => {
      const sel = selection(flags);
      const [{ archiveDeadLetters }, { formatArchive }] = await Promise.all([import('./archive.js'), import('./output.js')]);
      const { context, queueUrl } = await setUp(flags);
      const result = await archiveDeadLetters(context, {
        queueUrl,
        out: flags.out,
        delete: flags.delete === true,
        force: flags.force === true,
        selection: sel,
        dryRun: flags.dryRun === true,
        yes: flags.yes === true,
        confirm: await confirmer(),
        ...receive(flags),
        dlqCheck: flags.dlqCheck,
      });
      print(flags, result, formatArchive(result));
      if (result.notDeleted.length > 0 || result.notArchived.length > 0 || result.cancelled || result.incomplete) outcome.exitCode = 1;
      if (result.interrupted) outcome.exitCode = 130;
    },
  );

  const replay = common(dlq.command('replay'))
    .description(
      'send the messages of an archive back to the dead-letter queue (or --to), body and attributes as archived. ' +
        'A file that does not end with its trailer (cut, or its archive stopped) or has a bad line sends nothing.',
    )
    .requiredOption('--in <file>', 'the archive to send')
    .option('--to <url>', 'send to this queue instead of --queue-url (no dead-letter queue check)')
    .option('--from-line <n>', 'start at this line (resume an interrupted replay)', positiveInteger)
    .option('--skip-invalid', 'send the good lines of a file with bad ones')
    .option('--no-trailer-check', 'send a file without a valid final trailer (written by hand, or its archive stopped)')
    .option('--rate <n>', 'messages per second', positiveInteger)
    .option('--dry-run', 'check the file and the queue; send nothing (with --handler: what each message would do if redriven)')
    .addHelpText('after', EXIT_CODES);
  windowFlags(replay);
  handlerFlags(replay)
    .addHelpText('after', DRY_RUN_NOTE.replace('redriven now', 'replayed, then redriven now'))
    .action(
      async (
        flags: CommonFlags & {
          in: string;
          to?: string;
          fromLine?: number;
          skipInvalid?: boolean;
          trailerCheck: boolean;
          rate?: number;
          dryRun?: boolean;
        } & HandlerFlags &
          WindowFlags,
      ) => {
        const decided = checkHandlerFlags(flags);
        const target = flags.to ?? (await deadLetterQueueUrlFrom(flags, io.env));
        if (target === undefined || target === '') throw new UsageError('replay needs --queue-url, --outputs-file (or DLQ_URL) or --to');
        parseQueueUrl(
          target,
          flags.to !== undefined
            ? '--to'
            : flags.queueUrl === undefined && flags.outputsFile !== undefined
              ? 'the DeadLetterQueueUrl output'
              : '--queue-url',
        );
        const { context, connection } = await setUp({
          ...flags,
          queueUrl: target,
          outputsFile: undefined,
          stack: undefined,
          consumer: undefined,
        });
        if (decided) {
          const [{ decideReplay }, { formatDecisions }] = await Promise.all([import('./dryRunDecisions.js'), import('./output.js')]);
          const consumer = await dryRunConsumer(flags, flags, connection);
          const result = await decideReplay(context, consumer, {
            in: flags.in,
            queueUrl: target,
            dlqCheck: flags.to === undefined && flags.dlqCheck,
            ...(flags.fromLine !== undefined ? { fromLine: flags.fromLine } : {}),
            skipInvalid: flags.skipInvalid === true,
            noTrailerCheck: !flags.trailerCheck,
          });
          print(flags, result, formatDecisions(result));
          nothingMoved(flags, result.nothingMoved);
          if (result.interrupted) outcome.exitCode = 130;
          return;
        }
        const [{ replayArchive }, { formatReplay }] = await Promise.all([import('./replay.js'), import('./output.js')]);
        const result = await replayArchive(context, {
          in: flags.in,
          queueUrl: target,
          dlqCheck: flags.to === undefined && flags.dlqCheck,
          ...(flags.fromLine !== undefined ? { fromLine: flags.fromLine } : {}),
          skipInvalid: flags.skipInvalid === true,
          noTrailerCheck: !flags.trailerCheck,
          dryRun: flags.dryRun === true,
          ...(await windowOptions(flags, io.env)),
          ...(flags.rate !== undefined ? { ratePerSecond: flags.rate } : {}),
        });
        print(flags, result, formatReplay(result));
        if (result.failed !== undefined || result.invalid.length > 0) outcome.exitCode = 1;
        nothingMoved(flags, result.nothingMoved);
        if (result.interrupted) outcome.exitCode = 130;
      },
    );

  async function setUp(flags: CommonFlags): Promise<{ context: DlqContext; queueUrl: string; connection: ResolvedConnection }> {
    const queueUrl = await deadLetterQueueUrlFrom(flags, io.env);
    if (queueUrl === undefined)
      throw new UsageError(
        '--queue-url (or the DLQ_URL environment variable) is required, or --outputs-file FILE (the file `cdk deploy --outputs-file` wrote)',
      );
    parseQueueUrl(
      queueUrl,
      flags.queueUrl === undefined && flags.outputsFile !== undefined ? 'the DeadLetterQueueUrl output' : '--queue-url',
    );
    const [{ createSqsClient }, { createPayloadStore }] = await Promise.all([import('./sqsClient.js'), import('./payloadStore.js')]);
    const { sqs, connection } = createSqsClient({
      queueUrl,
      env: io.env,
      ...(flags.endpoint !== undefined ? { endpoint: flags.endpoint } : {}),
      ...(flags.region !== undefined ? { region: flags.region } : {}),
    });
    outcome.queueUrl = queueUrl;
    if (connection.endpoint !== undefined) outcome.endpoint = connection.endpoint;
    const context: DlqContext = {
      sqs,
      payloads: createPayloadStore({ connection, env: io.env }),
      log: (line) => io.stderr.write(`${line}\n`),
      ...(io.signal !== undefined ? { signal: io.signal } : {}),
    };
    return { context, queueUrl, connection };
  }

  /** The consumer `--handler` names, its resources from `--outputs-file` or the environment. */
  async function dryRunConsumer(
    flags: HandlerFlags & WindowFlags,
    outputs: OutputsFileFlags,
    connection: ResolvedConnection,
  ): Promise<DryRunConsumer> {
    const [{ loadDryRunConsumer }, { consumerFromFlags }] = await Promise.all([
      import('./dryRunConsumer.js'),
      import('../stackOutputs.js'),
    ]);
    const resources = await consumerFromFlags(outputs);
    return loadDryRunConsumer({
      handler: flags.handler!,
      ...(flags.settings !== undefined ? { settings: flags.settings } : {}),
      ...(resources !== undefined ? { outputs: resources } : {}),
      // The window the redrive itself checks (--inbox-ttl, else INBOX_TTL_SECONDS), so both agree.
      inboxWindow: (await windowOptions(flags, io.env)).inboxWindow,
      env: io.env,
      connection,
    });
  }

  /** The bucket of `--on-failure-bucket` and its S3 store (`--endpoint`, `--region`, else the environment). */
  async function onFailureBucket(
    flags: CommonFlags & SelectionFlags & OnFailureBucketFlags,
  ): Promise<{ location: import('./onFailureBucket.js').BucketLocation; store: import('./onFailureBucket.js').OnFailureBucketStore }> {
    if ((flags.reason ?? []).length > 0 || (flags.id ?? []).length > 0 || flags.olderThan !== undefined)
      throw new UsageError('--on-failure-bucket takes no --reason, --id or --older-than: it reads every record under its prefix');
    const { parseBucketLocation, createOnFailureBucketStore } = await import('./onFailureBucket.js');
    const location = parseBucketLocation(flags.onFailureBucket ?? '');
    const store = createOnFailureBucketStore({
      ...(flags.endpoint !== undefined ? { endpoint: flags.endpoint } : {}),
      ...(flags.region !== undefined ? { region: flags.region } : {}),
      env: io.env,
    });
    return { location, store };
  }

  /** The consumer's function: `--function`, else the FunctionName output of `--outputs-file`, else `FUNCTION_NAME`. */
  async function functionNameFrom(flags: OutputsFileFlags & { function?: string }): Promise<string | undefined> {
    if (flags.function !== undefined) return flags.function;
    const { consumerFromFlags } = await import('../stackOutputs.js');
    const name = (await consumerFromFlags(flags))?.functionName ?? io.env.FUNCTION_NAME;
    return name === '' ? undefined : name;
  }

  async function confirmer(): Promise<Confirm> {
    const { terminalConfirm } = await import('./confirm.js');
    return terminalConfirm({ input: io.stdin, output: io.stderr, ...(io.signal !== undefined ? { signal: io.signal } : {}) });
  }
}

function common(command: Command): Command {
  command.option(
    '--queue-url <url>',
    "the dead-letter queue's URL (default: the DeadLetterQueueUrl of --outputs-file, else the DLQ_URL environment variable)",
  );
  return outputsFileFlags(command, "the dead-letter queue's URL (its DeadLetterQueueUrl output)")
    .option(
      '--endpoint <url>',
      'SQS endpoint, e.g. http://localhost:4566 for the local emulator (default: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, else AWS); ' +
        'offloaded bodies are read from AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else an emulator endpoint, else S3',
    )
    .option('--region <region>', 'AWS region (default: the region in the queue URL, else AWS_REGION / the profile)')
    .option('--json', 'print the result as JSON')
    .option('--no-dlq-check', 'do not check that the queue is a dead-letter queue')
    .option('--visibility-timeout <seconds>', 'seconds a message stays hidden while the tool holds it (1 to 43200)', visibilitySeconds, 120)
    .option('--max <count>', 'read at most this many messages', positiveInteger);
}

function selectionFlags(command: Command): Command {
  return command
    .option(
      '--reason <reason>',
      `only this failure reason (repeatable): any reason name, e.g. ${builtInFailureReasons.join(', ')}, your own, ` +
        'or none (moved by the redrive policy); a reason that matches nothing is warned about',
      collect,
    )
    .option('--id <id>', 'only this message id or original message id (repeatable)', collect)
    .option('--older-than <duration>', 'only messages that failed longer ago than this: 30m, 2h, 7d (units s, m, h, d, w)');
}

interface HandlerFlags {
  handler?: string;
  settings?: string;
  dryRun?: boolean;
}

function handlerFlags(command: Command): Command {
  return command
    .option(
      '--handler <file[#export]>',
      'with --dry-run: decide each message with the consumer\'s own code, as `local --handler` loads it (export "handler" unless named)',
    )
    .option(
      '--settings <file[#export]>',
      'with --handler: the consumer settings (its name and inbox window) when the environment lacks them; export "settings" unless named',
    );
}

/**
 * Whether the command decides its messages (`--dry-run --handler`).
 *
 * @throws UsageError for `--handler` without `--dry-run`, or `--settings` without `--handler`
 */
function checkHandlerFlags(flags: HandlerFlags): boolean {
  if (flags.handler === undefined) {
    if (flags.settings !== undefined) throw new UsageError('--settings goes with --handler');
    return false;
  }
  if (flags.dryRun !== true)
    throw new UsageError('--handler goes with --dry-run: it decides what each message would do, and changes nothing');
  return true;
}

function selection(flags: Partial<SelectionFlags>): MessageSelection {
  return {
    reasons: parseReasons(flags.reason ?? []),
    ids: flags.id ?? [],
    ...(flags.olderThan !== undefined ? { olderThanMs: parseDuration(flags.olderThan) } : {}),
  };
}

function receive(flags: CommonFlags): { visibilityTimeoutSeconds: number; maxMessages?: number } {
  return { visibilityTimeoutSeconds: flags.visibilityTimeout, ...(flags.max !== undefined ? { maxMessages: flags.max } : {}) };
}

function visibilitySeconds(value: string): number {
  const seconds = positiveInteger(value);
  if (seconds > 43_200) throw new InvalidArgumentError('SQS allows at most 43200 seconds (12 hours).');
  return seconds;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('expected a whole number of at least 1.');
  return Number(value);
}

/** `--inbox-ttl` and `--allow-outside-window` (redrive, replay). */
interface WindowFlags {
  inboxTtl?: string;
  allowOutsideWindow?: boolean;
}

function windowFlags(command: Command): Command {
  return command
    .option(
      '--inbox-ttl <duration>',
      "the consumer's inbox TTL (settings.idempotency.inboxTtlSeconds), e.g. 30d: messages older than it are refused " +
        "(default: the INBOX_TTL_SECONDS environment variable, else the library's default, 30d)",
    )
    .option(
      '--allow-outside-window',
      'send messages older than the inbox window anyway: the consumer no longer recognises them as duplicates and applies them again',
    );
}

/** The inbox window options of a redrive or a replay (loads `inboxWindow.js` only when the command runs). */
async function windowOptions(
  flags: WindowFlags,
  env: NodeJS.ProcessEnv,
): Promise<{ inboxWindow: import('./inboxWindow.js').InboxWindow; allowOutsideWindow: boolean }> {
  const { inboxWindowFrom } = await import('./inboxWindow.js');
  return { inboxWindow: inboxWindowFrom(flags.inboxTtl, env), allowOutsideWindow: flags.allowOutsideWindow === true };
}
