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
