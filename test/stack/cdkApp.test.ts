import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { App, Stack } from 'aws-cdk-lib';
import { TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { CafeStack } from '../../examples/cafe/infra/CafeStack.js';
import { consumerContext } from '../../packages/cdk/src/consumerContext.js';
import { isInputError, runCdkApp, type RunCdkAppIo } from '../../packages/cdk/src/runCdkApp.js';
import { cdkJsonContext, skipBundling } from './stackHelpers.js';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(import.meta.url);

/** An io that records what runCdkApp printed and the exit code it asked for. */
function recordingIo(): RunCdkAppIo & { lines: string[]; codes: number[] } {
  const lines: string[] = [];
  const codes: number[] = [];
  return { lines, codes, error: (line) => lines.push(line), exit: (code) => codes.push(code) };
}

/** consumerContext of a construct in an app with this context. */
const contextOf = (context: Record<string, unknown>) => consumerContext(new Stack(new App({ context }), 'S'));

describe("cdk.json (the café's, which owns the CDK app)", () => {
  const cdkJson = JSON.parse(readFileSync(join(repositoryRoot, 'examples', 'cafe', 'cdk.json'), 'utf8')) as {
    app: string;
    context: Record<string, unknown>;
  };

  it('runs the TypeScript app with the source condition, so in-repo code imports the package by name', () => {
    expect(cdkJson.app).toBe('npx tsx --conditions=@idempotent-consumer/source infra/app.ts');
  });

  it('sets every feature flag that `cdk init` sets for this aws-cdk-lib version, to the recommended value', () => {
    const recommended = require('aws-cdk-lib/recommended-feature-flags.json') as Record<string, unknown>;

    expect(Object.keys(recommended).length).toBeGreaterThan(50);
    for (const [flag, value] of Object.entries(recommended)) {
      expect({ flag, value: cdkJson.context[flag] }).toEqual({ flag, value });
    }
    // The stack tests synthesize with the same context.
    expect(cdkJsonContext()).toEqual(cdkJson.context);
  });
});

describe('consumerContext', () => {
  it('reads -c strings and cdk.json values alike', () => {
    expect(contextOf({})).toEqual({});
    expect(contextOf({ fifo: 'true', alarmEmail: ' ops@example.com ', tableEncryption: 'customer-managed' })).toEqual({
      fifo: true,
      alarmEmail: 'ops@example.com',
      tableEncryption: TableEncryption.CUSTOMER_MANAGED,
    });
    expect(contextOf({ fifo: false, tableEncryption: 'aws-managed', nodeRuntime: 'nodejs22.x' })).toEqual({
      fifo: false,
      tableEncryption: TableEncryption.AWS_MANAGED,
      nodeRuntime: 'nodejs22.x',
    });
    expect(contextOf({ kafkaBootstrapServers: 'b1:9096, b2:9096', kafkaSecretArn: 'arn', kafkaTopic: 't' }).kafka).toEqual({
      bootstrapServers: ['b1:9096', 'b2:9096'],
      secretArn: 'arn',
      topic: 't',
    });
    expect(contextOf({ kafkaBootstrapServers: ['b1:9096'] }).kafka).toEqual({ bootstrapServers: ['b1:9096'] });
    expect(contextOf({ capacityProviderArn: 'arn:cp', concurrencyPerEnvironment: '8' }).managedInstances).toEqual({
      capacityProviderArn: 'arn:cp',
      perExecutionEnvironmentMaxConcurrency: 8,
    });
    expect(contextOf({ capacityProviderArn: 'arn:cp' }).managedInstances).toEqual({ capacityProviderArn: 'arn:cp' });
    expect(contextOf({ kafkaClusterArn: 'c', kafkaSecretKeyArn: 'k', kafkaConsumerGroup: 'g' }).kafka).toEqual({
      clusterArn: 'c',
      secretEncryptionKeyArn: 'k',
      consumerGroupId: 'g',
    });
  });

  it('reports every bad value at once, naming the key and the accepted values', () => {
    let error: unknown;
    try {
      contextOf({
        fifo: 'yes',
        tableEncryption: 'cmk',
        alarmEmail: 'nope',
        nodeRuntime: 'nodejs20.x',
        kafkaTopic: 42,
        kafkaClusterARN: 'x',
        concurrencyPerEnvironment: '0',
      });
    } catch (caught) {
      error = caught;
    }

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect((error as InvalidSettingsError).problems).toEqual([
      'CDK context "fifo" must be true or false (for example -c fifo=true), got "yes"',
      'alarm email "nope" is not an email address (for example -c alarmEmail=ops@example.com)',
      'CDK context "tableEncryption" must be one of default, aws-managed, customer-managed, got "cmk"',
      'CDK context "nodeRuntime" must be one of nodejs22.x, nodejs24.x, got "nodejs20.x"',
      'CDK context "concurrencyPerEnvironment" must be a whole number from 1 to 1600 (for example -c concurrencyPerEnvironment=32), got "0"',
      'CDK context "kafkaTopic" must be a non-empty string (for example -c kafkaTopic=...), got 42',
      'unknown CDK context "kafkaClusterARN": the Kafka keys are kafkaClusterArn, kafkaBootstrapServers, kafkaSecretArn, kafkaSecretKeyArn, kafkaTopic, kafkaConsumerGroup',
    ]);
    expect(() => contextOf({ concurrencyPerEnvironment: '8' })).toThrow(
      'CDK context "concurrencyPerEnvironment" needs "capacityProviderArn": it is the concurrency of Lambda Managed Instances',
    );
  });
});

describe('runCdkApp', () => {
  it('synthesizes what build adds, and reports nothing', () => {
    const io = recordingIo();
    const outdir = mkdtempSync(join(tmpdir(), 'run-cdk-app-'));
    try {
      const app = runCdkApp((a) => new Stack(a, 'Empty'), { outdir, context: skipBundling }, io);

      expect(app?.node.tryFindChild('Empty')).toBeDefined();
      expect(readFileSync(join(outdir, 'manifest.json'), 'utf8')).toContain('Empty');
      expect(io.lines).toEqual([]);
      expect(io.codes).toEqual([]);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('prints a refused setting as its message alone and exits 1', () => {
    const io = recordingIo();

    const app = runCdkApp((a) => new CafeStack(a, 'Cafe'), { context: { ...cdkJsonContext(), ...skipBundling, fifo: 'yes' } }, io);

    expect(app).toBeUndefined();
    expect(io.lines).toEqual([
      'error: Invalid consumer settings:\n- CDK context "fifo" must be true or false (for example -c fifo=true), got "yes"',
    ]);
    expect(io.codes).toEqual([1]);
  });

  it('treats a validation that fails when the app synthesizes as refused input too', () => {
    const io = recordingIo();
    const outdir = mkdtempSync(join(tmpdir(), 'run-cdk-app-'));
    try {
      runCdkApp(
        (a) => {
          const stack = new CafeStack(a, 'Tampered');
          stack.consumer.kafkaSource!.cfnMapping.maximumRetryAttempts = -1;
        },
        {
          outdir,
          context: { ...cdkJsonContext(), ...skipBundling, kafkaClusterArn: 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc' },
        },
        io,
      );
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }

    expect(io.lines).toHaveLength(1);
    expect(io.lines[0]).toMatch(/^error: Validation failed with the following errors:/);
    expect(io.lines[0]).toContain('MaximumRetryAttempts -1');
    expect(io.lines[0]).not.toMatch(/\n\s+at /);
    expect(io.codes).toEqual([1]);
  });

  it('rethrows anything else with its stack: a bug is worth its trace', () => {
    const io = recordingIo();
    const bug = new TypeError('undefined is not a function');

    expect(() =>
      runCdkApp(
        () => {
          throw bug;
        },
        {},
        io,
      ),
    ).toThrow(bug);
    expect(io.codes).toEqual([]);
    expect(isInputError(bug)).toBe(false);
    expect(isInputError(new InvalidSettingsError(['x']))).toBe(true);
    expect(isInputError('a string')).toBe(false);
  });
});

/** The CLI starts tsx, esbuild and the app: allow for a loaded machine (milliseconds). */
const CLI_TIMEOUT_MS = 300_000;

describe('npx cdk synth (the CLI, with cdk.json)', () => {
  const run = promisify(execFile);
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-synth-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  /** Runs `npx cdk synth --quiet` with `args` in the café's folder (its cdk.json); returns its exit code and output. */
  async function synth(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      // No traffic beyond this machine: no CLI telemetry, no notices fetched.
      const { stdout, stderr } = await run('npx', ['cdk', 'synth', '--quiet', '--no-notices', '--output', outdir, ...args], {
        cwd: join(repositoryRoot, 'examples', 'cafe'),
        env: { ...process.env, CI: 'true', FORCE_COLOR: '0', CDK_DISABLE_CLI_TELEMETRY: 'true' },
        timeout: CLI_TIMEOUT_MS - 10_000,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
    }
  }

  it(
    'synthesizes the café stack (bundling its handler) without a feature flag notice',
    async () => {
      const { code, stdout, stderr } = await synth([]);

      expect({ code, stderr: stderr.includes('feature flags') }).toEqual({ code: 0, stderr: false });
      expect(stdout).not.toContain('feature flags');
      const template = JSON.parse(readFileSync(join(outdir, 'CafeOrders.template.json'), 'utf8')) as { Resources: object };
      expect(JSON.stringify(template.Resources)).toContain('"Handler":"index.handler"');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'prints a bad context value as one clear message, without a stack trace, and exits non-zero',
    async () => {
      const { code, stderr } = await synth(['-c', 'fifo=yes']);

      expect(code).not.toBe(0);
      expect(stderr).toContain(
        'error: Invalid consumer settings:\n- CDK context "fifo" must be true or false (for example -c fifo=true), got "yes"',
      );
      expect(stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
    },
    CLI_TIMEOUT_MS,
  );
});
