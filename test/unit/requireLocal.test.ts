/**
 * A CommonJS caller (a Jest setup, a CommonJS test harness) can `require` the local runtime: Node.js
 * loads ES modules with `require` from 20.19 and 22.12, but not a module graph with a top-level
 * `await` (ERR_REQUIRE_ASYNC_MODULE). The built package is what such a caller loads.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('the built @idempotent-consumer/local', () => {
  // The packages are built by `npm ci` (the root's `prepare`) and again by `npm test`.
  it('loads with require() from CommonJS, and its per-invocation store runs an invocation', () => {
    expect(existsSync(new URL('../../packages/local/dist/index.js', import.meta.url)), 'packages/local/dist: run npm run build').toBe(true);
    const script = [
      "const local = require('@idempotent-consumer/local');",
      "if (typeof local.runLocal !== 'function') process.exit(3);",
      'setTimeout(() => {',
      '  const store = globalThis.awslambda && globalThis.awslambda.InvokeStore;',
      "  process.stdout.write(String(store && typeof store.run === 'function'));",
      '}, 50);',
    ].join('\n');
    const result = spawnSync(process.execPath, ['--eval', script], { encoding: 'utf8', env: { ...process.env, NODE_NO_WARNINGS: '1' } });
    expect(result.stderr).not.toContain('ERR_REQUIRE_ASYNC_MODULE');
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe('true');
  });
});
