/**
 * The flags of `npm run prove` (see `scripts/prove.ts`), parsed and checked.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseSeedFlag } from '@idempotent-consumer/local/internal';
import { type InboxHomeMode, inboxHomeModes } from './generated/spec.js';
import {
  type HomeSwitchMode,
  homeSwitchModes,
  type ProveConsumer,
  proveConsumers,
  type ProveSource,
  proveSources,
  type ProveWorkload,
  proveWorkloads,
  parseSchedule,
  type Schedule,
  ScheduleError,
} from './schedule.js';

/** Parsed flags. */
export interface ProveFlags {
  readonly schedules: number;
  /** The seed; `undefined` when not given (the run draws one and prints it). */
  readonly seed: number | undefined;
  readonly sources: readonly ProveSource[];
  readonly consumers: readonly ProveConsumer[];
  /** The examples, generated consumers, or both. */
  readonly workload: ProveWorkload;
  readonly json: boolean;
  /** The schedule to run alone. */
  readonly replay: Schedule | undefined;
  readonly shrinkSeconds: number;
  readonly replayDirectory: string | undefined;
  readonly rotateEvery: number;
  readonly cover: boolean;
  /** Standard-queue schedules that park out-of-order messages: drawn per schedule (`undefined`), all (`true`), none (`false`). */
  readonly parkOutOfOrder: boolean | undefined;
  /** Generated consumers that keep their inbox marks on home items (`inboxHome`): all, none, or about half (drawn per consumer). */
  readonly inboxHome: InboxHomeMode;
  /** Deploys that switch `inboxHome` mid-schedule (generated consumers with an inbox home). */
  readonly homeSwitch: HomeSwitchMode;
  readonly endpoints: { readonly dynamoDbEndpoint: string; readonly sqsEndpoint: string } | undefined;
}

export const USAGE = `usage: npm run prove -- [--schedules N] [--seed S] [--source sqs|fifo|kafka|kinesis|dynamodb-streams|all]
                        [--workload examples|generated|all]
                        [--consumer cafe|inventory|all] [--json]
                        [--replay FILE_OR_JSON] [--shrink-seconds N] [--replay-dir DIR] [--tables-every N] [--no-cover]
                        [--park drawn|always|never] [--home mixed|always|never]
                        [--switch none|on|off|mixed|off-removed|on-without-rows-until]
                        [--dynamodb-endpoint URL --sqs-endpoint URL]

  --schedules N        fault schedules in all, shared out among the sources          default 100
  --seed S             the seed (an integer); the same seed runs the same schedules   default: drawn, printed
  --source             which event source(s)                                          default all
  --workload           the examples, consumers drawn from the grammar, or both       default examples
  --consumer           which example(s) the examples workload drives                 default all
  --json               the summary as one JSON object, the last line of stdout (the text goes to stderr)
  --replay F           run one schedule alone: a replay file a failing run wrote, or its JSON text
  --shrink-seconds N   time to shrink each failing schedule (0: print it unshrunk)    default 300
  --replay-dir DIR     where replay files go                                          default <tmp>/idempotent-consumer-prove
  --tables-every N     schedules per shared set of tables before a fresh one          default 200
  --no-cover           no targeted schedules for await points never killed at
  --park               standard-queue (sqs) schedules with retry.parkOutOfOrder: half, drawn per schedule; all; none   default drawn
  --home               generated consumers with inboxHome (inbox marks on home items): half, drawn per consumer; all; none   default mixed
  --switch             a deploy that switches inboxHome mid-schedule, old and new execution environments overlapping
                       (generated consumers with inboxHome; --home then defaults to always): none; on (rows → inboxHome
                       with rowsUntil); off (inboxHome with rowsUntil → inboxHome with marks: false); mixed (on or off,
                       drawn per schedule); off-removed (inboxHome with rowsUntil → no inboxHome);
                       on-without-rows-until (a negative control: its violations are expected)   default none
  --dynamodb-endpoint, --sqs-endpoint   use running emulators instead of starting the embedded ones

Exit status: 0 when no invariant was violated; 1 when one was (or the run failed); 2 for a bad flag or replay.`;

/** A flag that is unknown, malformed or out of range; its message says which and why. */
export class ProveFlagError extends Error {
  override readonly name = 'ProveFlagError';
}

function integer(value: string, flag: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max)
    throw new ProveFlagError(`${flag} must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`);
  return n;
}

function choice<T extends string>(value: string, flag: string, choices: readonly T[]): T[] {
  if (value === 'all') return [...choices];
  if (!(choices as readonly string[]).includes(value))
    throw new ProveFlagError(`${flag} must be one of ${choices.join(', ')} or all, not ${JSON.stringify(value)}`);
  return [value as T];
}

function workloadChoice(value: string): ProveWorkload {
  if (!(proveWorkloads as readonly string[]).includes(value))
    throw new ProveFlagError(`--workload must be one of ${proveWorkloads.join(', ')}, not ${JSON.stringify(value)}`);
  return value as ProveWorkload;
}

