/**
 * The deployed artifact, locally (`idempotent-consumer local --app … --stack …`): the café's CDK app
 * and a CDK app of the inventory example (`test/fixtures/inventoryApp/app.ts`) are synthesized once
 * each (the AWS CDK CLI, offline; the constructs bundle with the local esbuild), then each
 * consumer runs from its bundle in child processes with its template's environment and event
 * source mappings, and passes the exactly-once check: the café on its SQS queue (with its outbox
 * relay's bundle publishing to its SNS FIFO topic), the inventory on a FIFO queue, and on Kafka
 * through the command line. A template and a settings module that disagree stop the run before
 * anything starts, naming both values.
 */
import { DescribeTableCommand, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { check as cafeCheck } from '../../examples/cafe/check.js';
import { cafeSettings } from '../../examples/cafe/settings.js';
import { check as inventoryCheck } from '../../examples/inventory/check.js';
import { type CloudAssembly, synthesizeApp } from '../../packages/local/src/app/cloudAssembly.js';
import { nodeBinaryFor } from '../../packages/local/src/app/nodeRuntime.js';
import { prepareStackRun, runLocalApp } from '../../packages/local/src/app/runLocalApp.js';
import { readInputFile } from '../../packages/local/src/inputFile.js';
import { eventTimeField } from '../../packages/local/src/producerOrder.js';
import type { RunReport } from '../../packages/local/src/report.js';
import { runInProcess } from '../cli/inProcessCli.js';
import { parseStackOutputs, selectConsumer } from '../../packages/cli/src/stackOutputs.js';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { localClientConfig } from '../../packages/local/src/localClientConfig.js';
import { awsEndpoints, endpointsFromEnvironment } from '../support/awsEndpoints.js';
import { inventoryFifoSettings, inventoryManagedSettings } from '../fixtures/inventoryApp/settings.js';
import { deployedResourceNames, describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('it synthesizes and runs stacks of its own on the emulators');

/** Node.js binaries of the Lambda runtimes, when `npm run test:node22` / `test:node24` installed them. */
const runtimes = 'tools/node-versions/node_modules';

// Skipped against running emulators (--dynamodb-endpoint, LocalStack): the run creates and names its
// resources from the template on the embedded emulators, which only this process starts.
/* skipped: against running emulators, the run needs the embedded ones */ describe.skipIf(awsEndpoints().source !== 'embedded')(
  'a CDK app run from its bundle',
  () => {
    let cafe: CloudAssembly;
    let inventory: CloudAssembly;
    let dir: string;
    const notes: string[] = [];

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'local-app-'));
      // Each synthesis takes tens of seconds (two apps, two cores): once per app for the whole file, side by side.
      [cafe, inventory] = await Promise.all([
        synthesizeApp({ app: 'examples/cafe', stack: 'CafeOrders' }),
        synthesizeApp({ app: 'npx tsx --conditions=@idempotent-consumer/source test/fixtures/inventoryApp/app.ts', stack: '*' }),
      ]);
    }, 300_000);
    afterAll(async () => {
      await Promise.all([cafe?.dispose(), inventory?.dispose()]);
      await rm(dir, { recursive: true, force: true });
    });

    const endpoints = (prefix: string) => {
      const { dynamoDbEndpoint, sqsEndpoint } = awsEndpoints();
      return { dynamoDb: dynamoDbEndpoint, sqs: sqsEndpoint, prefix: `${prefix}-${Date.now().toString(36)}-` };
    };

    // The café's run also writes its stack's outputs and endpoints (--outputs-file, --endpoints-file), checked below.
    let cafeEndpoints: ReturnType<typeof endpoints>;
    const cafeFiles = () => ({ outputsFile: join(dir, 'cdk-outputs.json'), endpointsFile: join(dir, 'local.env') });

    it("runs the café's bundle and its outbox relay's with the template's settings, and passes the exactly-once check", async () => {
      const input = await readInputFile('examples/cafe/samples/orders.jsonl', cafeSettings.queue.maxMessageSizeBytes);
      cafeEndpoints = endpoints('cafe-app');
      const result = await runLocalApp({
        app: cafe.directory,
        stack: 'CafeOrders',
        settings: { value: cafeSettings, name: 'examples/cafe/settings.ts#cafeSettings' },
        input,
        check: cafeCheck,
        eventTime: eventTimeField('occurredAt'),
        endpoints: cafeEndpoints,
        ...cafeFiles(),
        nodeModules: [runtimes],
        onNote: (note) => notes.push(note),
        timeoutMs: 240_000,
      });

      const { report } = result;
      expect(report.check.problems).toEqual([]);
      expect(report.check.ok).toBe(true);
      expect(report).toMatchObject({ messagesIn: 510, applied: 464, duplicates: 38, deadLettered: 8, unaccounted: 0, countsAddUp: true });
      expect(report.outbox).toEqual({ written: 127, published: 127 });
      expect(result.source).toBe('sqs');
    }, 300_000);

    it("wrote the stack's outputs as `cdk deploy --outputs-file` does, resolved to the run's queues and tables, and its endpoints (the café's run above)", async () => {
      const { outputsFile, endpointsFile } = cafeFiles();
      const { template } = await prepareStackRun(cafe.directory, 'CafeOrders');
      const content = JSON.parse(await readFile(outputsFile, 'utf8')) as Record<string, Record<string, string>>;
      expect(Object.keys(content)).toEqual(['CafeOrders']);
      const outputs = content.CafeOrders!;
      // Every output of the template, none left out (a left-out one would also be a note, counted below).
      expect(Object.keys(outputs).sort()).toEqual(Object.keys(template.Outputs ?? {}).sort());
      const { prefix, dynamoDb, sqs } = cafeEndpoints;
      expect(outputs.ConsumerName).toBe('cafe-orders');
      expect(outputs.QueueUrl).toMatch(
        new RegExp(`^http://sqs\\.us-east-1\\.localhost:${new URL(sqs).port}/000000000000/${prefix}CafeOrders-`),
      );
      expect(outputs.OutboxTopicArn).toMatch(new RegExp(`^arn:aws:sns:us-east-1:000000000000:${prefix}CafeOrders-.+\\.fifo$`));

      // Read as the integration suite's deployed-stack mode reads IC_OUTPUTS_FILE: the names are the run's own resources.
      const consumer = selectConsumer(parseStackOutputs(content, outputsFile), { stack: 'CafeOrders' }, outputsFile);
      const names = deployedResourceNames(consumer, 'this test', ['orders'], withOverrides({ consumerName: 'cafe-orders' }), 'us-east-1');
      const dynamoDbClient = new DynamoDBClient(localClientConfig(dynamoDb));
      const sqsClient = new SQSClient(localClientConfig(sqs));
      try {
        for (const table of [names.inboxTable, names.idempotencyTable, names.tables.orders!]) {
          expect((await dynamoDbClient.send(new DescribeTableCommand({ TableName: table }))).Table?.TableName).toBe(table);
        }
        // The 464 events the café's run applied are marked on their orders (the café's inboxHome), one mark each.
        const { Items } = await dynamoDbClient.send(new ScanCommand({ TableName: names.tables.orders!, ConsistentRead: true }));
        const marks = (Items ?? []).reduce((sum, item) => sum + Object.keys(item._inbox?.M ?? {}).length, 0);
        expect(marks).toBeGreaterThanOrEqual(464);
        for (const [url, arn] of [
          [names.queueUrl, names.queueArn],
          [names.deadLetterQueueUrl, names.deadLetterQueueArn],
        ] as const) {
          const { Attributes } = await sqsClient.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
          expect(Attributes?.QueueArn).toBe(arn);
        }
      } finally {
        dynamoDbClient.destroy();
        sqsClient.destroy();
      }

      // The endpoints file: what the deployed-stack mode takes as the run's endpoints.
      const environment = parseEnv(await readFile(endpointsFile, 'utf8'));
      expect(endpointsFromEnvironment({ ...environment, IC_OUTPUTS_FILE: outputsFile })).toEqual({
        dynamoDbEndpoint: dynamoDb,
        sqsEndpoint: sqs,
        region: 'us-east-1',
        source: 'environment',
      });
    });

    it('runs the inventory on the FIFO queue of its template, its outbox relay publishing to the local EventBridge', async () => {
      const input = await readInputFile('examples/inventory/samples/reservations.jsonl', inventoryFifoSettings.queue.maxMessageSizeBytes);
      const steps: string[] = [];
      const result = await runLocalApp({
        onProgress: (progress) => steps.push(progress.step),
        app: inventory.directory,
        stack: 'InventoryFifo',
        settings: { value: inventoryFifoSettings, name: 'test/fixtures/inventoryApp/settings.ts#inventoryFifoSettings' },
        fifo: true,
        input,
        check: inventoryCheck,
        eventTime: eventTimeField('at'),
        endpoints: endpoints('inventory-app'),
        nodeModules: [runtimes],
        timeoutMs: 240_000,
      });

      expect(result.report.check.problems).toEqual([]);
      expect(result.report.check.ok).toBe(true);
      expect(result.source).toBe('sqs-fifo');
      expect(result.report).toMatchObject({ messagesIn: 182, unaccounted: 0, countsAddUp: true });
      expect(result.report.outbox?.written).toBeGreaterThan(0);
      // The relay marks an item published only once EventBridge gave its event an id: every one reached the bus.
      expect(result.report.outbox?.published).toBe(result.report.outbox?.written);
      expect(steps.some((step) => step.startsWith('started the local EventBridge'))).toBe(true);
    }, 300_000);

    it("runs the inventory on Lambda Managed Instances as its template says: the template's 4 invocations at once per execution environment", async () => {
      const input = await readInputFile(
        'examples/inventory/samples/reservations.jsonl',
        inventoryManagedSettings.queue.maxMessageSizeBytes,
      );
      const steps: string[] = [];
      const run = {
        app: inventory.directory,
        stack: 'InventoryManaged',
        settings: { value: inventoryManagedSettings, name: 'test/fixtures/inventoryApp/settings.ts#inventoryManagedSettings' },
        input,
        check: inventoryCheck,
        eventTime: eventTimeField('at'),
        nodeModules: [runtimes],
        timeoutMs: 240_000,
      };
      const result = await runLocalApp({ ...run, endpoints: endpoints('inventory-managed'), onProgress: (p) => steps.push(p.step) });

      expect(result.report.check.problems).toEqual([]);
      expect(result.report).toMatchObject({ messagesIn: 182, unaccounted: 0, countsAddUp: true, check: { ok: true } });
      expect(steps.some((step) => /ManagedInstancesFunction .*up to 4 invocations at once per execution environment/.test(step))).toBe(
        true,
      );
      // A concurrency the template does not say stops the run before anything starts, naming both.
      await expect(runLocalApp({ ...run, concurrencyPerProcess: 2, endpoints: endpoints('inventory-managed-2') })).rejects.toThrow(
        /PerExecutionEnvironmentMaxConcurrency of InventoryManaged\/Consumer\/ManagedInstancesFunction\).*--concurrency-per-process 2/s,
      );
    }, 300_000);

    it('runs the inventory on the Kafka mapping of its template through the command line, with the report as JSON', async () => {
      const run = await runInProcess([
        'local',
        '--app',
        inventory.directory,
        '--stack',
        'InventoryKafka',
        '--source',
        'kafka',
        '--settings',
        'test/fixtures/inventoryApp/settings.ts#inventoryKafkaSettings',
        '--check',
        'examples/inventory/check.ts',
        '--input',
        'examples/inventory/samples/reservations.jsonl',
        '--event-time',
        'at',
        '--runtimes',
        runtimes,
        '--json',
      ]);

      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as RunReport;
      expect(report).toMatchObject({ source: 'kafka', messagesIn: 182, unaccounted: 0, countsAddUp: true, check: { ok: true } });
      expect(run.stderr).toContain('through its consumer');
    }, 300_000);

    it('stops before anything starts when the template and the settings disagree, naming both values (exit 2)', async () => {
      const run = await runInProcess([
        'local',
        '--app',
        inventory.directory,
        '--stack',
        'InventoryFifo',
        '--settings',
        'test/fixtures/inventoryApp/settings.ts#inventoryKafkaSettings',
        '--input',
        'examples/inventory/samples/reservations.jsonl',
      ]);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain("The stack's template and the local run disagree");
      expect(run.stderr).toContain(
        '- queue.fifo: the template says true (FifoQueue of InventoryFifo/Consumer/Queue); the local run was given false by the settings test/fixtures/inventoryApp/settings.ts#inventoryKafkaSettings',
      );
      expect(run.stderr).toMatch(
        /- queue\.maxReceiveCount: the template says 55 \(maxReceiveCount of the RedrivePolicy of InventoryFifo\/Consumer\/Queue\); the local run was given 10 \(maxReceiveCount\(settings\)\)/,
      );
    }, 60_000);

    it('refuses --fault with --app, and names the stacks of an assembly that lacks the one asked for', async () => {
      const fault = await runInProcess([
        'local',
        '--app',
        inventory.directory,
        '--stack',
        'InventoryFifo',
        '--fault',
        'throttle=0.1',
        '--input',
        'examples/inventory/samples/reservations.jsonl',
      ]);
      expect(fault.code).toBe(2);
      expect(fault.stderr).toContain('--fault cannot run with --app');

      const missing = await runInProcess([
        'local',
        '--app',
        inventory.directory,
        '--stack',
        'Nope',
        '--input',
        'examples/inventory/samples/reservations.jsonl',
      ]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/has no stack Nope; it has InventoryFifo, InventoryKafka/);
    }, 60_000);

    it("says so when a function does not run on the Node.js of its runtime (the café's run above)", async () => {
      const { plan } = await prepareStackRun(cafe.directory, 'CafeOrders');
      const node = nodeBinaryFor(plan.consumer.runtime, [runtimes]);
      // With the runtime's binary installed, no note; without it, one for the consumer and one for the relay.
      expect(notes.length).toBe(node.matches ? 0 : 2);
      for (const note of notes)
        expect(note).toContain(`runs on Node.js ${process.version}, not ${node.wanted} as its runtime ${plan.consumer.runtime} says`);
    });
  },
);
