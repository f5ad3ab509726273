#!/usr/bin/env node
// The idempotent-consumer command line: runs the compiled JavaScript in dist/ (built by
// `npm run build`, which `npm install` of the package and `npm ci` in the repository run).
// Usage: npx idempotent-consumer --help
const main = new URL('../dist/main.js', import.meta.url);
let cli;
try {
  cli = await import(main.href);
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/main.js')) {
    process.stderr.write('error: the command line is not built (dist/main.js is missing): run `npm run build` first\n');
    process.exit(1);
  }
  throw error;
}
process.exitCode = await cli.runCli(process.argv.slice(2));
