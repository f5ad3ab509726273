/**
 * How the constructs bundle a function: the consumer's (`IdempotentConsumer`) and the outbox
 * relay's (`OutboxRelay`).
 *
 * @module
 */
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { defaultSettings, type LambdaNodeRuntime, lambdaNodeRuntimes } from 'idempotent-consumer/settings';

/** The esbuild `target` of a Lambda Node.js runtime: `nodejs22.x` → `node22`, `nodejs24.x` → `node24`. */
export function esbuildTarget(runtime: LambdaNodeRuntime): string {
  return `node${runtime.replace(/^nodejs(\d+)\.x$/, '$1')}`;
}

/**
 * The aws-cdk-lib `Runtime` of a Lambda Node.js runtime identifier.
 *
 * @throws Error when `runtime` is not one of `lambdaNodeRuntimes`
 */
export function lambdaRuntime(runtime: LambdaNodeRuntime): Runtime {
  const runtimes: Record<LambdaNodeRuntime, Runtime> = { 'nodejs22.x': Runtime.NODEJS_22_X, 'nodejs24.x': Runtime.NODEJS_24_X };
  if (!(lambdaNodeRuntimes as readonly string[]).includes(runtime)) {
    throw new Error(`Lambda runtime ${JSON.stringify(runtime)} must be one of ${lambdaNodeRuntimes.join(', ')}`);
  }
  return runtimes[runtime];
}

/**
 * The cdk-nag acknowledgement of AwsSolutions-L1 (the function does not run the newest runtime
 * aws-cdk-lib knows): the runtime is a setting, chosen among the ones the library is tested on.
 */
export function runtimeAcknowledgement(runtime: LambdaNodeRuntime, what: string): { id: string; reason: string } {
  return {
    id: 'AwsSolutions-L1',
    reason:
      `${what} runs ${runtime} and is bundled for it (esbuild target ${esbuildTarget(runtime)}): the runtime is the setting ` +
      `function.runtime, one of ${lambdaNodeRuntimes.join(', ')}, the Lambda Node.js runtimes this library is tested on ` +
      '(npm run test:node22, test:node24); a newer one is supported once the tests run on it.',
  };
}

/**
 * The bundling defaults: one ES module with a source map, bundled by the local esbuild (no
 * Docker), the AWS SDK included (the version the tests ran) but for the S3 client, for the
 * default runtime's Node.js (`target` `node24`; the constructs set each function's `target` to
 * its runtime's: `node22` for `nodejs22.x`). `bundling` props are applied over these, key by key.
 *
 * The S3 client is loaded only to offload a dead letter larger than the DLQ takes (rare); the
 * `nodejs22.x` and `nodejs24.x` runtimes provide the AWS SDK v3 and resolve an ES module's import
 * of it through `NODE_PATH` (https://aws.amazon.com/blogs/compute/node-js-18-x-runtime-now-available-in-aws-lambda/,
 * "searches the folders listed in NODE_PATH when loading ES modules"). Left out, it saves about
 * 210 KiB of bundle and 7 ms of import CPU at every cold start (measured: median of 12 fresh
 * imports, 142.5 → 135.3 ms).
 */
export const defaultBundling: BundlingOptions = {
  forceDockerBundling: false,
  format: OutputFormat.ESM,
  target: esbuildTarget(defaultSettings.function.runtime),
  mainFields: ['module', 'main'],
  // Bundled CommonJS dependencies (parts of the AWS SDK) call `require`, which an ES module lacks.
  banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  bundleAwsSDK: true,
  externalModules: ['@aws-sdk/client-s3'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
};
