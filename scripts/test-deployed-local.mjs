#!/usr/bin/env node
// The integration suite's deployed-stack mode (IC_OUTPUTS_FILE), against the café's CDK app run
// locally from its bundle instead of a stack deployed with `cdk deploy` / `cdklocal deploy`:
//
//   npm run test:deployed-local [-- <vitest arguments, e.g. test/integration/deployedStack.test.ts>]
//
// 1. Starts `idempotent-consumer local --app examples/cafe --stack CafeOrders --keep-running
//    --outputs-file <tmp>/cdk-outputs.json --endpoints-file <tmp>/local.env` from the sources (tsx; no
//    build needed), with a three-message input, in a process group of its own. The emulators
//    (DynamoDB Local, the SQS/SNS/S3 server) listen on free ports of 127.0.0.1.
// 2. Waits until the outputs file appears: the stack is provisioned, its functions run and the
//    input has been consumed. The wait follows the run, not a fixed clock: it fails when the run
//    exits, when it prints nothing for IC_LOCAL_IDLE_SECONDS (default 300), or after
//    IC_LOCAL_START_SECONDS in all (default 900), saying which.
// 3. Runs `npx vitest run --project integration` with IC_OUTPUTS_FILE, IC_STACK and the endpoints file's
//    variables (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, region, credentials): the tests
//    that support a deployed stack run against the local one (test/integration/deployedStack.test.ts
//    sends to its queue and waits for the bundle's function to apply the order), the others skip
//    themselves, their reason in the output (describeUnlessDeployedStack).
// 4. Stops the local run: SIGINT (the command's clean stop), SIGTERM after IC_LOCAL_STOP_SECONDS
//    (default 60), SIGKILL to its process group 20 s later; then lists any process left in that
//    group (java, node) and kills it.
//
// Exit code: vitest's; when vitest passed, 1 if the local run did not stop cleanly (a signal past
// SIGINT was needed, it exited non-zero, or left processes behind).
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const stack = 'CafeOrders';
const seconds = (name, fallback) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name}=${process.env[name]}: expected a number of seconds`);
  return value * 1000;
};
const startLimitMs = seconds('IC_LOCAL_START_SECONDS', 900);
const idleLimitMs = seconds('IC_LOCAL_IDLE_SECONDS', 300);
const stopLimitMs = seconds('IC_LOCAL_STOP_SECONDS', 60);
const say = (text) => process.stderr.write(`[test:deployed-local] ${text}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = await mkdtemp(join(tmpdir(), 'ic-deployed-local-'));
const outputsFile = join(dir, 'cdk-outputs.json');
const endpointsFile = join(dir, 'local.env');
const input = join(dir, 'orders.jsonl');
// A small input: the run's own check passes on it, and the consumer is warm when the tests start.
// Ids of this run's own, apart from every test's (some use fixed ones, e.g. L-1).
const run = `deployed-local-${randomUUID().slice(0, 8)}`;
await writeFile(
  input,
  [
    { eventId: `${run}-placed`, type: 'OrderPlaced', orderId: run, occurredAt: '2026-01-01T10:00:00.000Z' },
    { eventId: `${run}-paid`, type: 'OrderPaid', orderId: run, occurredAt: '2026-01-01T10:01:00.000Z', points: 5 },
    { eventId: `${run}-paid`, type: 'OrderPaid', orderId: run, occurredAt: '2026-01-01T10:01:00.000Z', points: 5 },
  ]
    .map((line) => JSON.stringify(line))
    .join('\n')
    .concat('\n'),
);

// Each function on its runtime's Node.js when `npm run test:node22`/`test:node24` installed the binaries.
const runtimes = join(root, 'tools/node-versions/node_modules');
const localArgs = [
  '--import',
  'tsx',
  '--conditions=@idempotent-consumer/source',
  'packages/cli/src/run.ts',
  'local',
  '--app',
  'examples/cafe',
  '--stack',
  stack,
  '--input',
  input,
  '--keep-running',
  '--outputs-file',
  outputsFile,
  '--endpoints-file',
  endpointsFile,
  ...(existsSync(runtimes) ? ['--runtimes', runtimes] : []),
];
say(`starting: idempotent-consumer ${localArgs.slice(4).join(' ')}`);
const startedAt = Date.now();
const local = spawn(process.execPath, localArgs, {
  cwd: root,
  // A process group of its own, so that whatever it leaves behind can be found and stopped.
  detached: true,
  stdio: ['ignore', 'pipe', 'pipe'],
  env: withoutAwsVariables(process.env),
});
let lastOutputAt = Date.now();
let localOutputTail = '';
const relay = (chunk) => {
  lastOutputAt = Date.now();
  const text = chunk.toString('utf8');
  localOutputTail = (localOutputTail + text).slice(-4000);
  for (const line of text.split('\n')) if (line.trim() !== '') process.stderr.write(`[local] ${line}\n`);
};
local.stdout.on('data', relay);
local.stderr.on('data', relay);
const localExit = new Promise((resolve) => local.on('exit', (code, signal) => resolve({ code, signal })));
let localExited;
void localExit.then((exit) => {
  localExited = exit;
});

