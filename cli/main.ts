/**
 * The `idempotent-consumer` command line (`bin/idempotent-consumer.js` runs it through tsx).
 *
 * Exit codes: 0 done; 1 an error, or something left undone (a failed send, a delete that
 * failed, a declined confirmation); 2 a bad flag or argument; 130 interrupted (Ctrl-C).
 *
 * @module
 */
import { Command, CommanderError } from 'commander';
import { addDlqCommands, type CliIo, type CliOutcome } from './dlq/commands.js';
import { DlqToolError, toDlqToolError } from './dlq/errors.js';

/**
 * Builds the program: `idempotent-consumer dlq <command>`. Parse errors throw `CommanderError`
 * instead of exiting the process.
 */
export function createProgram(io: CliIo, outcome: CliOutcome): Command {
  const program = new Command('idempotent-consumer')
    .description('Operator tools of the idempotent SQS/Kafka consumer')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });
  addDlqCommands(program, io, outcome);
  for (const command of program.commands) {
    command.exitOverride();
    for (const sub of command.commands) sub.exitOverride();
  }
  return program;
}

/**
 * Runs the command line.
 *
 * @param argv - the arguments after the program name (`process.argv.slice(2)`)
 * @param io - streams and environment; by default the process's, with Ctrl-C handled: the first
 *   one asks the running command to stop at a safe point, the second one exits at once
 * @returns the exit code; never throws
 */
export async function runCli(argv: readonly string[], io?: Partial<CliIo>): Promise<number> {
  const controller = new AbortController();
  const fullIo: CliIo = {
    stdout: io?.stdout ?? process.stdout,
    stderr: io?.stderr ?? process.stderr,
    stdin: io?.stdin ?? process.stdin,
    env: io?.env ?? process.env,
    signal: io?.signal ?? controller.signal,
  };
  let interrupts = 0;
  const onSignal = (): void => {
    interrupts += 1;
    if (interrupts > 1) {
      fullIo.stderr.write('interrupted again: exiting now; held messages come back when their visibility timeout ends\n');
      process.exit(130);
    }
    fullIo.stderr.write('interrupt: stopping at the next safe point and restoring held messages (Ctrl-C again to quit at once)\n');
    controller.abort();
  };
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
