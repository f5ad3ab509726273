import { constants } from 'node:fs';
import { link, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ArchiveDigest } from './archiveFormat.js';
import { ArchiveFileError } from './errors.js';

/**
 * Writes an archive file round by round, each round's lines followed by a trailer line (count and
 * SHA-256 of every message line so far; see `ArchiveTrailer`), each round flushed to disk before
 * {@link write} resolves. {@link finish} appends the final trailer, which is what tells `replay`
 * the file is whole: a file cut at any line, or whose writer stopped, does not end with one.
 */
export class ArchiveWriter {
  readonly #file: string;
  readonly #overwrite: boolean;
  readonly #digest = new ArchiveDigest();
  #created = false;
  #finished = false;

  /**
   * @param file - the archive to write
   * @param overwrite - replace `file` if it exists (else an existing file is an error)
   */
  constructor(file: string, overwrite: boolean) {
    this.#file = file;
    this.#overwrite = overwrite;
  }

  /** Message lines written so far. */
  get messages(): number {
    return this.#digest.messages;
  }

  /** Whether the file exists (the first {@link write} created it). */
  get created(): boolean {
    return this.#created;
  }

  /**
   * Writes lines and a trailer; the first call creates the file (see {@link writeArchiveFile}).
   * When this resolves, the lines are on disk.
   *
   * @param final - this is the last round: its trailer is the final one, and {@link finish} adds nothing
   * @throws ArchiveFileError when the file exists (first call, without `overwrite`) or cannot be written
   */
  async write(lines: readonly string[], final: boolean): Promise<void> {
    if (this.#finished) throw new Error('the archive is finished');
    for (const line of lines) this.#digest.add(line);
    const content = [...lines, this.#digest.trailer(final)];
    if (!this.#created) await writeArchiveFile(this.#file, content, this.#overwrite);
    else await appendArchiveLines(this.#file, content);
    this.#created = true;
    this.#finished = final;
  }

  /** Appends the final trailer, unless the last {@link write} was final or nothing was written. */
  async finish(): Promise<void> {
    if (this.#finished || !this.#created) return;
    await appendArchiveLines(this.#file, [this.#digest.trailer(true)]);
    this.#finished = true;
  }
}

/**
 * Writes a new archive file durably: the lines go to a temporary file beside it, which is
 * flushed to disk (`fsync`) and then linked (or, with `overwrite`, renamed) into place, and the
 * folder is flushed too. When this resolves, the file is complete on disk; when it throws, no
 * file of that name was created or changed.
 *
 * @param lines - archive lines without newlines; each is written followed by `\n`
 * @throws ArchiveFileError when the file exists (and not `overwrite`) or cannot be written
 */
export async function writeArchiveFile(file: string, lines: readonly string[], overwrite: boolean): Promise<void> {
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    const handle = await open(temporary, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
    try {
      await handle.writeFile(lines.map((line) => `${line}\n`).join(''), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (overwrite) {
      await rename(temporary, file);
    } else {
      await link(temporary, file);
      await unlink(temporary);
    }
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new ArchiveFileError(`${file} exists; pass --force to overwrite it`, { cause: error });
    throw new ArchiveFileError(`cannot write ${file}: ${(error as Error).message}`, { cause: error });
  }
  await syncFolder(dirname(file));
}

/**
 * Appends lines to an archive file and flushes it to disk (`fsync`) before resolving.
 *
 * @throws ArchiveFileError when the file cannot be written
 */
export async function appendArchiveLines(file: string, lines: readonly string[]): Promise<void> {
  try {
    const handle = await open(file, 'a');
    try {
      await handle.writeFile(lines.map((line) => `${line}\n`).join(''), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new ArchiveFileError(`cannot append to ${file}: ${(error as Error).message}`, { cause: error });
  }
}

/** Flushes a folder's entries (the new file's name) to disk; a no-op where folders cannot be opened. */
async function syncFolder(folder: string): Promise<void> {
  try {
    const handle = await open(folder, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some platforms and file systems refuse fsync on a folder; the file itself is synced.
  }
}
