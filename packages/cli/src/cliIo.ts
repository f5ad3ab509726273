/**
 * What every command of the command line runs with (its streams, environment and Ctrl-C signal) and
 * reports back (its exit code).
 *
 * @module
 */
/** Streams and environment of one run of the command line. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  /** Aborted on Ctrl-C. */
  readonly signal?: AbortSignal;
}

/** Set by an action: the exit code its result calls for (0 unless something was left undone). */
export interface CliOutcome {
  exitCode: number;
  /** The queue and endpoint of the failing command, for error messages. */
  queueUrl?: string;
  endpoint?: string;
}
