/**
 * Runs a command as a user types it in a terminal, for the package test: no shell, output
 * collected, the exit code returned rather than thrown, so an assertion can show what went wrong.
 */
import { spawn } from 'node:child_process';

/** What a finished command left behind. */
export interface CommandResult {
  /** The exit code; `null` when a signal ended the process. */
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `command` with `args` in `cwd` and waits for it to exit, however long that takes (the
 * caller's test timeout is the only limit).
 *
 * @param env - variables added to (or, when `undefined`, removed from) this process's environment
 * @throws Error when the command cannot be started at all (not on the PATH)
 */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { readonly cwd: string; readonly env?: Readonly<Record<string, string | undefined>> },
): Promise<CommandResult> {
  const env = { ...process.env, ...options.env };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
  return new Promise((resolve, reject) => {
    // npm and npx are .cmd scripts on Windows, which only a shell runs.
    const child = spawn(command, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32' });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', reject);
    child.on('close', (exitCode) => {
      resolve({ exitCode, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') });
    });
  });
}

/** A one-paragraph account of a command's result, for an assertion's message. */
export function describeResult(what: string, result: CommandResult): string {
  return `${what} exited with ${result.exitCode}\n--- stdout ---\n${result.stdout.slice(-4000)}\n--- stderr ---\n${result.stderr.slice(-4000)}`;
}
