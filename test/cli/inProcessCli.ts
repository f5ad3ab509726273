/**
 * Runs the command line in this process (`runCli` from `cli/main.ts`) with its own streams and
 * environment, and collects what it printed: fast enough to run a command per test against this
 * file's own servers. The tests that need the real `bin/idempotent-consumer.js` spawn it instead.
 */
import { PassThrough } from 'node:stream';
import { runCli } from '../../packages/cli/src/main.js';

/** What one command printed and its exit code. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `idempotent-consumer <args>`.
 *
 * @param env - the command's environment (the process's is not passed on)
 */
export async function runInProcess(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  // A signal of its own: runCli then leaves the process's SIGINT/SIGTERM handlers alone.
  const code = await runCli(args, { stdout, stderr, stdin: new PassThrough(), env, signal: new AbortController().signal });
  return { code, stdout: out, stderr: err };
}
