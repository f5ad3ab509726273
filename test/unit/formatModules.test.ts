/**
 * The construct marks Avro's and Protobuf's libraries external when the handler's project has not
 * installed them, so a project that decodes only JSON bundles without them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { optionalFormatModules, withMissingFormatModulesExternal } from '../../packages/cdk/src/IdempotentConsumer.js';

describe('withMissingFormatModulesExternal', () => {
  const bare = mkdtempSync(join(tmpdir(), 'ic-format-modules-'));
  afterAll(() => rmSync(bare, { recursive: true, force: true }));

  it('adds avro-js and protobufjs when the entry\'s project cannot resolve them', () => {
    const entry = join(bare, 'handler.ts');
    writeFileSync(entry, 'export const handler = () => undefined;\n');
    expect(withMissingFormatModulesExternal(entry, ['@aws-sdk/client-s3'])).toEqual(['@aws-sdk/client-s3', 'avro-js', 'protobufjs']);
  });

  it('bundles them when they are installed (this repository has both as dev dependencies)', () => {
    const entry = resolve('examples/cafe/handler.ts');
    expect(withMissingFormatModulesExternal(entry, ['@aws-sdk/client-s3'])).toEqual(['@aws-sdk/client-s3']);
  });

  it('does not list a module twice', () => {
    const entry = join(bare, 'handler.ts');
    expect(withMissingFormatModulesExternal(entry, ['avro-js'])).toEqual(['avro-js', 'protobufjs']);
    expect(optionalFormatModules).toEqual(['avro-js', 'protobufjs']);
  });
});
