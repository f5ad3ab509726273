/**
 * `idempotent-consumer local …` run from the sources in a child process, as `npm run cli -- local
 * …` runs it: for tests of the command line as a user meets it.
 */
import { spawn } from 'node:child_process';
import type { RunReport } from '../../packages/local/src/report.js';

/** What a run of the command printed, and how it exited. */
export interface LocalCliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `idempotent-consumer local <args>` (consumer logs at ERROR).
 *
 * @param timeoutMs - milliseconds before the run is interrupted (SIGINT) and the promise rejects
 */
export function runLocalCli(args: readonly string[], timeoutMs = 400_000): Promise<LocalCliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@idempotent-consumer/source', '--import', 'tsx', 'packages/cli/src/run.ts', 'local', ...args],
      { cwd: process.cwd(), env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new Error(`${args.join(' ')} did not finish in ${timeoutMs} ms:\n${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The report of a `--json` run: the last line of its standard output. */
export function lastJsonReport(stdout: string): RunReport {
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as RunReport;
}