/**
 * Parses the suite's flags (`argv` without the node and script paths); reads a replay file.
 *
 * @returns the flags, or `'help'` for `--help`
 * @throws ProveFlagError for an unknown flag, a malformed or out-of-range value, flags that do not
 *   go together, or a replay that cannot be read or is not a schedule
 */
export async function parseProveFlags(argv: readonly string[]): Promise<ProveFlags | 'help'> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        schedules: { type: 'string', default: '100' },
        seed: { type: 'string' },
        source: { type: 'string', default: 'all' },
        consumer: { type: 'string', default: 'all' },
        workload: { type: 'string', default: 'examples' },
        json: { type: 'boolean', default: false },
        replay: { type: 'string' },
        'shrink-seconds': { type: 'string', default: '300' },
        'replay-dir': { type: 'string' },
        'tables-every': { type: 'string', default: '200' },
        'no-cover': { type: 'boolean', default: false },
        park: { type: 'string', default: 'drawn' },
        home: { type: 'string' },
        switch: { type: 'string', default: 'none' },
        'dynamodb-endpoint': { type: 'string' },
        'sqs-endpoint': { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    throw new ProveFlagError((error as Error).message);
  }
  if (values.help) return 'help';
  let seed: number | undefined;
  if (values.seed !== undefined) {
    try {
      seed = parseSeedFlag(values.seed);
    } catch (error) {
      throw new ProveFlagError((error as Error).message);
    }
    if (seed < -2_147_483_648 || seed > 2_147_483_647)
      throw new ProveFlagError(`--seed must be a 32-bit integer (fast-check's seeds), not ${values.seed}`);
  }
  if (!['drawn', 'always', 'never'].includes(values.park))
    throw new ProveFlagError(`--park must be one of drawn, always, never, not ${JSON.stringify(values.park)}`);
  if (!(homeSwitchModes as readonly string[]).includes(values.switch))
    throw new ProveFlagError(`--switch must be one of ${homeSwitchModes.join(', ')}, not ${JSON.stringify(values.switch)}`);
  // A switch needs consumers with an inbox home: every generated consumer has one unless --home says otherwise.
  const home = values.home ?? (values.switch === 'none' ? 'mixed' : 'always');
  if (!(inboxHomeModes as readonly string[]).includes(home))
    throw new ProveFlagError(`--home must be one of ${inboxHomeModes.join(', ')}, not ${JSON.stringify(home)}`);
  if (home === 'never' && values.switch !== 'none')
    throw new ProveFlagError('--switch needs consumers with inboxHome: not with --home never');
  if (values.switch !== 'none' && values.workload === 'examples')
    throw new ProveFlagError('--switch switches generated consumers: give --workload generated or all');
  const dynamoDbEndpoint = values['dynamodb-endpoint'];
  const sqsEndpoint = values['sqs-endpoint'];
  if ((dynamoDbEndpoint === undefined) !== (sqsEndpoint === undefined))
    throw new ProveFlagError('give both --dynamodb-endpoint and --sqs-endpoint, or neither');
  for (const [flag, url] of [
    ['--dynamodb-endpoint', dynamoDbEndpoint],
    ['--sqs-endpoint', sqsEndpoint],
  ] as const) {
    if (url !== undefined && !/^https?:\/\/[^/\s]+\/?$/.test(url))
      throw new ProveFlagError(`${flag} must be a URL like http://127.0.0.1:8000, not ${JSON.stringify(url)}`);
  }
  return {
    schedules: integer(values.schedules, '--schedules', 1, 10_000_000),
    seed,
    sources: choice(values.source, '--source', proveSources),
    consumers: choice(values.consumer, '--consumer', proveConsumers),
    workload: workloadChoice(values.workload),
    json: values.json,
    replay: values.replay === undefined ? undefined : await readReplay(values.replay),
    shrinkSeconds: integer(values['shrink-seconds'], '--shrink-seconds', 0, 86_400),
    replayDirectory: values['replay-dir'],
    rotateEvery: integer(values['tables-every'], '--tables-every', 1, 1_000_000),
    cover: !values['no-cover'],
    parkOutOfOrder: values.park === 'drawn' ? undefined : values.park === 'always',
    inboxHome: home as InboxHomeMode,
    homeSwitch: values.switch as HomeSwitchMode,
    endpoints: dynamoDbEndpoint !== undefined && sqsEndpoint !== undefined ? { dynamoDbEndpoint, sqsEndpoint } : undefined,
  };
}

/** A replay: JSON text when it starts with `{`, else a file. */
async function readReplay(value: string): Promise<Schedule> {
  let text = value;
  if (!value.trimStart().startsWith('{')) {
    try {
      text = await readFile(value, 'utf8');
    } catch (error) {
      throw new ProveFlagError(`--replay: cannot read ${value}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ProveFlagError(`--replay: not JSON (${(error as Error).message})`);
  }
  try {
    return parseSchedule(json);
  } catch (error) {
    if (error instanceof ScheduleError) throw new ProveFlagError(`--replay: ${error.message}`);
    throw error;
  }
}
