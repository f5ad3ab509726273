/**
 * `docs/kafka.md` as a user reads it: every TypeScript block is a file of one small project (its
 * title is the path). The test writes them out, type-checks them with the repository's compiler
 * options, runs `bin/app.ts` as `cdk synth` runs an app (context and output directory from the
 * environment; asset bundling skipped), with the cdk-nag AWS Solutions checks the app adds, and
 * checks the mappings the templates hold. The page's bad-secret command must print what the page
 * shows, without a stack trace.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type App, Stack } from 'aws-cdk-lib';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { KafkaSource } from '../../packages/cdk/src/KafkaSource.js';
import { describeResult, runCommand, type CommandResult } from '../package/runCommand.js';
import { cdkJsonContext, cfnResourceCount, refusal, skipBundling, synthConsumer } from './stackHelpers.js';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));
const page = readFileSync(join(repositoryRoot, 'docs', 'kafka.md'), 'utf8');

/** A fenced block of the page: its language, its `title="…"` and its text. */
interface Block {
  readonly language: string;
  readonly title: string | undefined;
  readonly text: string;
}
const blocks: Block[] = [...page.matchAll(/^```(\w*)(?: title="([^"]+)")?\n([\s\S]*?)^```$/gm)].map((match) => ({
  language: match[1] ?? '',
  title: match[2],
  text: match[3] ?? '',
}));
const files = blocks.filter((block) => block.language === 'ts');

const SLOW_MS = 300_000;
type Resource = { Type: string; Properties: Record<string, unknown> };

let project: string;
let outdir: string;

/** Runs the project's `bin/app.ts` as `cdk synth` runs an app: context from the environment, templates into `outdir`. */
function synthesize(context: Record<string, unknown> = {}): Promise<CommandResult> {
  return runCommand(join(repositoryRoot, 'node_modules', '.bin', 'tsx'), ['--conditions=@idempotent-consumer/source', 'bin/app.ts'], {
    cwd: project,
    env: {
      CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJsonContext(), ...skipBundling, ...context }),
      CDK_OUTDIR: outdir,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      FORCE_COLOR: '0',
    },
  });
}

/** The Kafka event source mappings of a synthesized stack, in template order. */
function kafkaMappings(stackName: string): Record<string, unknown>[] {
  const template = JSON.parse(readFileSync(join(outdir, `${stackName}.template.json`), 'utf8')) as { Resources: Record<string, Resource> };
  return Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::Lambda::EventSourceMapping' && resource.Properties.Topics !== undefined)
    .map((resource) => resource.Properties);
}

/** Every IAM statement of a synthesized stack. */
function statements(stackName: string): { Action: string | string[]; Resource: unknown; Condition?: unknown }[] {
  const template = JSON.parse(readFileSync(join(outdir, `${stackName}.template.json`), 'utf8')) as { Resources: Record<string, Resource> };
  return Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::IAM::Policy')
    .flatMap(
      (resource) => (resource.Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }).Statement,
    );
}

beforeAll(() => {
  // Inside the repository, so the files import the package by name (its self-reference) as a user's project does.
  mkdirSync(join(repositoryRoot, '.scratch'), { recursive: true });
  project = mkdtempSync(join(repositoryRoot, '.scratch', 'kafka-docs-'));
  outdir = join(project, 'cdk.out');
  for (const file of files) {
    const path = join(project, file.title ?? 'untitled.ts');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, file.text);
  }
});

afterAll(() => {
  if (project !== undefined) rmSync(project, { recursive: true, force: true });
});

