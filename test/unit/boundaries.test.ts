import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const config = require('../../.dependency-cruiser.cjs') as { forbidden: never; options: Record<string, unknown> };

describe("the packages' boundaries (dependency-cruiser, the rules npm test checks on the tree)", () => {
  it('flags a package that imports an example, a relative import into another package, and an import cycle, type-only included', async () => {
    const fixture = fileURLToPath(new URL('../fixtures/boundary', import.meta.url));
    const result = await cruise(['packages', 'examples'], {
      ...config.options,
      validate: true,
      ruleSet: { forbidden: config.forbidden },
      baseDir: fixture,
      tsConfig: undefined,
      enhancedResolveOptions: { extensionAlias: { '.js': ['.ts', '.js'] } },
    } as never);
    const output = typeof result.output === 'string' ? JSON.parse(result.output) : result.output;
    const violations = (output.summary.violations as { rule: { name: string }; from: string; to: string }[])
      .map((v) => [v.rule.name, v.from, v.to])
      .sort();
    expect(violations).toEqual([
      ['library-imports-example-or-tool', 'packages/idempotent-consumer/src/engine.ts', 'examples/demo/domain.ts'],
      ['no-circular', 'packages/cdk/src/cycle.ts', 'packages/cdk/src/other.ts'],
      ['relative-import-across-packages', 'packages/idempotent-consumer/src/engine.ts', 'examples/demo/domain.ts'],
      ['relative-import-across-packages', 'packages/local/src/runner.ts', 'packages/idempotent-consumer/src/engine.ts'],
    ]);
  });

  it('finds no violation in the tree: packages depend in one direction, by name, without cycles', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const result = await cruise(['packages', 'examples', 'tools'], {
      ...config.options,
      validate: true,
      ruleSet: { forbidden: config.forbidden },
      baseDir: root,
    } as never);
    const output = typeof result.output === 'string' ? JSON.parse(result.output) : result.output;
    expect(output.summary.violations).toEqual([]);
    expect(output.summary.totalCruised).toBeGreaterThan(200);
  });
});

describe('the library names no example (issue 7: the café is an example, not the product)', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const filesUnder = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
    );

  it.each(['packages/idempotent-consumer/src', 'packages/cdk/src', 'packages/cli/src', 'packages/local/src'])(
    '%s/ names no café term (orderId, OrderPaid, LEDGER, cafe)',
    (dir) => {
      const offenders = filesUnder(dir).flatMap((file) =>
        readFileSync(join(root, file), 'utf8')
          .split('\n')
          .flatMap((line, index) => (/orderId|OrderPaid|LEDGER|cafe/i.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
      );
      expect(offenders).toEqual([]);
    },
  );
});
