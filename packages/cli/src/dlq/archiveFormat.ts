import { createHash, type Hash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import {
  fromPlainAttributes,
  readDeadLetterAttributes,
  toPlainAttributes,
  type OffloadedPayload,
  type PlainAttribute,
} from 'idempotent-consumer/dlq';
import type { DeadLetterRecord } from 'idempotent-consumer/dlq';
import type { ArchiveLineProblem } from './errors.js';
import { isFifoQueueUrl } from './queueUrl.js';

/** The version written in every archive line's `v` and in the trailer. */
export const ARCHIVE_FORMAT_VERSION = 1;

/** A message attribute in an archive: binary values in base64 (the `toPlainAttributes` form). */
export type ArchivedAttribute = PlainAttribute;

/**
 * One line of an archive (JSON Lines: one message per line, UTF-8). Everything needed to send
 * the message again as it was: `replay` reads `body`, `messageAttributes` and
 * `attributes.MessageGroupId`; the rest is the record of where and when.
 */
export interface ArchivedMessage {
  /** {@link ARCHIVE_FORMAT_VERSION}. */
  readonly v: number;
  /** The dead-letter queue's message id (FIFO replays derive their deduplication id from it). */
  readonly messageId: string;
  /** The body, exactly as received. */
  readonly body: string;
  /** SQS's MD5 of the body (hex); `replay` refuses a line whose body no longer matches it. */
  readonly md5OfBody?: string;
  /** Every message attribute, the consumer's dead-letter attributes included. */
  readonly messageAttributes: Readonly<Record<string, ArchivedAttribute>>;
  /** SQS system attributes as received: `SentTimestamp`, `MessageGroupId`, `SequenceNumber`, ... */
  readonly attributes: Readonly<Record<string, string>>;
  /**
   * Present when the consumer offloaded the body to S3 (`body` is then the pointer): the original
   * body, read back when archived. `replay` checks it against `ic.context`'s size and SHA-256 and
   * stores it at its S3 key again before it sends the pointer.
   */
  readonly offloadedBody?: string;
  /** The queue it was archived from. */
  readonly queueUrl: string;
  /** When it was archived (ISO 8601, UTC). */
  readonly archivedAt: string;
}

/**
 * Builds the archive line of a received message (without the newline).
 *
 * @param offloadedBody - the original body, read back from S3, when the consumer offloaded it
 */
export function toArchiveLine(record: DeadLetterRecord, queueUrl: string, archivedAt: Date, offloadedBody?: string): string {
  const archived: ArchivedMessage = {
    v: ARCHIVE_FORMAT_VERSION,
    messageId: record.messageId,
    body: record.body,
    ...(record.md5OfBody !== undefined ? { md5OfBody: record.md5OfBody } : {}),
    messageAttributes: toPlainAttributes(record.messageAttributes),
    attributes: record.systemAttributes,
    queueUrl,
    archivedAt: archivedAt.toISOString(),
    ...(offloadedBody !== undefined ? { offloadedBody } : {}),
  };
  return JSON.stringify(archived);
}

/**
 * The last line of an archive (and, while an `archive --delete` runs, the last line of each
 * round): how many message lines come before it and the SHA-256 of their bytes, each line with
 * its `\n`, from the start of the file (trailer lines left out). `final` is `true` only on the
 * line `archive` writes when it ends; a file that ends otherwise was cut or its writer stopped.
 */
export interface ArchiveTrailer {
  readonly trailer: { readonly v: number; readonly messages: number; readonly sha256: string; readonly final: boolean };
}

/** A running count and SHA-256 of an archive's message lines, for its trailers. */
export class ArchiveDigest {
  readonly #hash: Hash = createHash('sha256');
  #messages = 0;

  /** Adds a message line (without its newline). */
  add(line: string): void {
    this.#hash.update(`${line}\n`, 'utf8');
    if (line.trim() !== '') this.#messages += 1;
  }

  /** Message lines added so far. */
  get messages(): number {
    return this.#messages;
  }

  /** The trailer line for what was added so far (without its newline). */
  trailer(final: boolean): string {
    const trailer: ArchiveTrailer = {
      trailer: { v: ARCHIVE_FORMAT_VERSION, messages: this.#messages, sha256: this.#hash.copy().digest('hex'), final },
    };
    return JSON.stringify(trailer);
  }
}

/** What the trailers of an archive say about it. */
export type TrailerCheck =
  /** It ends with a final trailer, and every trailer matches the lines before it. */
  | { readonly status: 'complete'; readonly messages: number }
  /** It does not end with a trailer: cut, or written by hand. */
  | { readonly status: 'missing'; readonly messages: number }
  /** It ends with a trailer that is not final: its writer stopped (crash, kill) after `messages` messages. */
  | { readonly status: 'unfinished'; readonly messages: number; readonly line: number }
  /** A trailer does not match the lines before it: the file was changed. */
  | { readonly status: 'mismatch'; readonly line: number; readonly detail: string };

/** A message read from an archive line: `archive` writes every field, a hand-written line needs only `body`. */
export type ReplayableMessage = Partial<ArchivedMessage> & { readonly body: string };

/** A valid archive line, numbered from 1. */
export interface ArchiveEntry {
  readonly line: number;
  readonly message: ReplayableMessage;
}

/** What {@link parseArchive} made of a file's text. */
export interface ParsedArchive {
  readonly entries: readonly ArchiveEntry[];
  readonly problems: readonly ArchiveLineProblem[];
  readonly trailer: TrailerCheck;
}

/**
 * Parses the text of an archive. Trailer lines ({@link ArchiveTrailer}) are checked against the
 * lines before them; blank lines are skipped; every other line must be a JSON object with a
 * string `body`, optional `messageAttributes` in `toPlainAttributes` form, and optional string
 * `attributes`. A line with `md5OfBody` must match its body, and one with `offloadedBody` must
 * match the size and SHA-256 its `ic.context` records. When the target is FIFO
 * (`options.fifoTarget`), each line needs `attributes.MessageGroupId`.
 *
 * @returns the valid lines, one problem per bad line, and what the trailers say (never throws)
 */
export function parseArchive(text: string, options: { readonly fifoTarget: boolean }): ParsedArchive {
  const entries: ArchiveEntry[] = [];
  const problems: ArchiveLineProblem[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const digest = new ArchiveDigest();
  let lastTrailer: { line: number; final: boolean } | undefined;
  let mismatch: TrailerCheck | undefined;
  let lastContentLine = 0;
  lines.forEach((raw, index) => {
    const line = index + 1;
    const trailer = readTrailer(raw);
    if (trailer !== undefined) {
      lastTrailer = { line, final: trailer.final };
      lastContentLine = line;
      const expected = JSON.parse(digest.trailer(trailer.final)) as ArchiveTrailer;
      if (mismatch === undefined && (expected.trailer.messages !== trailer.messages || expected.trailer.sha256 !== trailer.sha256)) {
        mismatch = {
          status: 'mismatch',
          line,
          detail:
            `the trailer says ${trailer.messages} message line(s) with SHA-256 ${trailer.sha256}; the lines before it are ` +
            `${expected.trailer.messages} with ${expected.trailer.sha256}`,
        };
      }
      return;
    }
    digest.add(raw);
    const content = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (content.trim() === '') return;
    lastContentLine = line;
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch (error) {
      problems.push({ line, message: `not JSON (${(error as Error).message})` });
      return;
    }
    const problem = validateArchivedMessage(value, options);
    if (problem !== undefined) problems.push({ line, message: problem });
    else entries.push({ line, message: value as ReplayableMessage });
  });
  let trailer: TrailerCheck;
  if (mismatch !== undefined) trailer = mismatch;
  else if (lastTrailer === undefined || lastTrailer.line !== lastContentLine) trailer = { status: 'missing', messages: digest.messages };
  else if (!lastTrailer.final) trailer = { status: 'unfinished', messages: digest.messages, line: lastTrailer.line };
  else trailer = { status: 'complete', messages: digest.messages };
  return { entries, problems, trailer };
}

/** The trailer of a line, if it is one: a JSON object whose only key is `trailer`. */
function readTrailer(line: string): ArchiveTrailer['trailer'] | undefined {
  if (!line.startsWith('{"trailer"')) return undefined;
  try {
    const value = JSON.parse(line) as Partial<ArchiveTrailer>;
    const t = value.trailer;
    if (Object.keys(value).length !== 1 || typeof t !== 'object' || t === null) return undefined;
    if (typeof t.messages !== 'number' || typeof t.sha256 !== 'string' || typeof t.final !== 'boolean') return undefined;
    return t;
  } catch {
    return undefined;
  }
}

function validateArchivedMessage(value: unknown, options: { readonly fifoTarget: boolean }): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const message = value as Record<string, unknown>;
  if (message.v !== undefined && message.v !== ARCHIVE_FORMAT_VERSION) {
    return `archive format version ${String(message.v)} is not supported (this tool reads ${ARCHIVE_FORMAT_VERSION})`;
  }
  if (typeof message.body !== 'string') return 'missing "body" (a string)';
  if (message.body === '') return '"body" is empty (SQS rejects an empty message)';
  if (message.messageId !== undefined && typeof message.messageId !== 'string') return '"messageId" is not a string';
  if (message.md5OfBody !== undefined) {
    if (typeof message.md5OfBody !== 'string') return '"md5OfBody" is not a string';
    const md5 = createHash('md5').update(message.body, 'utf8').digest('hex');
    if (md5 !== message.md5OfBody) {
      return 'the body does not match "md5OfBody" (remove "md5OfBody" from the line if you edited the body on purpose)';
    }
  }
  if (message.messageAttributes !== undefined) {
    const attributes = message.messageAttributes;
    if (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes)) {
      return '"messageAttributes" is not an object';
    }
    for (const [name, attribute] of Object.entries(attributes as Record<string, unknown>)) {
      const a = attribute as Record<string, unknown> | null;
      if (typeof a !== 'object' || a === null || typeof a.DataType !== 'string') {
        return `message attribute "${name}" has no DataType`;
      }
      if (a.StringValue === undefined && a.BinaryValue === undefined) return `message attribute "${name}" has no value`;
      if (a.StringValue !== undefined && typeof a.StringValue !== 'string')
        return `message attribute "${name}": StringValue is not a string`;
      if (a.BinaryValue !== undefined && (typeof a.BinaryValue !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(a.BinaryValue))) {
        return `message attribute "${name}": BinaryValue is not base64`;
      }
    }
  }
  if (message.attributes !== undefined) {
    const attributes = message.attributes;
    if (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes)) return '"attributes" is not an object';
    if (Object.values(attributes).some((v) => typeof v !== 'string')) return '"attributes" values must be strings';
  }
  if (message.offloadedBody !== undefined) {
    if (typeof message.offloadedBody !== 'string') return '"offloadedBody" is not a string';
    const payload = offloadedPayloadOf(message as ReplayableMessage);
    if (payload === undefined) return '"offloadedBody" is present, but the message attributes say nothing of an offloaded body';
    const bytes = Buffer.byteLength(message.offloadedBody, 'utf8');
    const sha256 = createHash('sha256').update(message.offloadedBody, 'utf8').digest('hex');
    if (bytes !== payload.bytes || sha256 !== payload.sha256) {
      return `"offloadedBody" (${bytes} bytes) does not match the size and SHA-256 its ic.context records (${payload.bytes} bytes)`;
    }
  }
  if (options.fifoTarget) {
    const group = (message.attributes as Record<string, string> | undefined)?.MessageGroupId;
    if (group === undefined || group === '') return 'no "attributes.MessageGroupId", which a FIFO queue needs';
  }
  return undefined;
}

