/**
 * `npm run prove`: exactly-once under randomized faults. Drives the real handlers of the two
 * examples (the café, the inventory), and of consumers drawn from a seeded grammar
 * (`--workload generated`), against the embedded DynamoDB Local and SQS server with
 * seeded random fault schedules — producer duplicates, concurrent deliveries, invocations killed
 * at every await point of the engine, deadlines, throttling, `TransactionConflict`, 5xx before
 * and after the server, redelivery as SQS (standard, FIFO) and Kafka would — and checks the
 * invariants of exactly-once processing against what is stored after each one. A failing
 * schedule is shrunk to a minimal replay. See `docs/proof.md`.
 *
 *   npm run prove -- --schedules 1000 --seed 7
 *   npm run prove --silent -- --schedules 1000 --source all --json     # the JSON summary is the last line
 *   npm run prove -- --replay /tmp/idempotent-consumer-prove/replay-7-sqs-12-final-state.json
 *
 * Exit status: 0 when no invariant was violated; 1 when one was, or the run failed; 2 for a bad
 * flag or replay.
 *
 * @module
 */
import { parseProveFlags, ProveFlagError, type ProveFlags, USAGE } from './flags.js';

async function main(): Promise<number> {
  let flags: ProveFlags | 'help';
  try {
    flags = await parseProveFlags(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof ProveFlagError)) throw error;
    process.stderr.write(`error: ${error.message}\n${USAGE}\n`);
    return 2;
  }
  if (flags === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Before the consumer's modules load: no metric lines on stdout, no SDK notice about Node.js 20.
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { createProveSession, formatReport, replaySchedule, runProve, summaryJson } = await import('./runProve.js');
  const { startEmulators } = await import('@idempotent-consumer/local/internal');

  const say = (line: string) => (flags.json ? process.stderr : process.stdout).write(`${line}\n`);
  const seed = flags.seed ?? Math.floor(Math.random() * 2 ** 31);
  const emulators = flags.endpoints === undefined ? await startEmulators() : undefined;
  const endpoints = flags.endpoints ?? { dynamoDbEndpoint: emulators!.dynamoDbEndpoint, sqsEndpoint: emulators!.sqsEndpoint };
  // PROVE_TRACE=1 prints every invocation of every schedule to stderr (for a replay).
  const trace = process.env.PROVE_TRACE === '1' ? (line: string) => process.stderr.write(`  · ${line}\n`) : undefined;
  const session = createProveSession(endpoints, { rotateEvery: flags.rotateEvery, ...(trace === undefined ? {} : { trace }) });
  try {
    const report =
      flags.replay !== undefined
        ? await replaySchedule(session, flags.replay, seed)
        : await (async () => {
            const consumers =
              flags.workload === 'generated'
                ? 'generated consumers'
                : flags.workload === 'all'
                  ? `${flags.consumers.join(', ')} and generated consumers`
                  : flags.consumers.join(', ');
            say(`Proof suite: ${flags.schedules} schedules over ${flags.sources.join(', ')} (${consumers}), seed ${seed}.`);
            return runProve(session, {
              schedules: flags.schedules,
              seed,
              sources: flags.sources,
              consumers: flags.consumers,
              workload: flags.workload,
              coverKillPoints: flags.cover,
              ...(flags.parkOutOfOrder === undefined ? {} : { parkOutOfOrder: flags.parkOutOfOrder }),
              inboxHome: flags.inboxHome,
              homeSwitch: flags.homeSwitch,
              shrinkSeconds: flags.shrinkSeconds,
              rotateEvery: flags.rotateEvery,
              ...(flags.replayDirectory === undefined ? {} : { replayDirectory: flags.replayDirectory }),
              log: say,
            });
          })();
    say(formatReport(report));
    if (flags.json) process.stdout.write(`${summaryJson(report)}\n`);
    return report.violations === 0 ? 0 : 1;
  } finally {
    await session.dispose();
    await emulators?.stop();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
