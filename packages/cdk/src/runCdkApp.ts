import { App, type AppProps, Errors } from 'aws-cdk-lib';

/** How {@link runCdkApp} reports a refused input; replaceable in tests. */
export interface RunCdkAppIo {
  /** Writes one line of text to standard error. */
  readonly error: (line: string) => void;
  /** Ends the process with this exit code. */
  readonly exit: (code: number) => void;
}

const processIo: RunCdkAppIo = {
  error: (line) => process.stderr.write(`${line}\n`),
  exit: (code) => process.exit(code),
};

/**
 * Whether `error` is a refused input rather than a bug: invalid settings, props or context
 * (`InvalidSettingsError`), or a construct's validation (AWS CDK's `ValidationError`, e.g. a
 * validation that fails when the app synthesizes).
 */
export function isInputError(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  return error.name === 'InvalidSettingsError' || Errors.isValidationError(error) || error.name === 'UnscopedValidationError';
}

/**
 * Runs a CDK app: creates the `App`, lets `build` add the stacks, and synthesizes. A refused
 * input ({@link isInputError}) is printed as its message alone, without a stack trace, and the
 * process exits with code 1, so `cdk synth` shows one clear message; any other error is
 * rethrown with its stack (a bug is worth its trace).
 *
 * @param build - adds the stacks (and validation plugins such as cdk-nag) to the app
 * @param props - the `App`'s props; `autoSynth` is always off (this function synthesizes)
 * @param io - where the message goes and how the process ends (tests replace it)
 * @returns the app, synthesized; nothing when the input was refused
 * @throws whatever `build` or the synthesis throws that is not an input error
 *
 * @example
 * // bin/app.ts
 * runCdkApp((app) => {
 *   new MyConsumerStack(app, 'MyConsumer');
 *   Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
 * });
 */
export function runCdkApp(build: (app: App) => void, props: AppProps = {}, io: RunCdkAppIo = processIo): App | undefined {
  try {
    const app = new App({ ...props, autoSynth: false });
    build(app);
    app.synth();
    return app;
  } catch (error) {
    if (!isInputError(error)) throw error;
    io.error(`error: ${error.message}`);
    io.exit(1);
    return undefined;
  }
}