/**
 * Builds the `SendMessage` request that replays an archived message: body and message
 * attributes exactly as archived; for a FIFO target, the archived `MessageGroupId` and a
 * deduplication id derived from the archived message id (SHA-256 of `replay:<messageId>`, hex;
 * of the line number and body when the line has no id), so replaying the same file twice within
 * SQS's 5-minute deduplication window sends each message once.
 */
export function buildReplayMessage(entry: ArchiveEntry, targetQueueUrl: string): SendMessageCommandInput {
  const { message } = entry;
  const attributes: Record<string, MessageAttributeValue> =
    message.messageAttributes !== undefined ? fromPlainAttributes(message.messageAttributes) : {};
  const input: SendMessageCommandInput = {
    QueueUrl: targetQueueUrl,
    MessageBody: message.body,
    ...(Object.keys(attributes).length > 0 ? { MessageAttributes: attributes } : {}),
  };
  if (isFifoQueueUrl(targetQueueUrl)) {
    input.MessageGroupId = message.attributes?.MessageGroupId;
    const key = message.messageId ?? `line ${entry.line}:${message.body}`;
    input.MessageDeduplicationId = createHash('sha256').update(`replay:${key}`).digest('hex');
  }
  return input;
}

/** Where the consumer offloaded an archived message's body (its `ic.context.payload`), if it did. */
export function offloadedPayloadOf(message: ReplayableMessage): OffloadedPayload | undefined {
  if (message.messageAttributes === undefined) return undefined;
  return readDeadLetterAttributes(fromPlainAttributes(message.messageAttributes))?.context.payload;
}
