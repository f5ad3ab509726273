/**
 * The function's runtime is a setting (`settings.function.runtime`: `nodejs22.x` or
 * `nodejs24.x`): the consumer function and the outbox relay run on it, esbuild bundles both for
 * its Node.js (`--target=node22` / `node24`), and cdk-nag's AwsSolutions-L1 is acknowledged for
 * that runtime. The esbuild commands are read from the bundling itself (`spawnSync`, which
 * aws-cdk-lib's local bundling calls), so the test sees the target the bundles were built with.
 */
import { createRequire } from 'node:module';
import { Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { OutboxRelay } from '../../packages/cdk/src/OutboxRelay.js';
import { defaultBundling } from '../../packages/cdk/src/bundling.js';
import {
  InvalidSettingsError,
  defaultSettings,
  lambdaNodeRuntimes,
  withOverrides,
} from '../../packages/idempotent-consumer/src/settings/index.js';
import { acknowledgedRules, newApp, skipBundling, synthCafeStack, synthConsumer } from './stackHelpers.js';

/** The `child_process` module aws-cdk-lib's bundling requires (the same object). */
const childProcess = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');

/** Runs `synth` and returns its result with the `--target` of every esbuild command it ran. */
function withEsbuildTargets<T>(synth: () => T): { result: T; targets: string[] } {
  const spawnSync = vi.spyOn(childProcess, 'spawnSync');
  try {
    const result = synth();
    const commands = spawnSync.mock.calls
      .map(([command, args]) => [command, ...(args ?? [])].join(' '))
      .filter((line) => /esbuild/.test(line));
    return { result, targets: commands.flatMap((line) => [...line.matchAll(/--target=(\S+)/g)].map((match) => match[1]!)) };
  } finally {
    spawnSync.mockRestore();
  }
}

/** The `Runtime` of every `AWS::Lambda::Function` of the template, by logical id. */
function runtimes(template: Template): Record<string, unknown> {
  const functions = template.findResources('AWS::Lambda::Function') as Record<string, { Properties: { Runtime?: unknown } }>;
  return Object.fromEntries(Object.entries(functions).map(([id, resource]) => [id, resource.Properties.Runtime]));
}

describe('the runtime setting', () => {
  it('is nodejs24.x by default, and the default bundling targets node24', () => {
    expect(defaultSettings.function.runtime).toBe('nodejs24.x');
    expect(defaultBundling.target).toBe('node24');
  });

  it.each(lambdaNodeRuntimes)('%s: the consumer and the outbox relay run on it, bundled for its Node.js', (runtime) => {
    const target = runtime.replace(/^nodejs(\d+)\.x$/, 'node$1');
    const { result, targets } = withEsbuildTargets(() =>
      synthConsumer({
        bundle: true,
        props: { settings: withOverrides({ function: { runtime } }), outbox: { destination: { create: 'queue' } } },
      }),
    );
    const { consumer, template } = result;

    expect(Object.values(runtimes(template))).toEqual([runtime, runtime]);
    template.hasResourceProperties('AWS::Lambda::Function', { Runtime: runtime, Handler: 'index.handler', Architectures: ['arm64'] });
    // One esbuild run per function: the consumer's and the relay's.
    expect(targets).toEqual([target, target]);
    for (const fn of [consumer.function, consumer.outboxRelay!.function]) {
      const reason = acknowledgedRules(fn).get('AwsSolutions-L1');
      expect(reason).toContain(`runs ${runtime}`);
      expect(reason).toContain(`esbuild target ${target}`);
    }
  });

  it('leaves a target given in `bundling` as it is (applied key by key over the runtime’s)', () => {
    const { targets } = withEsbuildTargets(() =>
      synthConsumer({
        bundle: true,
        props: {
          settings: withOverrides({ function: { runtime: 'nodejs22.x' } }),
          bundling: { esbuildArgs: { '--conditions': '@idempotent-consumer/source' }, target: 'node22.12' },
        },
      }),
    );
    expect(targets).toEqual(['node22.12']);
  });

  it('refuses another runtime before anything is built, naming the ones accepted', () => {
    const settings = withOverrides({ function: { runtime: 'nodejs20.x' as never } });
    const build = () => synthConsumer({ props: { settings } });
    expect(build).toThrow(InvalidSettingsError);
    expect(build).toThrow('function runtime "nodejs20.x" must be one of nodejs22.x, nodejs24.x');
  });
});

describe('OutboxRelay on its own', () => {
  const relayStack = (runtime?: (typeof lambdaNodeRuntimes)[number]) => {
    const stack = new Stack(newApp(skipBundling), 'Relay');
    const inboxTable = new Table(stack, 'Inbox', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      stream: StreamViewType.NEW_IMAGE,
    });
    const idempotencyTable = new Table(stack, 'Idempotency', { partitionKey: { name: 'id', type: AttributeType.STRING } });
    return new OutboxRelay(stack, 'OutboxRelay', {
      consumerName: 'payments',
      inboxTable,
      idempotencyTable,
      destination: { create: 'topic' },
      ...(runtime === undefined ? {} : { runtime }),
    });
  };

  it('runs on the default runtime, or on the one it is given', () => {
    expect(relayStack().function.runtime.name).toBe('nodejs24.x');
    expect(relayStack('nodejs22.x').function.runtime.name).toBe('nodejs22.x');
  });

  it('refuses a runtime that is not one of lambdaNodeRuntimes', () => {
    expect(() => relayStack('nodejs18.x' as never)).toThrow('Lambda runtime "nodejs18.x" must be one of nodejs22.x, nodejs24.x');
  });
});

describe('CafeStack with -c nodeRuntime', () => {
  it('runs the function and the relay on the runtime the context names', () => {
    const { stack, template } = synthCafeStack({ context: { nodeRuntime: 'nodejs22.x' } });
    expect(stack.consumer.settings.function.runtime).toBe('nodejs22.x');
    expect(new Set(Object.values(runtimes(template)))).toEqual(new Set(['nodejs22.x']));
  });

  it('refuses a runtime that is not one of them', () => {
    expect(() => synthCafeStack({ context: { nodeRuntime: 'nodejs20.x' } })).toThrow(
      'CDK context "nodeRuntime" must be one of nodejs22.x, nodejs24.x, got "nodejs20.x"',
    );
  });
});
