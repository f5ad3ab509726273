/**
 * The command line from the sources, for this repository's npm scripts (`npm start` runs
 * `local` with the café example): `tsx --conditions=@idempotent-consumer/source packages/cli/src/run.ts …`.
 * Installed users run `npx idempotent-consumer …` (the compiled `dist/main.js` of `@idempotent-consumer/cli`).
 *
 * @module
 */
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2));
