/**
 * What the Kafka formats cost a Lambda bundle: a handler that does not build an Avro or Protobuf
 * format bundles none of the decoders (Powertools' Kafka consumer, `avro-js`, `protobufjs`); one
 * that builds an Avro format does. Bundled with esbuild as the construct bundles (`defaultBundling`).
 */
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The inputs esbuild put in the bundle of `contents` (a handler module), by path. */
async function bundledInputs(contents: string): Promise<string[]> {
  const result = await build({
    stdin: { contents, resolveDir: repositoryRoot, loader: 'ts', sourcefile: 'handler.ts' },
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    mainFields: ['module', 'main'],
    conditions: ['@idempotent-consumer/source'],
    minify: true,
    metafile: true,
    logLevel: 'silent',
  });
  const outputs = Object.values((result.metafile as Metafile).outputs);
  return outputs.flatMap((output) =>
    Object.entries(output.inputs)
      .filter(([, input]) => input.bytesInOutput > 0)
      .map(([path]) => path),
  );
}

const decoders =
  /@aws-lambda-powertools\/kafka\/lib\/esm\/(consumer|deserializer\/(avro|protobuf))\.js$|node_modules\/(avro-js|protobufjs)\//;

describe('the Kafka formats in a Lambda bundle', () => {
  it("are not in the bundle of a JSON-only handler (the café's)", async () => {
    const inputs = await bundledInputs("export { handler } from './examples/cafe/handler.js';");
    expect(inputs).toContain('packages/idempotent-consumer/src/batch/handleKafkaEvent.ts');
    expect(inputs.filter((path) => decoders.test(path) || path.endsWith('kafkaValueDecoder.ts'))).toEqual([]);
  }, 120_000);

  it('are in the bundle of a handler that builds an Avro format', async () => {
    const inputs = await bundledInputs(`
      import { createIdempotentConsumer } from 'idempotent-consumer';
import { kafkaAvroFormat } from 'idempotent-consumer/kafka';
      export const handler = createIdempotentConsumer({
        parse: (json) => json as { id: string },
        idempotencyKey: 'id',
        decide: () => undefined,
        kafka: { value: kafkaAvroFormat('{"type":"record","name":"R","fields":[{"name":"id","type":"string"}]}') },
      });
    `);
    expect(inputs).toContain('packages/idempotent-consumer/src/batch/kafkaValueDecoder.ts');
    expect(inputs).toContain('node_modules/@aws-lambda-powertools/kafka/lib/esm/consumer.js');
    expect(inputs.some((path) => path.startsWith('node_modules/avro-js/'))).toBe(true);
  }, 120_000);
});