describe('docs/kafka.md', () => {
  it('names the file of every TypeScript block, each once, and holds the app, the stacks and the handlers', () => {
    expect(files.filter((file) => file.title === undefined).map((file) => file.text.slice(0, 80))).toEqual([]);
    const titles = files.map((file) => file.title);
    expect(new Set(titles).size).toBe(titles.length);
    expect(titles).toEqual(
      expect.arrayContaining([
        'bin/app.ts',
        'lib/MskReservationsStack.ts',
        'lib/ScramReservationsStack.ts',
        'lib/SelfManagedReservationsStack.ts',
        'src/handler.ts',
        'src/protobufHandler.ts',
      ]),
    );
  });

  it(
    "type-checks every TypeScript block with the repository's compiler options",
    () => {
      const config = ts.readConfigFile(join(repositoryRoot, 'tsconfig.json'), (path) => ts.sys.readFile(path));
      const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, repositoryRoot);
      const roots = files.map((file) => join(project, file.title!));
      const program = ts.createProgram(roots, { ...options, noEmit: true });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .filter((diagnostic) => diagnostic.file === undefined || roots.includes(diagnostic.file.fileName));
      expect(
        diagnostics.map((diagnostic) => {
          const where =
            diagnostic.file === undefined
              ? ''
              : `${diagnostic.file.fileName.slice(project.length + 1)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}: `;
          return `${where}${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
        }),
      ).toEqual([]);
    },
    SLOW_MS,
  );

  describe('bin/app.ts, run as cdk synth runs it (with cdk-nag)', () => {
    let result: CommandResult;
    beforeAll(async () => {
      result = await synthesize();
    }, SLOW_MS);

    it('synthesizes the three stacks, exit code 0, no finding and nothing on standard error', () => {
      expect(result.exitCode, describeResult('bin/app.ts', result)).toBe(0);
      expect(result.stderr.trim()).toBe('');
      for (const stack of ['MskReservations', 'ScramReservations', 'SelfManagedReservations'])
        expect(kafkaMappings(stack).length, stack).toBeGreaterThan(0);
    });

    it("MSK with IAM: the settings' mapping (finite retries 3 × 50 − 1, the DLQ on failure), and a second topic with the Glue registry on the same function", () => {
      const [reservations, web] = kafkaMappings('MskReservations');
      expect(reservations).toMatchObject({
        Topics: ['reservations'],
        AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'reservations-consumer' },
        StartingPosition: 'LATEST',
        BatchSize: 50,
        MaximumRetryAttempts: 154,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        DestinationConfig: { OnFailure: { Destination: expect.anything() } },
      });
      expect(reservations?.SourceAccessConfigurations).toBeUndefined();
      expect(web).toMatchObject({
        Topics: ['web-reservations'],
        FunctionName: reservations?.FunctionName,
        MaximumRetryAttempts: 154,
        AmazonManagedKafkaEventSourceConfig: {
          SchemaRegistryConfig: {
            SchemaRegistryURI: 'arn:aws:glue:eu-west-1:123456789012:registry/shop',
            EventRecordFormat: 'SOURCE',
            SchemaValidationConfigs: [{ Attribute: 'VALUE' }],
          },
        },
      });
      const actions = statements('MskReservations').flatMap((statement) => [statement.Action].flat());
      expect(actions).toEqual(expect.arrayContaining(['glue:GetRegistry', 'glue:GetSchemaVersion', 'kafka-cluster:ReadData']));
    });

    it('MSK with SASL/SCRAM: the complete secret ARN in the mapping and the policy, its key through Secrets Manager only', () => {
      const secretArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_reservations-AbCdEf';
      const [mapping] = kafkaMappings('ScramReservations');
      expect(mapping?.SourceAccessConfigurations).toEqual([{ Type: 'SASL_SCRAM_512_AUTH', URI: secretArn }]);
      const all = statements('ScramReservations');
      expect(
        all.some(
          (statement) =>
            [statement.Action].flat().includes('secretsmanager:GetSecretValue') &&
            JSON.stringify(statement.Resource) === JSON.stringify(secretArn),
        ),
      ).toBe(true);
      expect(
        all.find(
          (statement) => [statement.Action].flat().includes('kms:Decrypt') && JSON.stringify(statement.Resource).includes('1234abcd'),
        )?.Condition,
      ).toEqual({
        StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' },
      });
    });

    it("self-managed: the brokers, SASL/SCRAM-256 with the app's secret, and the Confluent registry with its own secret", () => {
      const [mapping] = kafkaMappings('SelfManagedReservations');
      expect(mapping).toMatchObject({
        SelfManagedEventSource: { Endpoints: { KafkaBootstrapServers: ['b-1.kafka.example.com:9096', 'b-2.kafka.example.com:9096'] } },
        SourceAccessConfigurations: [
          { Type: 'SASL_SCRAM_256_AUTH', URI: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka/reservations-AbCdEf' },
        ],
        SelfManagedKafkaEventSourceConfig: {
          SchemaRegistryConfig: {
            SchemaRegistryURI: 'https://schema-registry.example.com',
            EventRecordFormat: 'SOURCE',
            AccessConfigs: [
              { Type: 'BASIC_AUTH', URI: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:schema-registry/reservations-Xy12Ab' },
            ],
          },
        },
      });
    });
  });

  it(
    'prints what the page shows for a secret ARN without its suffix, without a stack trace, and exits 1',
    async () => {
      const command = blocks.find((block) => block.language === 'sh' && block.text.includes('-c kafkaSecretArn='));
      const shown = blocks[blocks.indexOf(command!) + 1];
      expect(shown?.language).toBe('text');
      const secretArn = /-c kafkaSecretArn=(\S+)/.exec(command?.text ?? '')?.[1];

      const result = await synthesize({ kafkaSecretArn: secretArn });

      expect(result.exitCode, describeResult('bin/app.ts -c kafkaSecretArn=…', result)).toBe(1);
      expect(result.stderr.trim()).toBe(shown?.text.trim());
      expect(result.stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
    },
    SLOW_MS,
  );
});

describe('KafkaSource on its own', () => {
  it('refuses a secret ARN without its suffix before creating anything, as IdempotentConsumer does', () => {
    const { stack, consumer } = synthConsumer();
    const before = cfnResourceCount(stack);
    const { error, resources } = refusal(stack.node.root as App, () => {
      new KafkaSource(stack, 'Orders', {
        function: consumer.function,
        deadLetterQueue: consumer.deadLetterQueue,
        settings: consumer.settings,
        bootstrapServers: ['b-1.example.com:9096'],
        secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-user',
      });
    });
    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('lacks the 6-character suffix that Secrets Manager appends');
    expect(resources).toBe(before);
    expect(stack.node.tryFindChild('Orders')).toBeUndefined();
  });

  it('adds a second topic to a function that has one: its own mapping and statement ids, the first ones unchanged', () => {
    const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';
    const { stack, consumer } = synthConsumer({ props: { kafka: { clusterArn, topic: 'orders' } } });
    const second = new KafkaSource(stack, 'Payments', {
      function: consumer.function,
      deadLetterQueue: consumer.deadLetterQueue,
      settings: consumer.settings,
      clusterArn,
      topic: 'payments',
    });

    expect(consumer.kafkaSource?.mapping.node.id).toBe('KafkaEventSource');
    expect(second.mapping.node.id).toMatch(/^KafkaEventSource[0-9A-F]{8}$/);
    const sids = Stack.of(stack)
      .resolve(
        (
          consumer.role.node.tryFindChild('DefaultPolicy') as unknown as { document: { toJSON(): { Statement: { Sid?: string }[] } } }
        ).document.toJSON(),
      )
      .Statement.map((statement: { Sid?: string }) => statement.Sid)
      .filter((sid: string | undefined) => sid?.startsWith('Kafka'));
    expect(sids).toEqual(
      expect.arrayContaining(['KafkaClusterDiscovery', 'KafkaTopicRead', `KafkaTopicRead${second.mapping.node.id.slice(-8)}`]),
    );
    expect(new Set(sids).size).toBe(sids.length);
  });
});
