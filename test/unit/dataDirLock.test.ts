import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOCK_FILE, lockDataDir } from '../../packages/local/src/dataDirLock.js';
import { DataDirError } from '../../packages/local/src/errors.js';

describe('lockDataDir', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lock-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('creates the directory, holds the lock while the run lasts, and releases it', async () => {
    const data = join(dir, 'data');
    const release = await lockDataDir(data);
    expect(await readFile(join(data, LOCK_FILE), 'utf8')).toBe(String(process.pid));
    await release();
    await expect(stat(join(data, LOCK_FILE))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a directory another live process holds', async () => {
    await writeFile(join(dir, LOCK_FILE), String(process.ppid));
    await expect(lockDataDir(dir)).rejects.toThrow(DataDirError);
    await expect(lockDataDir(dir)).rejects.toThrow(/in use by another run/);
  });

  it('takes over a lock left by a process that is gone', async () => {
    await writeFile(join(dir, LOCK_FILE), '2147483646');
    const release = await lockDataDir(dir);
    expect(await readFile(join(dir, LOCK_FILE), 'utf8')).toBe(String(process.pid));
    await release();
  });

  it('refuses a path that is a file', async () => {
    const file = join(dir, 'file');
    await writeFile(file, 'x');
    await expect(lockDataDir(file)).rejects.toThrow(/is not a directory/);
  });
});
