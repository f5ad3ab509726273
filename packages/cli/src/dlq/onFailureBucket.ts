import type { S3Client } from '@aws-sdk/client-s3';
import {
  NotAKafkaOnFailureRecordError,
  readKafkaOnFailureRecord,
  type KafkaOnFailureInvocationRecord,
  type KafkaOnFailureRecordsInfo,
} from 'idempotent-consumer/dlq';
import type { KafkaEvent, KafkaRecord } from 'idempotent-consumer/kafka';
import { confirmed, type ConfirmOptions } from './context.js';
import { UsageError } from './errors.js';
import type { FunctionInvoker } from './functionInvoker.js';
import { judgeKafkaRedrive } from './kafkaRedrive.js';
import { isHttpUrl, isLoopback } from './sqsClient.js';

/** A bucket and a key prefix, from `s3://bucket/prefix`. */
export interface BucketLocation {
  readonly bucket: string;
  /** `''` for the whole bucket. */
  readonly prefix: string;
}

/**
 * Reads `s3://bucket[/prefix]` (or a bare bucket name).
 *
 * @throws UsageError for anything else (an ARN, an https URL, an empty bucket name)
 */
export function parseBucketLocation(value: string, flag = '--on-failure-bucket'): BucketLocation {
  const match = /^(?:s3:\/\/)?([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(value);
  if (match === null) {
    throw new UsageError(`${flag} takes s3://BUCKET[/PREFIX] or a bucket name, not "${value}"`);
  }
  return { bucket: match[1]!, prefix: match[2] ?? '' };
}

/** Where the on-failure records are read and deleted. */
export interface OnFailureBucketStore {
  /** The keys under `location.prefix`, oldest first (by `LastModified`), at most `max`. */
  list(location: BucketLocation, max?: number): Promise<{ key: string; lastModified: Date | undefined }[]>;
  /** The object's body as UTF-8 text. */
  get(bucket: string, key: string): Promise<string>;
  delete(bucket: string, key: string): Promise<void>;
}

/** How the tool reaches S3 for the on-failure bucket. */
export interface OnFailureBucketStoreOptions {
  /** `--endpoint`. @default `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`, else AWS */
  readonly endpoint?: string;
  /** `--region`. @default `AWS_REGION`, the profile (`us-east-1` for a loopback endpoint) */
  readonly region?: string;
  /** @default `process.env` */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * An {@link OnFailureBucketStore} on S3 (`@aws-sdk/client-s3`, loaded on first use; path-style
 * requests to an explicit endpoint; dummy credentials for a loopback endpoint without any in the
 * environment, as for the local emulators).
 *
 * @throws UsageError when the endpoint is not an http(s) URL
 */
export function createOnFailureBucketStore(options: OnFailureBucketStoreOptions = {}): OnFailureBucketStore {
  const env = options.env ?? process.env;
  const ignoreEnv = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true';
  const endpoint = options.endpoint ?? (ignoreEnv ? undefined : env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined);
  if (endpoint !== undefined && !isHttpUrl(endpoint)) throw new UsageError(`the S3 endpoint must be an http(s) URL, not "${endpoint}"`);
  const local = endpoint !== undefined && isLoopback(endpoint);
  const region = options.region ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || (local ? 'us-east-1' : undefined));
  const dummy = local && (env.AWS_ACCESS_KEY_ID ?? '') === '' && (env.AWS_PROFILE ?? '') === '';
  let client: Promise<{ s3: S3Client; sdk: typeof import('@aws-sdk/client-s3') }> | undefined;
  const connect = (): NonNullable<typeof client> =>
    (client ??= import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      s3: new sdk.S3Client({
        ...(endpoint !== undefined ? { endpoint, forcePathStyle: true } : {}),
        ...(region !== undefined ? { region } : {}),
        followRegionRedirects: true,
        ...(dummy ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      }),
    })));
  return {
    async list(location, max = Number.POSITIVE_INFINITY) {
      const { s3, sdk } = await connect();
      const found: { key: string; lastModified: Date | undefined }[] = [];
      let token: string | undefined;
      do {
        const output = await s3.send(
          new sdk.ListObjectsV2Command({
            Bucket: location.bucket,
            ...(location.prefix !== '' ? { Prefix: location.prefix } : {}),
            ...(token !== undefined ? { ContinuationToken: token } : {}),
          }),
        );
        for (const object of output.Contents ?? []) {
          if (object.Key !== undefined && !object.Key.endsWith('/')) found.push({ key: object.Key, lastModified: object.LastModified });
        }
        token = output.IsTruncated === true ? output.NextContinuationToken : undefined;
      } while (token !== undefined);
      found.sort((a, b) => (a.lastModified?.getTime() ?? 0) - (b.lastModified?.getTime() ?? 0) || a.key.localeCompare(b.key));
      return found.slice(0, max);
    },
    async get(bucket, key) {
      const { s3, sdk } = await connect();
      const output = await s3.send(new sdk.GetObjectCommand({ Bucket: bucket, Key: key }));
      return (await output.Body?.transformToString('utf-8')) ?? '';
    },
    async delete(bucket, key) {
      const { s3, sdk } = await connect();
      await s3.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
  };
}

/** One on-failure record of the bucket, as `list` shows it. */
export interface OnFailureEntry {
  readonly key: string;
  /** Why Lambda gave up: `RetryAttemptsExhausted`, `RecordAgeExceeded`, `MaximumPayloadSizeExceeded`. */
  readonly condition?: string;
  /** `Unhandled` when the last invocation threw or timed out; `undefined` when it reported failures. */
  readonly functionError?: string;
  readonly approximateInvokeCount?: number;
  /** When Lambda gave up (ISO 8601). */
  readonly failedAt?: string;
  /** The MSK cluster ARN, or `SelfManagedKafka:<bootstrap servers>`. */
  readonly source?: string;
  /** The offsets given up, by `"<topic>-<partition>"`. */
  readonly recordsInfo?: Readonly<Record<string, KafkaOnFailureRecordsInfo>>;
  /** The records of `payload` that were given up (within `recordsInfo`); 0 for a metadata-only record. */
  readonly records: number;
  /** Why it cannot be read or redriven, if so. */
  readonly problem?: string;
}

/** What {@link listOnFailureRecords} found. */
export interface OnFailureListResult {
  readonly bucket: string;
  readonly prefix: string;
  readonly entries: readonly OnFailureEntry[];
}

/**
 * Lists the Kafka on-failure records of a bucket (an S3 on-failure destination), oldest first:
 * why Lambda gave up, the offsets, and how many records the object keeps whole. Reads only.
 *
 * @throws the S3 client's errors (no such bucket, access denied)
 */
export async function listOnFailureRecords(
  store: OnFailureBucketStore,
  location: BucketLocation,
  options: { readonly maxObjects?: number } = {},
): Promise<OnFailureListResult> {
  const keys = await store.list(location, options.maxObjects);
  const entries: OnFailureEntry[] = [];
  for (const { key } of keys) entries.push(entryOf(key, await store.get(location.bucket, key)));
  return { bucket: location.bucket, prefix: location.prefix, entries };
}

/** Options of {@link redriveOnFailureRecords}. */
export interface OnFailureRedriveOptions extends ConfirmOptions {
  readonly location: BucketLocation;
  /** The consumer's function: each object's records are invoked on it. */
  readonly functionName: string;
  /** At most this many objects. @default all */
  readonly maxObjects?: number;
}

/** One object redriven, skipped or failed. */
export interface OnFailureRedriveItem {
  readonly key: string;
  /** The records invoked (or that would be). */
  readonly records: number;
  /** The records' coordinates, `<topic>-<partition>@<first>..<last>` per partition. */
  readonly coordinates: readonly string[];
  readonly detail?: string;
}

/** What {@link redriveOnFailureRecords} did (or, with `dryRun`, would do). */
export interface OnFailureRedriveResult {
  readonly bucket: string;
  readonly dryRun: boolean;
  readonly cancelled: boolean;
  /** Invoked, acknowledged, and the object deleted. */
  readonly redriven: readonly OnFailureRedriveItem[];
  /** Left in the bucket: no records kept (metadata only), or not readable. */
  readonly skipped: readonly OnFailureRedriveItem[];
  /** Left in the bucket: the function reported a failure or could not be invoked; the redrive stopped there. */
  readonly failed: readonly OnFailureRedriveItem[];
  /** Acknowledged, but the object could not be deleted (redriving it again is harmless: the inbox holds its records). */
  readonly notDeleted: readonly OnFailureRedriveItem[];
}

/**
 * Redrives the Kafka batches an S3 on-failure destination kept: for each object, oldest first,
 * the records Lambda gave up on (the records of `payload` within `recordsInfo`'s offsets) are sent
 * to the consumer's function in one synchronous `Invoke`, as the mapping sent them (no redrive
 * mark: the consumer did not dead-letter them, and its inbox makes any it already applied a
 * duplicate). The object is deleted once the function's response reports no failure; a reported
 * failure, an error or a timeout stops the redrive there, the object kept.
 *
 * @throws the S3 client's errors on listing; ConfirmationRequiredError when it cannot ask
 */
export async function redriveOnFailureRecords(
  store: OnFailureBucketStore,
  invoker: FunctionInvoker,
  options: OnFailureRedriveOptions,
): Promise<OnFailureRedriveResult> {
  const { bucket } = options.location;
  const keys = await store.list(options.location, options.maxObjects);
  const plans: { key: string; event: KafkaEvent | undefined; item: OnFailureRedriveItem }[] = [];
  for (const { key } of keys) {
    const text = await store.get(bucket, key);
    const entry = entryOf(key, text);
    const event = entry.problem === undefined ? givenUpEvent(readKafkaOnFailureRecord(text)) : undefined;
    plans.push({
      key,
      event,
      item: {
        key,
        records: entry.records,
        coordinates: coordinatesOf(entry.recordsInfo),
        ...(entry.problem !== undefined
          ? { detail: entry.problem }
          : event === undefined
            ? { detail: 'metadata only: the record keeps no payload (replay those offsets from the topic)' }
            : {}),
      },
    });
  }
  const result = { bucket, dryRun: options.dryRun === true, cancelled: false, redriven: [], skipped: [], failed: [], notDeleted: [] };
  const redriven: OnFailureRedriveItem[] = [];
  const skipped: OnFailureRedriveItem[] = plans.filter((p) => p.event === undefined).map((p) => p.item);
  const failed: OnFailureRedriveItem[] = [];
  const notDeleted: OnFailureRedriveItem[] = [];
  const movable = plans.filter((p) => p.event !== undefined);
  if (options.dryRun === true) return { ...result, redriven: movable.map((p) => p.item), skipped };
  if (
    movable.length > 0 &&
    !(await confirmed(
      options,
      `Invoke ${options.functionName} with the records of ${movable.length} on-failure object(s) of s3://${bucket}, deleting each object once acknowledged?`,
    ))
  ) {
    return { ...result, cancelled: true, skipped };
  }
  for (const plan of movable) {
    const event = plan.event!;
    try {
      const outcome = judgeKafkaRedrive(await invoker.invoke(options.functionName, event), event);
      if (!outcome.acknowledged) {
        failed.push({ ...plan.item, detail: outcome.detail });
        break;
      }
    } catch (error) {
      failed.push({ ...plan.item, detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
      break;
    }
    try {
      await store.delete(bucket, plan.key);
      redriven.push(plan.item);
    } catch (error) {
      notDeleted.push({ ...plan.item, detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
  }
  return { ...result, redriven, skipped, failed, notDeleted };
}

/**
 * The records of an on-failure record's event that Lambda gave up on: those of each
 * topic-partition of `recordsInfo` from its first to its last offset (the event may hold others,
 * which were processed); `undefined` when the record kept no event, or none of its records are given up.
 */
export function givenUpEvent(read: ReturnType<typeof readKafkaOnFailureRecord>): KafkaEvent | undefined {
  if (read.event === undefined) return undefined;
  const info = read.record.KafkaBatchInfo.recordsInfo;
  const records: Record<string, KafkaRecord[]> = {};
  for (const [partition, group] of Object.entries(read.event.records)) {
    const range = info[partition];
    if (range === undefined) continue;
    const kept = group.filter((record) => withinRange(record.offset, range));
    if (kept.length > 0) records[partition] = kept;
  }
  return Object.keys(records).length === 0 ? undefined : { ...read.event, records };
}

function withinRange(offset: number, range: KafkaOnFailureRecordsInfo): boolean {
  try {
    const at = BigInt(offset);
    return at >= BigInt(range.firstRecordOffset) && at <= BigInt(range.lastRecordOffset);
  } catch {
    return false;
  }
}

function entryOf(key: string, text: string): OnFailureEntry {
  let read: ReturnType<typeof readKafkaOnFailureRecord>;
  try {
    read = readKafkaOnFailureRecord(text);
  } catch (error) {
    if (!(error instanceof NotAKafkaOnFailureRecordError)) throw error;
    return { key, records: 0, problem: `not a Kafka on-failure record: ${error.message}` };
  }
  const record: KafkaOnFailureInvocationRecord = read.record;
  const info = record.KafkaBatchInfo;
  const event = givenUpEvent(read);
  return {
    key,
    condition: record.requestContext?.condition,
    ...(record.responseContext?.functionError !== undefined ? { functionError: record.responseContext.functionError } : {}),
    approximateInvokeCount: record.requestContext?.approximateInvokeCount,
    failedAt: record.timestamp,
    source: info.eventSourceArn ?? `SelfManagedKafka:${info.bootstrapServers}`,
    recordsInfo: info.recordsInfo,
    records: event === undefined ? 0 : Object.values(event.records).reduce((sum, group) => sum + group.length, 0),
  };
}

function coordinatesOf(info: Readonly<Record<string, KafkaOnFailureRecordsInfo>> | undefined): string[] {
  return Object.entries(info ?? {}).map(([partition, range]) => `${partition}@${range.firstRecordOffset}..${range.lastRecordOffset}`);
}

/** The text of `dlq list --on-failure-bucket`. */
export function formatOnFailureList(result: OnFailureListResult): string {
  if (result.entries.length === 0) return `s3://${result.bucket}/${result.prefix}: no on-failure record.`;
  const lines = [`${result.entries.length} Kafka on-failure record(s) in s3://${result.bucket}/${result.prefix} (oldest first):`];
  for (const entry of result.entries) {
    lines.push(`  ${entry.key}`);
    if (entry.problem !== undefined) {
      lines.push(`    ${entry.problem}`);
      continue;
    }
    lines.push(
      `    ${entry.condition ?? '?'}${entry.functionError !== undefined ? ` (${entry.functionError})` : ''}, ` +
        `${entry.approximateInvokeCount ?? '?'} invocation(s), at ${entry.failedAt ?? '?'}, from ${entry.source ?? '?'}`,
    );
    lines.push(
      `    ${coordinatesOf(entry.recordsInfo).join(', ')}: ${entry.records > 0 ? `${entry.records} record(s) kept whole` : 'metadata only'}`,
    );
  }
  return lines.join('\n');
}

/** The text of `dlq redrive --on-failure-bucket`. */
export function formatOnFailureRedrive(result: OnFailureRedriveResult): string {
  if (result.cancelled) return 'Cancelled: nothing changed.';
  const row = (item: OnFailureRedriveItem) =>
    `  ${item.key}  ${item.coordinates.join(', ')}  ${item.records} record(s)${item.detail !== undefined ? ` — ${item.detail}` : ''}`;
  const lines = [
    result.dryRun
      ? `Dry run: would invoke the function with the records of ${result.redriven.length} object(s) of s3://${result.bucket}. Nothing changed.`
      : `Redriven by Invoke: ${result.redriven.length} object(s) acknowledged and deleted, ${result.skipped.length} left, ${result.failed.length} failed.`,
  ];
  if (result.redriven.length > 0) lines.push(result.dryRun ? 'Would redrive' : 'Redriven', ...result.redriven.map(row));
  if (result.skipped.length > 0) lines.push('Left in the bucket', ...result.skipped.map(row));
  if (result.failed.length > 0) lines.push('Failed (kept; the redrive stopped here)', ...result.failed.map(row));
  if (result.notDeleted.length > 0) lines.push('Acknowledged but not deleted (a redrive again is harmless)', ...result.notDeleted.map(row));
  return lines.join('\n');
}
