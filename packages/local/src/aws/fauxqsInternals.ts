/**
 * The parts of fauxqs (the SQS emulator the local runtime embeds) that its package does not
 * export, loaded from the installed package's `dist/` for the strict SQS layer
 * (`local/aws/strictSqs.ts`): the store classes, to build the server over stores this project
 * holds, and the character-set pattern its `SendMessage` handlers test bodies with.
 *
 * The shapes below are the subset of fauxqs 1.x's internals the strict layer reads and changes;
 * {@link loadFauxqsInternals} checks the installed version and that every method it relies on is
 * there, so an upgrade that changes them fails at start-up with a clear message instead of
 * silently losing a rule.
 *
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A message as fauxqs stores it. */
export interface FauxqsMessage {
  readonly messageId: string;
  readonly body: string;
  readonly md5OfBody: string;
  readonly messageAttributes: Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>;
  readonly md5OfMessageAttributes: string;
  readonly sentTimestamp: number;
  approximateReceiveCount: number;
  approximateFirstReceiveTimestamp?: number;
  readonly messageGroupId?: string;
  readonly messageDeduplicationId?: string;
  sequenceNumber?: string;
}

/** A message in flight, by receipt handle. */
export interface FauxqsInflightEntry {
  readonly message: FauxqsMessage;
  readonly receiptHandle: string;
  /** Epoch milliseconds at which the message becomes visible again. */
  visibilityDeadline: number;
}

/** A message as `ReceiveMessage` returns it (before system attributes are added). */
export interface FauxqsReceivedMessage {
  MessageId: string;
  ReceiptHandle: string;
  MD5OfBody: string;
  Body: string;
  MD5OfMessageAttributes?: string;
  MessageAttributes?: FauxqsMessage['messageAttributes'];
}

/** One queue of fauxqs's SQS store. */
export interface FauxqsQueue {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  readonly attributes: Record<string, string>;
  readonly inflightMessages: Map<string, FauxqsInflightEntry>;
  /** FIFO: the visible messages of each message group, in order. */
  readonly fifoMessages: Map<string, FauxqsMessage[]>;
  /** FIFO: message group → number of its messages in flight (the group is locked while > 0). */
  readonly fifoLockedGroups: Map<string, number>;
  isFifo(): boolean;
  enqueue(message: FauxqsMessage): void;
  dequeue(
    maxCount: number,
    visibilityTimeoutOverride?: number,
    deadLetterQueueOf?: (arn: string) => FauxqsQueue | undefined,
  ): FauxqsReceivedMessage[];
  /** Private in fauxqs's types; `dequeue` calls it for FIFO queues. */
  dequeueFifo(
    maxCount: number,
    visibilityTimeoutOverride?: number,
    deadLetterQueueOf?: (arn: string) => FauxqsQueue | undefined,
  ): FauxqsReceivedMessage[];
  changeVisibility(receiptHandle: string, timeoutSeconds: number): void;
  processTimers(): void;
}

/** fauxqs's SQS store. */
export interface FauxqsSqsStore {
  createQueue(name: string, url: string, arn: string, attributes?: Record<string, string>, tags?: Record<string, string>): FauxqsQueue;
  getQueue(url: string): FauxqsQueue | undefined;
  getQueueByArn(arn: string): FauxqsQueue | undefined;
}

/** What the strict layer needs from fauxqs. */
export interface FauxqsInternals {
  /** The installed fauxqs version, e.g. `1.9.2`. */
  readonly version: string;
  /** New, empty stores for `buildApp({ stores })`: SQS, SNS and S3. */
  newStores(): { readonly sqsStore: FauxqsSqsStore; readonly snsStore: object; readonly s3Store: object };
  /**
   * The pattern fauxqs's `SendMessage` and `SendMessageBatch` handlers test bodies with
   * (`INVALID_MESSAGE_BODY_CHAR`): one object shared by both handlers.
   */
  readonly invalidBodyCharacter: RegExp;
}

/** The fauxqs major version the strict layer was written against. */
const supportedMajor = 1;

let loading: Promise<FauxqsInternals> | undefined;

/**
 * Loads fauxqs's store classes and character-set pattern from the installed package (once per
 * process; later calls return the same result).
 *
 * @throws Error when fauxqs is not installed, is not version 1.x, or lacks a method the strict
 *   layer overrides (the message names what is missing)
 */
export function loadFauxqsInternals(): Promise<FauxqsInternals> {
  loading ??= load();
  return loading;
}

async function load(): Promise<FauxqsInternals> {
  const packageDirectory = findPackageDirectory();
  const { version } = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as { version: string };
  if (Number(version.split('.')[0]) !== supportedMajor) {
    throw new Error(
      `The strict SQS layer supports fauxqs ${supportedMajor}.x, but fauxqs ${version} is installed ` +
        `(${packageDirectory}); check local/aws/strictSqs.ts against the new version.`,
    );
  }
  const importDist = (file: string) => import(pathToFileURL(join(packageDirectory, 'dist', file)).href) as Promise<Record<string, unknown>>;
  const [sqsStoreModule, snsStoreModule, s3StoreModule, sqsTypesModule] = await Promise.all([
    importDist('sqs/sqsStore.js'),
    importDist('sns/snsStore.js'),
    importDist('s3/s3Store.js'),
    importDist('sqs/sqsTypes.js'),
  ]);
  type Constructor = new () => object;
  const SqsStore = sqsStoreModule['SqsStore'] as Constructor | undefined;
  const SqsQueue = sqsStoreModule['SqsQueue'] as { prototype: Record<string, unknown> } | undefined;
  const SnsStore = snsStoreModule['SnsStore'] as Constructor | undefined;
  const S3Store = s3StoreModule['S3Store'] as Constructor | undefined;
  const invalidBodyCharacter = sqsTypesModule['INVALID_MESSAGE_BODY_CHAR'];
  const missing = [
    SqsStore === undefined && 'SqsStore',
    SnsStore === undefined && 'SnsStore',
    S3Store === undefined && 'S3Store',
    !(invalidBodyCharacter instanceof RegExp) && 'INVALID_MESSAGE_BODY_CHAR',
    ...['dequeue', 'dequeueFifo', 'changeVisibility', 'processTimers', 'enqueue', 'isFifo']
      .filter((method) => typeof SqsQueue?.prototype[method] !== 'function')
      .map((method) => `SqsQueue.${method}`),
  ].filter((name): name is string => typeof name === 'string');
  if (missing.length > 0) {
    throw new Error(`fauxqs ${version} lacks what the strict SQS layer relies on: ${missing.join(', ')}.`);
  }
  return {
    version,
    newStores: () => ({
      sqsStore: new SqsStore!() as FauxqsSqsStore,
      snsStore: new SnsStore!(),
      s3Store: new S3Store!(),
    }),
    invalidBodyCharacter: invalidBodyCharacter as RegExp,
  };
}

/** The directory of the installed fauxqs package (its `exports` map hides `package.json` and `dist/`). */
function findPackageDirectory(): string {
  const require = createRequire(import.meta.url);
  for (const nodeModules of require.resolve.paths('fauxqs') ?? []) {
    const candidate = join(nodeModules, 'fauxqs');
    if (existsSync(join(candidate, 'package.json')) && existsSync(join(candidate, 'dist', 'app.js'))) return candidate;
  }
  throw new Error('The npm package `fauxqs` is not installed (run `npm ci`).');
}
