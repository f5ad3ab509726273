import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DataDirError } from './errors.js';

/** Name of the lock file a run keeps in its data directory while it runs. */
export const LOCK_FILE = '.idempotent-consumer.lock';

/**
 * Takes the data directory for this process: creates it if missing and writes a lock file with
 * this process's id. DynamoDB Local must not open one database file twice (two runs sharing a
 * `--data-dir` corrupt each other's state), so a second run is refused while the first one is
 * alive; a lock left by a process that is gone is taken over.
 *
 * @returns a function that releases the lock (idempotent)
 * @throws DataDirError when `dir` is not a directory, or a live process holds its lock
 */
export async function lockDataDir(dir: string): Promise<() => Promise<void>> {
  try {
    await mkdir(dir, { recursive: true });
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
  } catch (error) {
    throw new DataDirError(`--data-dir ${dir} is not a directory that can be used (${(error as Error).message})`, { cause: error });
  }
  const lock = join(dir, LOCK_FILE);
  for (;;) {
    try {
      await writeFile(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(await readFile(lock, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) {
        throw new DataDirError(
          `--data-dir ${dir} is in use by another run (process ${holder}); wait for it to end or use another directory`,
        );
      }
      await rm(lock, { force: true });
    }
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    await rm(lock, { force: true });
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
