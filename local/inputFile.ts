import { readFile } from 'node:fs/promises';

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
    public readonly file: string,
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
 * - Blank lines are skipped. Any other line (not JSON, or a number, boolean or null) is an error.
 *
 * The whole file is checked before anything is sent, so a bad line stops the run before a
 * single message is processed.
 *
 * @param file - path of the file (UTF-8)
 * @throws InputFileError when the file cannot be read, is empty, or a line is not valid
 */
export async function readInputFile(file: string): Promise<InputMessage[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory, not a file' : (error as Error).message;
    throw new InputFileError(`cannot read the input file (${why})`, file);
  }
  const messages: InputMessage[] = [];
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (error) {
      throw new InputFileError(
        `the line is not JSON (${(error as Error).message}); write a body that is not JSON as a JSON string, e.g. "not-json"`,
        file,
        line,
      );
    }
    if (typeof value === 'string') messages.push({ line, body: value });
    else if (typeof value === 'object' && value !== null) messages.push({ line, body: trimmed });
    else throw new InputFileError(`expected a JSON object (a message body) or a JSON string, got ${String(value)}`, file, line);
  }
  if (messages.length === 0) throw new InputFileError('the input file holds no messages', file);
  return messages;
}
