import { constants } from 'node:fs';
import { link, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ArchiveFileError } from './errors.js';

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
