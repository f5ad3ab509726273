/**
 * The construct marks the runtime's optional peers (Powertools' Kafka deserializers, Avro's and
 * Protobuf's libraries, the SNS client) external when the handler's project has not installed
 * them, so a project that decodes only JSON and publishes to no SNS topic bundles without them.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { optionalFormatModules, withMissingFormatModulesExternal } from '../../packages/cdk/src/IdempotentConsumer.js';

describe('withMissingFormatModulesExternal', () => {
  const bare = mkdtempSync(join(tmpdir(), 'ic-format-modules-'));
  afterAll(() => rmSync(bare, { recursive: true, force: true }));

  it("adds each optional peer the entry's project has not installed", () => {
    const entry = join(bare, 'handler.ts');
    writeFileSync(entry, 'export const handler = () => undefined;\n');
    expect(withMissingFormatModulesExternal(entry, ['@aws-sdk/client-s3'])).toEqual([
      '@aws-sdk/client-s3',
      '@aws-lambda-powertools/kafka',
      'avro-js',
      'protobufjs',
      '@aws-sdk/client-sns',
    ]);
  });

  it('keeps what a project installed, some of them: the folder is looked for, not require.resolve (an exports map may hide it)', () => {
    const project = mkdtempSync(join(tmpdir(), 'ic-format-modules-project-'));
    try {
      for (const name of ['@aws-lambda-powertools/kafka', 'avro-js']) {
        mkdirSync(join(project, 'node_modules', name), { recursive: true });
        writeFileSync(
          join(project, 'node_modules', name, 'package.json'),
          JSON.stringify({ name, exports: { '.': { import: './index.js' } } }),
        );
      }
      mkdirSync(join(project, 'src'));
      expect(withMissingFormatModulesExternal(join(project, 'src', 'handler.ts'), [])).toEqual(['protobufjs', '@aws-sdk/client-sns']);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('bundles them when they are installed (this repository has them as dev dependencies)', () => {
    const entry = resolve('examples/cafe/handler.ts');
    expect(withMissingFormatModulesExternal(entry, ['@aws-sdk/client-s3'])).toEqual(['@aws-sdk/client-s3']);
  });

  it('does not list a module twice', () => {
    const entry = join(bare, 'handler.ts');
    expect(withMissingFormatModulesExternal(entry, ['avro-js'])).toEqual([
      'avro-js',
      '@aws-lambda-powertools/kafka',
      'protobufjs',
      '@aws-sdk/client-sns',
    ]);
    expect(optionalFormatModules).toEqual(['@aws-lambda-powertools/kafka', 'avro-js', 'protobufjs', '@aws-sdk/client-sns']);
  });
});
