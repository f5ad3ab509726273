import { readFile } from 'node:fs/promises';
import { defaultSettings } from 'idempotent-consumer/settings';
import { firstDisallowedCharacter } from './aws/sqsRules.js';

/** One message to send, read from an input file. */
export interface InputMessage {
  /** 1-based line number in the file. */
  readonly line: number;
  /** The message body exactly as it will be sent. */
  readonly body: string;
}

/** Thrown when the input file cannot be used; the message names the file and, where it applies, the line. */
export class InputFileError extends Error {
  constructor(
    message: string,
    /** The input file's path, as it was given. */
    public readonly file: string,
    /** The 1-based line number of the line that is not valid; `undefined` when the error is about the whole file. */
    public readonly line?: number,
  ) {
    super(line === undefined ? `${file}: ${message}` : `${file}:${line}: ${message}`);
    this.name = 'InputFileError';
  }
}

/**
 * Reads an input file in JSON Lines: one message body per line.
 *
 * - A line holding a JSON object or array is sent as it is written, byte for byte.
 * - A line holding a JSON string is sent as the string's content, so a body that is not JSON
 *   can be written too: `"not-json"` sends the five bytes `not-json`, `""` an empty body.
 * - Blank lines are skipped. Any other line (not JSON, or a number, boolean or null) is an error,
 *   and so is a body SQS would refuse: an empty one, one with a character outside SQS's set
 *   (`#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF`: emoji are fine, NUL is
 *   not), or one of more than `maxBodyBytes`. A file that is not UTF-8 is an error too.
 *
 * The whole file is checked before anything is sent, so a bad line stops the run before a
 * single message is processed.
 *
 * @param file - path of the file (UTF-8)
 * @param maxBodyBytes - the largest body, in bytes (the source queue's maximum message size)
 * @throws InputFileError when the file cannot be read, is empty, or a line is not valid
 */
export async function readInputFile(
  file: string,
  maxBodyBytes: number = defaultSettings.queue.maxMessageSizeBytes,
): Promise<InputMessage[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory, not a file' : (error as Error).message;
    throw new InputFileError(`cannot read the input file (${why})`, file);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InputFileError('the file is not UTF-8', file);
  }
  const messages: InputMessage[] = [];
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = index + 1;
    let body: string | undefined;
    try {
      body = inputLineBody(raw, maxBodyBytes);
    } catch (error) {
      throw new InputFileError((error as Error).message, file, line);
    }
    if (body !== undefined) messages.push({ line, body });
  }
  if (messages.length === 0) throw new InputFileError('the input file holds no messages', file);
  return messages;
}

/**
 * The body one line of an input file sends (the rules of {@link readInputFile}): a JSON object or
 * array as it is written, a JSON string as its content. The command line's `send --body` reads
 * its values the same way.
 *
 * @param raw - the line (or value), surrounding white space ignored
 * @param maxBodyBytes - the largest body, in bytes
 * @returns the body, or `undefined` for a blank line
 * @throws Error saying what is wrong (not JSON, not an object, array or string, empty, a
 *   character SQS refuses, too large); the message names no file or line
 */
export function inputLineBody(raw: string, maxBodyBytes: number = defaultSettings.queue.maxMessageSizeBytes): string | undefined {
  const trimmed = raw.trim();
  if (trimmed === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    throw new Error(`the line is not JSON (${(error as Error).message}); write a body that is not JSON as a JSON string, e.g. "not-json"`);
  }
  let body: string;
  if (typeof value === 'string') body = value;
  else if (typeof value === 'object' && value !== null) body = trimmed;
  else throw new Error(`expected a JSON object (a message body) or a JSON string, got ${String(value)}`);
  if (body === '') throw new Error('the body is empty, and SQS refuses an empty message body');
  const refused = firstDisallowedCharacter(body);
  if (refused !== undefined) {
    throw new Error(
      `the body has a character SQS refuses (${refused}; allowed: tab, newline, carriage return, U+0020 to U+D7FF, U+E000 to U+FFFD, U+10000 and above)`,
    );
  }
  const size = Buffer.byteLength(body, 'utf8');
  if (size > maxBodyBytes) throw new Error(`the body is ${size} bytes; the source queue takes at most ${maxBodyBytes}`);
  return body;
}
