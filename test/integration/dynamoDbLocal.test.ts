import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { EmulatorStartError } from '../../packages/local/src/errors.js';
import { startDynamoDbLocal } from '../../packages/local/src/dynamoDbLocal.js';

/** The DynamoDB Local processes this test worker started (its children running the launcher). */
function javaChildren(): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'DynamoDbLocalLoopback'], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

async function until<T>(value: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = value();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('startDynamoDbLocal waits for the process, not the clock', () => {
  it('fails a start that makes no progress (a frozen JVM), and leaves nothing running', async () => {
    const starting = startDynamoDbLocal({ stallTimeoutMs: 3_000 });
    const pid = await until(() => javaChildren()[0]);
    process.kill(pid, 'SIGSTOP'); // frozen: no CPU time, no output

    await expect(starting).rejects.toThrow(EmulatorStartError);
    await expect(starting).rejects.toThrow(/made no progress \(no CPU time used, no output\) for \d+ ms while starting/);
    expect(javaChildren()).not.toContain(pid);
  });

  it('gives up after startTimeoutMs however the process is doing, and leaves nothing running', async () => {
    const starting = startDynamoDbLocal({ startTimeoutMs: 1 });

    await expect(starting).rejects.toThrow(/did not answer ListTables within 1 ms/);
    expect(javaChildren()).toEqual([]);
  });

  it('starts and answers with the defaults', async () => {
    const dynamoDb = await startDynamoDbLocal();
    try {
      expect(dynamoDb.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(dynamoDb.boundToLoopback).toBe(true);
    } finally {
      await dynamoDb.stop();
    }
    expect(javaChildren()).toEqual([]);
  });
});
