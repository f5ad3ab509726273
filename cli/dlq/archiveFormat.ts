import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { deserializeAttributes, serializeAttributes } from '../../lambda/dlq/deadLetterMessage.js';
import type { DeadLetterRecord } from './deadLetterRecord.js';
import type { ArchiveLineProblem } from './errors.js';
import { isFifoQueueUrl } from './sqsClient.js';

/** The version written in every archive line's `v`. */
export const ARCHIVE_FORMAT_VERSION = 1;

/** A message attribute in an archive: binary values in base64 (the `serializeAttributes` form). */
export interface ArchivedAttribute {
  readonly DataType: string;
  readonly StringValue?: string;
  readonly BinaryValue?: string;
}

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
  /** The queue it was archived from. */
  readonly queueUrl: string;
  /** When it was archived (ISO 8601, UTC). */
  readonly archivedAt: string;
}

/** Builds the archive line of a received message (without the newline). */
export function toArchiveLine(record: DeadLetterRecord, queueUrl: string, archivedAt: Date): string {
  const archived: ArchivedMessage = {
    v: ARCHIVE_FORMAT_VERSION,
    messageId: record.messageId,
    body: record.body,
    ...(record.md5OfBody !== undefined ? { md5OfBody: record.md5OfBody } : {}),
    messageAttributes: JSON.parse(serializeAttributes(record.messageAttributes)) as Record<string, ArchivedAttribute>,
    attributes: record.systemAttributes,
    queueUrl,
    archivedAt: archivedAt.toISOString(),
  };
  return JSON.stringify(archived);
}

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
}

/**
 * Parses the text of an archive. Blank lines are skipped; every other line must be a JSON
 * object with a string `body`, optional `messageAttributes` in `serializeAttributes` form, and
 * optional string `attributes`. A line with `md5OfBody` must match its body. When the target
 * is FIFO (`options.fifoTarget`), each line needs `attributes.MessageGroupId`.
 *
 * @returns the valid lines and one problem per bad line (never throws)
 */
export function parseArchive(text: string, options: { readonly fifoTarget: boolean }): ParsedArchive {
  const entries: ArchiveEntry[] = [];
  const problems: ArchiveLineProblem[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((raw, index) => {
    const line = index + 1;
    const content = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (content.trim() === '') return;
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
  return { entries, problems };
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
      if (a.StringValue !== undefined && typeof a.StringValue !== 'string') return `message attribute "${name}": StringValue is not a string`;
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
    message.messageAttributes !== undefined ? deserializeAttributes(JSON.stringify(message.messageAttributes)) : {};
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
