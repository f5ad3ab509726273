/**
 * Errors of the local runtime (emulators, provisioning, event source poller). Each sets `name`
 * to its class name and forwards `cause`.
 *
 * @module
 */

/** Base of the local runtime's errors. */
export abstract class LocalRuntimeError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * An emulator did not start: it exited, or did not answer within its start timeout.
 * `output` holds the last lines it wrote (stdout and stderr), when it is a child process.
 */
export class EmulatorStartError extends LocalRuntimeError {
  constructor(
    message: string,
    /** The last lines the emulator wrote (stdout and stderr); empty when it is not a child process or wrote nothing. @default '' */
    public readonly output = '',
    options?: ErrorOptions,
  ) {
    super(output ? `${message}\n--- emulator output ---\n${output.trimEnd()}` : message, options);
  }
}

/** `java` (17 or newer) is not on the `PATH`, so DynamoDB Local cannot start. */
export class JavaNotFoundError extends EmulatorStartError {}

/** A table or queue exists with a shape that differs from what the settings ask for. */
export class ProvisioningError extends LocalRuntimeError {}

/** `runUntilIdle` gave up: the queue or the poller was still busy when its timeout ran out. */
export class PollerIdleTimeoutError extends LocalRuntimeError {}

/** The `--data-dir` cannot be used: not a directory, or another run holds it. */
export class DataDirError extends LocalRuntimeError {}

/**
 * A CDK app could not be run from its cloud assembly: the synthesis failed, the stack is not in
 * the assembly, or its template holds something the local run cannot make locally (a reference
 * to a resource outside the stack, a function without its bundle).
 */
export class CloudAssemblyError extends LocalRuntimeError {}

/** One value on which a stack's template and what the local run would otherwise use disagree. */
export interface TemplateDifference {
  /** What the value is, e.g. `function.batchSize`. */
  readonly setting: string;
  /** What the template says, and where, e.g. `10 (BatchSize of Orders/Consumer/Function/SqsEventSource…)`. */
  readonly template: string;
  /** What the local run would otherwise use, and where from, e.g. `5 (the settings module)`. */
  readonly local: string;
}

/**
 * The template of the stack a local run runs and what the run would otherwise use (the
 * `--settings` module, `--fifo`, `--source`) disagree. The message names every difference with
 * both values.
 */
export class TemplateMismatchError extends LocalRuntimeError {
  constructor(
    /** Every difference found. */
    public readonly differences: readonly TemplateDifference[],
  ) {
    super(
      `The stack's template and the local run disagree (synthesize again, or change what the run is given, so that they agree):\n${differences
        .map((d) => `- ${d.setting}: the template says ${d.template}; the local run was given ${d.local}`)
        .join('\n')}`,
    );
  }
}
