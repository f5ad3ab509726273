/**
 * The `idempotent-consumer` command line. `bin/idempotent-consumer.js` runs its compiled form
 * (`dist/main.js`); no TypeScript runtime is needed.
 *
 * Command groups register themselves below; each loads its heavy modules (the AWS SDK) only when
 * one of its commands runs, so `--version` and `--help` answer at once.
 *
 * Exit codes: 0 done; 1 an error, or nothing that was asked for moved; 2 a bad flag or argument;
 * 130 interrupted (Ctrl-C).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { addDlqCommands } from './dlq/commands.js';
import type { CliIo, CliOutcome } from './cliIo.js';
import { DlqToolError, toDlqToolError } from './dlq/errors.js';
import { addExplainCommand } from './explain/commands.js';
import { addInvokeCommand } from './invoke/commands.js';
import { addLocalCommand } from './local/commands.js';
import { addOutputsCommand } from './outputs/commands.js';
import { addSendCommand } from './send/commands.js';

/** The command groups, in the order `--help` lists them. Each adds its commands to the program. */
const commandGroups: readonly ((program: Command, io: CliIo, outcome: CliOutcome) => void)[] = [
  addLocalCommand,
  addInvokeCommand,
  addOutputsCommand,
  addSendCommand,
  addDlqCommands,
  addExplainCommand,
];

/**
 * The command line's version: its package's (`@idempotent-consumer/cli`), from its `package.json`,
 * one folder up from `src/main.ts` and from `dist/main.js`.
 *
 * @throws Error when no `package.json` of this package is found (a broken installation)
 */
export function packageVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name?: string; version?: string };
    if (manifest.name === '@idempotent-consumer/cli' && typeof manifest.version === 'string') return manifest.version;
  } catch {
    // a broken installation: said below
  }
  throw new Error('cannot find the package.json of @idempotent-consumer/cli next to the command line');
}

/**
 * Builds the program. Parse errors throw `CommanderError` instead of exiting the process.
 */
export function createProgram(io: CliIo, outcome: CliOutcome): Command {
  const program = new Command('idempotent-consumer')
    .description('Tools of the idempotent SQS/Kafka consumer for AWS Lambda')
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });
  for (const addGroup of commandGroups) addGroup(program, io, outcome);
  const overrideExits = (command: Command): void => {
    command.exitOverride();
    for (const sub of command.commands) overrideExits(sub);
  };
  overrideExits(program);
  return program;
}

let quietOnClosedPipe = false;

/** Two SIGINTs this close together, in milliseconds, are one Ctrl-C (the terminal's and npm's copy of it). */
const SAME_INTERRUPT_MS = 500;

/**
 * Runs the command line.
 *
 * The AWS SDK's notice that it will require Node.js 22 (nine lines on every command on Node 20)
 * is turned off unless `AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED` is set already: it is
 * about the SDK's future releases, not about this command (`docs/dlq.md` says so).
 *
 * @param argv - the arguments after the program name (`process.argv.slice(2)`)
 * @param io - streams and environment; by default the process's, with Ctrl-C handled: the first
 *   one asks the running command to stop at a safe point, the second one exits at once
 * @returns the exit code; never throws
 */
export async function runCli(argv: readonly string[], io?: Partial<CliIo>): Promise<number> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const controller = new AbortController();
  const fullIo: CliIo = {
    stdout: io?.stdout ?? process.stdout,
    stderr: io?.stderr ?? process.stderr,
    stdin: io?.stdin ?? process.stdin,
    env: io?.env ?? process.env,
    signal: io?.signal ?? controller.signal,
  };
  let interrupts = 0;
  let firstInterruptAt = 0;
  const onSignal = (): void => {
    // npm and npx pass the terminal's Ctrl-C on to the process that already got it: one press.
    if (interrupts === 1 && Date.now() - firstInterruptAt < SAME_INTERRUPT_MS) return;
    interrupts += 1;
    firstInterruptAt ||= Date.now();
    if (interrupts > 1) {
      fullIo.stderr.write('interrupted again: exiting now; held messages come back when their visibility timeout ends\n');
      process.exit(130);
    }
    fullIo.stderr.write('interrupt: stopping at the next safe point and restoring held messages (Ctrl-C again to quit at once)\n');
    controller.abort();
  };
  // A reader that stops early (`| head`) closes the pipe: stop quietly instead of crashing on EPIPE.
  if (io?.stdout === undefined && !quietOnClosedPipe) {
    quietOnClosedPipe = true;
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw error;
    });
  }
  const handleSignals = io?.signal === undefined;
  if (handleSignals) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  const outcome: CliOutcome = { exitCode: 0 };
  try {
    await createProgram(fullIo, outcome).parseAsync([...argv], { from: 'user' });
    return outcome.exitCode;
  } catch (caught) {
    if (caught instanceof CommanderError) {
      if (caught.code === 'commander.helpDisplayed' || caught.code === 'commander.version' || caught.exitCode === 0) return 0;
      if (caught.code === 'commander.help' || caught.code === 'commander.executeSubCommandAsync') return caught.exitCode;
      return 2;
    }
    const error = toDlqToolError(caught, {
      ...(outcome.queueUrl !== undefined ? { queueUrl: outcome.queueUrl } : {}),
      ...(outcome.endpoint !== undefined ? { endpoint: outcome.endpoint } : {}),
    });
    if (error instanceof DlqToolError) {
      fullIo.stderr.write(`error: ${error.message}\n`);
      return error.exitCode;
    }
    const e = error as { name?: string; message?: string };
    fullIo.stderr.write(`error: ${e?.name ?? 'Error'}: ${e?.message ?? String(error)}\n`);
    return 1;
  } finally {
    if (handleSignals) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}
