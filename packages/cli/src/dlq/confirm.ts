import { createInterface } from 'node:readline/promises';
import type { Confirm } from './context.js';
import { ConfirmationRequiredError } from './errors.js';

/**
 * A {@link Confirm} that asks on the terminal (`[y/N]`; only `y` or `yes` goes ahead).
 *
 * @param options.input - where answers come from; it must be a TTY
 * @param options.output - where the question goes (stderr, so that `--json` output stays clean)
 * @param options.signal - Ctrl-C while asking answers "no"
 * @throws ConfirmationRequiredError from the returned function when `input` is not a TTY
 */
export function terminalConfirm(options: {
  readonly input: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly output: NodeJS.WritableStream;
  readonly signal?: AbortSignal;
}): Confirm {
  return async (question) => {
    if (options.input.isTTY !== true) {
      throw new ConfirmationRequiredError(
        `${question}\nrefusing: there is no terminal to confirm on; pass --yes to go ahead (or --dry-run to look first)`,
      );
    }
    const rl = createInterface({ input: options.input, output: options.output });
    try {
      const answer = await rl.question(`${question} [y/N] `, options.signal !== undefined ? { signal: options.signal } : {});
      return /^y(es)?$/i.test(answer.trim());
    } catch {
      return false;
    } finally {
      rl.close();
    }
  };
}
