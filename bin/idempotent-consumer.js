#!/usr/bin/env node
// Launcher of the TypeScript command line (cli/main.ts): tsx compiles it on the fly, so the
// package needs no build step. Usage: npx idempotent-consumer dlq --help
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
const { runCli } = await import('../cli/main.ts');
process.exitCode = await runCli(process.argv.slice(2));
