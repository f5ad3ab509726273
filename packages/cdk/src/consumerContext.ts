import { TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { InvalidSettingsError, type LambdaNodeRuntime, lambdaNodeRuntimes } from 'idempotent-consumer/settings';
import { monitoringOptionsProblems } from './ConsumerMonitoring.js';
import type { KafkaSourceOptions } from './KafkaSource.js';

/**
 * CDK context keys a consumer's app reads (`cdk synth -c key=value`, or `context` in `cdk.json`),
 * so that a variant needs no code change.
 */
export const consumerContextKeys = {
  /** `true`/`false`: a FIFO (or standard) source queue and dead-letter queue. */
  fifo: 'fifo',
  /** An address subscribed to the alarm topic. */
  alarmEmail: 'alarmEmail',
  /** `default`, `aws-managed` or `customer-managed`: encryption at rest of the tables. */
  tableEncryption: 'tableEncryption',
  /** `nodejs22.x` or `nodejs24.x`: the Lambda runtime of the function and the outbox relay (`settings.function.runtime`). */
  nodeRuntime: 'nodeRuntime',
  /** The ARN of a Lambda capacity provider: run the function on Lambda Managed Instances (its `managedInstances`). */
  capacityProviderArn: 'capacityProviderArn',
  /** With `capacityProviderArn`: invocations one execution environment serves at once, 1 to 1600 (`perExecutionEnvironmentMaxConcurrency`). */
  concurrencyPerEnvironment: 'concurrencyPerEnvironment',
  /** Amazon MSK: the cluster ARN. */
  kafkaClusterArn: 'kafkaClusterArn',
  /** Self-managed Kafka: `host:port,host:port` (or an array in `cdk.json`). */
  kafkaBootstrapServers: 'kafkaBootstrapServers',
  /** The complete ARN of the Kafka credentials' secret (with its 6-character suffix). */
  kafkaSecretArn: 'kafkaSecretArn',
  /** The ARN of the customer managed KMS key of that secret (required for MSK SASL/SCRAM). */
  kafkaSecretKeyArn: 'kafkaSecretKeyArn',
  /** The topic (default: `settings.kafka.topic`). */
  kafkaTopic: 'kafkaTopic',
  /** The consumer group (default: a stable generated id). */
  kafkaConsumerGroup: 'kafkaConsumerGroup',
} as const;

/** The values of {@link consumerContextKeys} that are set; a key that is not set is absent. */
export interface ConsumerContext {
  /** `fifo`: `true` for a FIFO source queue and dead-letter queue, `false` for standard ones. */
  readonly fifo?: boolean;
  /** `alarmEmail`: an e-mail address to subscribe to the alarm topic (checked to be one). */
  readonly alarmEmail?: string;
  /** `tableEncryption`: the encryption at rest of the library's tables (`default`, `aws-managed` or `customer-managed`). */
  readonly tableEncryption?: TableEncryption;
  /** `nodeRuntime`: the Lambda runtime, to set as `settings.function.runtime`. */
  readonly nodeRuntime?: LambdaNodeRuntime;
  /** The Kafka fields given by context, to apply over the app's own Kafka options field by field. */
  readonly kafka?: Partial<KafkaSourceOptions>;
  /**
   * `capacityProviderArn` (and `concurrencyPerEnvironment`): the function on Lambda Managed
   * Instances, for `IdempotentConsumer`'s `managedInstances` (import the capacity provider with
   * `CapacityProvider.fromCapacityProviderArn`).
   */
  readonly managedInstances?: { readonly capacityProviderArn: string; readonly perExecutionEnvironmentMaxConcurrency?: number };
}

const TABLE_ENCRYPTION_VALUES: Readonly<Record<string, TableEncryption>> = {
  default: TableEncryption.DEFAULT,
  'aws-managed': TableEncryption.AWS_MANAGED,
  'customer-managed': TableEncryption.CUSTOMER_MANAGED,
};

/**
 * Reads {@link consumerContextKeys} from `scope`'s CDK context. Values from `-c key=value` arrive
 * as strings (`"true"`); values from `cdk.json` may be JSON (`true`, an array of servers).
 *
 * @returns the values that are set
 * @throws InvalidSettingsError listing every context value that is not one of the accepted
 * values (an alarm email that is not an address included), and every `kafka…` key that is not one of {@link consumerContextKeys} (a typo such as
 * `kafkaClusterARN` would otherwise be ignored)
 */
export function consumerContext(scope: Construct): ConsumerContext {
  const problems: string[] = [];
  const keys = consumerContextKeys;

  const text = (key: string): string | undefined => {
    const value: unknown = scope.node.tryGetContext(key);
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      problems.push(`CDK context "${key}" must be a non-empty string (for example -c ${key}=...), got ${JSON.stringify(value)}`);
      return undefined;
    }
    return value.trim();
  };

  const fifoValue: unknown = scope.node.tryGetContext(keys.fifo);
  let fifo: boolean | undefined;
  if (fifoValue === true || fifoValue === 'true') fifo = true;
  else if (fifoValue === false || fifoValue === 'false') fifo = false;
  else if (fifoValue !== undefined) {
    problems.push(`CDK context "${keys.fifo}" must be true or false (for example -c ${keys.fifo}=true), got ${JSON.stringify(fifoValue)}`);
  }

  const alarmEmail = text(keys.alarmEmail);
  if (alarmEmail !== undefined) problems.push(...monitoringOptionsProblems({ alarmEmail }));
  const encryptionText = text(keys.tableEncryption);
  const tableEncryption = encryptionText === undefined ? undefined : TABLE_ENCRYPTION_VALUES[encryptionText];
  if (encryptionText !== undefined && tableEncryption === undefined) {
    problems.push(
      `CDK context "${keys.tableEncryption}" must be one of ${Object.keys(TABLE_ENCRYPTION_VALUES).join(', ')}, got ${JSON.stringify(encryptionText)}`,
    );
  }

  const runtimeText = text(keys.nodeRuntime);
  const nodeRuntime = lambdaNodeRuntimes.find((runtime) => runtime === runtimeText);
  if (runtimeText !== undefined && nodeRuntime === undefined) {
    problems.push(`CDK context "${keys.nodeRuntime}" must be one of ${lambdaNodeRuntimes.join(', ')}, got ${JSON.stringify(runtimeText)}`);
  }

  const capacityProviderArn = text(keys.capacityProviderArn);
  const concurrencyValue: unknown = scope.node.tryGetContext(keys.concurrencyPerEnvironment);
  const concurrency = concurrencyValue === undefined ? undefined : Number(concurrencyValue);
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 1600)) {
    problems.push(
      `CDK context "${keys.concurrencyPerEnvironment}" must be a whole number from 1 to 1600 (for example -c ${keys.concurrencyPerEnvironment}=32), got ${JSON.stringify(concurrencyValue)}`,
    );
  } else if (concurrency !== undefined && capacityProviderArn === undefined) {
    problems.push(
      `CDK context "${keys.concurrencyPerEnvironment}" needs "${keys.capacityProviderArn}": it is the concurrency of Lambda Managed Instances`,
    );
  }

  const servers: unknown = scope.node.tryGetContext(keys.kafkaBootstrapServers);
  let bootstrapServers: string[] | undefined;
  if (Array.isArray(servers)) bootstrapServers = servers.map(String);
  else if (servers !== undefined)
    bootstrapServers = text(keys.kafkaBootstrapServers)
      ?.split(',')
      .map((server) => server.trim());
  const kafkaFields: Partial<KafkaSourceOptions> = {
    clusterArn: text(keys.kafkaClusterArn),
    bootstrapServers,
    secretArn: text(keys.kafkaSecretArn),
    secretEncryptionKeyArn: text(keys.kafkaSecretKeyArn),
    topic: text(keys.kafkaTopic),
    consumerGroupId: text(keys.kafkaConsumerGroup),
  };
  const kafka = Object.fromEntries(Object.entries(kafkaFields).filter(([, value]) => value !== undefined)) as Partial<KafkaSourceOptions>;

  const known = new Set<string>(Object.values(keys));
  const unknown = Object.keys(scope.node.getAllContext() as Record<string, unknown>).filter(
    (key) => /^kafka/i.test(key) && !known.has(key),
  );
  for (const key of unknown) {
    const kafkaKeys = Object.values(keys).filter((k) => k.startsWith('kafka'));
    problems.push(`unknown CDK context "${key}": the Kafka keys are ${kafkaKeys.join(', ')}`);
  }

  if (problems.length > 0) throw new InvalidSettingsError(problems);
  return {
    ...(fifo === undefined ? {} : { fifo }),
    ...(tableEncryption === undefined ? {} : { tableEncryption }),
    ...(nodeRuntime === undefined ? {} : { nodeRuntime }),
    ...(alarmEmail === undefined ? {} : { alarmEmail }),
    ...(Object.keys(kafka).length === 0 ? {} : { kafka }),
    ...(capacityProviderArn === undefined
      ? {}
      : {
          managedInstances: {
            capacityProviderArn,
            ...(concurrency === undefined || !Number.isInteger(concurrency) ? {} : { perExecutionEnvironmentMaxConcurrency: concurrency }),
          },
        }),
  };
}