let stopping;
// Ctrl-C or a CI cancel of this script stops the local run too (it is in another process group).
let vitest;
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    interrupted = true;
    say(`${signal}: stopping`);
    vitest?.kill(signal);
    if (vitest === undefined) void stopLocal().then(() => process.exit(130));
  });
}

let exitCode = 1;
try {
  await waitForOutputs();
  const environment = parseEnv(await readFile(endpointsFile, 'utf8'));
  say(
    `the local stack runs (${((Date.now() - startedAt) / 1000).toFixed(0)} s): IC_OUTPUTS_FILE=${outputsFile}, ` +
      `DynamoDB ${environment.AWS_ENDPOINT_URL_DYNAMODB}, SQS ${environment.AWS_ENDPOINT_URL_SQS}`,
  );
  const vitestArgs = ['vitest', 'run', '--project', 'integration', ...process.argv.slice(2)];
  say(`running: npx ${vitestArgs.join(' ')}`);
  vitest = spawn('npx', vitestArgs, {
    cwd: root,
    stdio: 'inherit',
    env: { ...withoutAwsVariables(process.env), ...environment, IC_OUTPUTS_FILE: outputsFile, IC_STACK: stack },
  });
  const vitestCode = await new Promise((resolve) => vitest.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  say(`vitest exited with ${vitestCode}`);
  exitCode = vitestCode;
} catch (error) {
  say(`error: ${error.message}`);
  exitCode = 1;
} finally {
  const clean = await stopLocal();
  if (exitCode === 0 && !clean) exitCode = 1;
  await rm(dir, { recursive: true, force: true });
  say(`done in ${((Date.now() - startedAt) / 1000).toFixed(0)} s: exit ${exitCode}${interrupted ? ' (interrupted)' : ''}`);
}
process.exit(exitCode);

/** Resolves when the outputs file exists; rejects naming what did not happen. */
async function waitForOutputs() {
  for (;;) {
    if (existsSync(outputsFile) && statSync(outputsFile).size > 0) return;
    if (localExited !== undefined) {
      throw new Error(
        `the local run exited (${localExited.signal ?? `code ${localExited.code}`}) before it wrote ${outputsFile}; its last output:\n${localOutputTail}`,
      );
    }
    const now = Date.now();
    if (now - startedAt > startLimitMs) {
      throw new Error(
        `the local run did not write ${outputsFile} within ${startLimitMs / 1000} s (IC_LOCAL_START_SECONDS); its last output:\n${localOutputTail}`,
      );
    }
    if (now - lastOutputAt > idleLimitMs) {
      throw new Error(
        `the local run printed nothing for ${idleLimitMs / 1000} s (IC_LOCAL_IDLE_SECONDS) and has not written ${outputsFile}; its last output:\n${localOutputTail}`,
      );
    }
    await sleep(500);
  }
}

/** Stops the local run: SIGINT, then SIGTERM, then SIGKILL to its group; true when SIGINT was enough, it exited 0 and nothing was left behind. */
function stopLocal() {
  stopping ??= (async () => {
    let clean = true;
    if (localExited === undefined) {
      say('stopping the local run (SIGINT)');
      local.kill('SIGINT');
      if (!(await exitedWithin(stopLimitMs))) {
        clean = false;
        say(`the local run did not stop within ${stopLimitMs / 1000} s of SIGINT: SIGTERM`);
        local.kill('SIGTERM');
        if (!(await exitedWithin(20_000))) {
          say('the local run did not stop within 20 s of SIGTERM: SIGKILL to its process group');
          killGroup('SIGKILL');
          await localExit;
        }
      }
    }
    const exit = await localExit;
    if (exit.code !== 0) {
      clean = false;
      say(
        `the local run exited with ${exit.signal ?? `code ${exit.code}`} (0 expected: its check of the input passed and it stopped on SIGINT)`,
      );
    }
    // Whatever is left in its process group (DynamoDB Local's java, a function's node) is an orphan.
    await sleep(1000);
    const left = processesInGroup(local.pid);
    if (left.length > 0) {
      clean = false;
      say(`left behind by the local run, now killed:\n${left.join('\n')}`);
      killGroup('SIGKILL');
    } else {
      say('the local run stopped; no process of its group is left (ps)');
    }
    return clean;
  })();
  return stopping;
}

function exitedWithin(ms) {
  return Promise.race([localExit.then(() => true), sleep(ms).then(() => false)]);
}

function killGroup(signal) {
  try {
    process.kill(-local.pid, signal);
  } catch {
    // the group is gone
  }
}

/**
 * `ps` lines of the live processes in a process group. A zombie (state Z) has exited already: it
 * is left out (where PID 1 reaps no orphans, as in some containers, one may linger).
 */
function processesInGroup(pgid) {
  const ps = spawnSync('ps', ['-eo', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' });
  return (ps.stdout ?? '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => {
      const [, group, state] = line.split(/\s+/);
      return group === String(pgid) && !state?.startsWith('Z');
    });
}

/** The environment without AWS_* variables and the deployed-stack ones: the run's own endpoints and stack are set explicitly. */
function withoutAwsVariables(env) {
  const deployedStack = new Set(['IC_OUTPUTS_FILE', 'IC_STACK', 'IC_CONSUMER']);
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('AWS_') && !deployedStack.has(name)));
}
