/**
 * The command line from the sources, for this repository's npm scripts (`npm start` runs
 * `local` with the café example): `tsx --conditions=@idempotent-consumer/source scripts/cli.ts …`.
 * Installed users run `npx idempotent-consumer …` (the compiled `dist/cli/main.js`).
 *
 * @module
 */
import { runCli } from '../cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));
