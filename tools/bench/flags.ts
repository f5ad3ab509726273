/**
 * The flags of `npm run bench` (see `tools/bench/main.ts`), parsed and checked.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { ALL_SCENARIOS, type ScenarioName, ScenarioName as Scenarios } from './scenarios.js';
import { CONTENTION_DEFAULTS } from './contention.js';

/** Parsed flags. */
export interface Flags {
  readonly messages: number;
  readonly repetitions: number;
  readonly batchSizes: number[];
  readonly scenarios: ScenarioName[];
  /** Messages per run of the contention scenario. */
  readonly contentionMessages: number;
  /** Execution environment counts of the contention scenario, one run per count and side. */
  readonly contentionEnvironments: number[];
  readonly heap: { readonly from: number; readonly to: number } | undefined;
  readonly coldStartRuns: number;
  readonly sample: string;
  readonly endpoints: { readonly dynamoDb: string; readonly sqs: string } | undefined;
  /**
   * Whether the engine parks out-of-order messages (`retry.parkOutOfOrder`, docs/parking.md):
   * `--parking off` (the default: the library's default, so that every scenario compares the same
   * work) or `--parking on` (the café's settings). The baseline never parks.
   */
  readonly parking: boolean;
  /**
   * Whether the engine keeps each event's inbox mark on its order (`inboxHome`, docs/inbox-home.md):
   * `--inbox-home on` (the default: the café's consumer as it ships) or `--inbox-home off` (the
   * café's consumer without `inboxHome`: an inbox row per event). The baseline is unaffected.
   */
  readonly inboxHome: boolean;
  readonly json: boolean;
}

export const USAGE =
  'usage: npm run bench -- [--messages N] [--repetitions N] [--batch-sizes 1,10,100] [--scenarios fresh,duplicates,fresh-side-effect,mixed,poison,contention]\n' +
  '                        [--contention-messages N] [--contention-environments 1,4,16]\n' +
  '                        [--heap-messages 1000,10000 | 0] [--cold-start-runs N] [--sample FILE] [--dynamodb-endpoint URL --sqs-endpoint URL]\n' +
  '                        [--parking on|off] [--inbox-home on|off] [--json]';

/** A flag that is unknown, malformed or out of range; its message says which and why. */
export class FlagError extends Error {
  override readonly name = 'FlagError';
}

function integer(value: string, flag: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max)
    throw new FlagError(`${flag} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  return n;
}

function list(value: string, flag: string): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new FlagError(`${flag} needs at least one value`);
  return items;
}

/**
 * Parses the benchmark's flags (`argv` without the node and script paths).
 *
 * @returns the flags, or `'help'` for `--help`
 * @throws FlagError for an unknown flag, a malformed or out-of-range value, or flags that do not go together
 */
export function parseFlags(argv: readonly string[]): Flags | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        messages: { type: 'string', default: '300' },
        repetitions: { type: 'string', default: '3' },
        'batch-sizes': { type: 'string', default: '1,10,100' },
        scenarios: { type: 'string', default: ALL_SCENARIOS.join(',') },
        'contention-messages': { type: 'string', default: String(CONTENTION_DEFAULTS.messages) },
        'contention-environments': { type: 'string', default: CONTENTION_DEFAULTS.environments.join(',') },
        'heap-messages': { type: 'string', default: '1000,10000' },
        'cold-start-runs': { type: 'string', default: '20' },
        sample: { type: 'string', default: 'examples/cafe/samples/orders.jsonl' },
        'dynamodb-endpoint': { type: 'string' },
        'sqs-endpoint': { type: 'string' },
        parking: { type: 'string', default: 'off' },
        'inbox-home': { type: 'string', default: 'on' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    throw new FlagError((error as Error).message);
  }
  if (values.help) return 'help';
  const batchSizes = list(values['batch-sizes'], '--batch-sizes').map((s) => integer(s, '--batch-sizes', 1, 100));
  const scenarios = list(values.scenarios, '--scenarios').map((s) => {
    if (!(ALL_SCENARIOS as readonly string[]).includes(s))
      throw new FlagError(`--scenarios: unknown scenario ${JSON.stringify(s)} (one of ${ALL_SCENARIOS.join(', ')})`);
    return s as ScenarioName;
  });
  if (scenarios.includes(Scenarios.Duplicates) && !scenarios.includes(Scenarios.Fresh))
    throw new FlagError('--scenarios: duplicates redelivers the fresh messages, so it needs fresh too');
  // Run in the canonical order (fresh before duplicates), whatever order was given.
  const ordered = ALL_SCENARIOS.filter((s) => scenarios.includes(s));
  let heap: Flags['heap'];
  if (values['heap-messages'].trim() !== '0') {
    const [from, to] = list(values['heap-messages'], '--heap-messages').map((s) => integer(s, '--heap-messages', 10, 1_000_000));
    if (from === undefined || to === undefined || to <= from)
      throw new FlagError('--heap-messages must be two counts A,B with A < B (or 0 to skip)');
    heap = { from, to };
  }
  const dynamoDb = values['dynamodb-endpoint'];
  const sqs = values['sqs-endpoint'];
  if ((dynamoDb === undefined) !== (sqs === undefined)) throw new FlagError('give both --dynamodb-endpoint and --sqs-endpoint, or neither');
  for (const [flag, url] of [
    ['--dynamodb-endpoint', dynamoDb],
    ['--sqs-endpoint', sqs],
  ] as const) {
    if (url !== undefined && !/^https?:\/\/[^\s]+$/.test(url))
      throw new FlagError(`${flag} must be an http(s) URL, not ${JSON.stringify(url)}`);
  }
  if (values.parking !== 'on' && values.parking !== 'off')
    throw new FlagError(`--parking must be on or off, not ${JSON.stringify(values.parking)}`);
  if (values['inbox-home'] !== 'on' && values['inbox-home'] !== 'off')
    throw new FlagError(`--inbox-home must be on or off, not ${JSON.stringify(values['inbox-home'])}`);
  return {
    messages: integer(values.messages, '--messages', 10, 1_000_000),
    repetitions: integer(values.repetitions, '--repetitions', 1, 100),
    batchSizes: [...new Set(batchSizes)],
    scenarios: ordered,
    contentionMessages: integer(values['contention-messages'], '--contention-messages', 10, 1_000_000),
    contentionEnvironments: [
      ...new Set(
        list(values['contention-environments'], '--contention-environments').map((s) => integer(s, '--contention-environments', 1, 100)),
      ),
    ],
    heap,
    coldStartRuns: integer(values['cold-start-runs'], '--cold-start-runs', 0, 1000),
    sample: values.sample,
    endpoints: dynamoDb === undefined || sqs === undefined ? undefined : { dynamoDb, sqs },
    parking: values.parking === 'on',
    inboxHome: values['inbox-home'] === 'on',
    json: values.json,
  };
}
