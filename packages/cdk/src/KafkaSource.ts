import { Annotations, Duration, Fn, Names, Stack, Token, Validations } from 'aws-cdk-lib';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { Policy, PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import {
  type CfnEventSourceMapping,
  type EventSourceMapping,
  FilterCriteria,
  type IFunction,
  type ISchemaRegistry,
  MetricType,
  SourceAccessConfigurationType,
  StartingPosition,
} from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { DlqDestinationConfig, IEventSourceDlq, IEventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { kafkaRetryAttempts, type ConsumerSettings } from 'idempotent-consumer/settings';
import { InvalidSettingsError, windowWarnings } from 'idempotent-consumer/settings';

/**
 * How a self-managed Kafka cluster authenticates the event source mapping with the secret
 * (`SourceAccessConfigurations` type).
 */
export const KafkaAuthentication = {
  /** SASL/SCRAM with SHA-512: the secret holds a user name and password. */
  SASL_SCRAM_512: 'SASL_SCRAM_512_AUTH',
  /** SASL/SCRAM with SHA-256: the secret holds a user name and password. */
  SASL_SCRAM_256: 'SASL_SCRAM_256_AUTH',
  /** SASL/PLAIN. */
  BASIC: 'BASIC_AUTH',
  /** mTLS: the secret holds the client certificate and key. */
  CLIENT_CERTIFICATE_TLS: 'CLIENT_CERTIFICATE_TLS_AUTH',
} as const;
/**
 * One of the `KafkaAuthentication` values: a `SourceAccessConfigurations` type of a
 * self-managed Kafka event source mapping (`SASL_SCRAM_512_AUTH`, `SASL_SCRAM_256_AUTH`,
 * `BASIC_AUTH` or `CLIENT_CERTIFICATE_TLS_AUTH`).
 */
export type KafkaAuthentication = (typeof KafkaAuthentication)[keyof typeof KafkaAuthentication];

/**
 * Where a self-managed Kafka cluster's brokers are reachable only inside a VPC. Lambda's event
 * pollers then create network interfaces in these subnets, with this security group.
 */
export interface KafkaVpcPlacement {
  /** The VPC the brokers are reachable in. */
  readonly vpc: IVpc;
  /** Subnets that reach the brokers (private subnets with a route to them). */
  readonly subnets: SubnetSelection;
  /** Security group of the pollers' network interfaces; the brokers must accept it. */
  readonly securityGroup: ISecurityGroup;
}

/**
 * Which Kafka cluster and topic the consumer's function reads, beside its SQS queue. Give
 * exactly one of `clusterArn` (Amazon MSK) or `bootstrapServers` (self-managed Apache Kafka).
 *
 * Everything else about the mapping (batch size, starting position, retries, record age,
 * split batch, provisioned pollers) comes from `settings.kafka` (`ConsumerSettings`).
 */
export interface KafkaSourceOptions {
  /**
   * ARN of the Amazon MSK cluster (provisioned or serverless), e.g.
   * `arn:aws:kafka:us-east-1:123456789012:cluster/demo/abcd1234-...`. Without `secretArn`,
   * Lambda uses IAM authentication when the cluster has it on, else no authentication.
   *
   * @default - not MSK (then `bootstrapServers` is required)
   */
  readonly clusterArn?: string;
  /**
   * Self-managed Apache Kafka: the bootstrap brokers, each `host:port`.
   *
   * @default - not self-managed (then `clusterArn` is required)
   */
  readonly bootstrapServers?: readonly string[];
  /**
   * Complete ARN of the Secrets Manager secret holding the Kafka credentials, **with the
   * 6-character suffix** Secrets Manager appends to the name
   * (`arn:aws:secretsmanager:us-east-1:123456789012:secret:AmazonMSK_orders-AbCdEf`; print it with
   * `aws secretsmanager describe-secret --secret-id <name> --query ARN`). The function's role may
   * read it (`secretsmanager:GetSecretValue`, `secretsmanager:DescribeSecret`).
   *
   * - MSK: SASL/SCRAM-512 user name and password. AWS requires the secret's name to start with
   *   `AmazonMSK_` and the secret to be encrypted with a customer managed KMS key
   *   (https://docs.aws.amazon.com/msk/latest/developerguide/msk-password-tutorial.html): give
   *   that key as `secretEncryptionKeyArn`. Both are checked at synth.
   * - Self-managed: the credentials of `authenticationMethod`; required when the brokers are
   *   reached over the internet (no `vpc`).
   *
   * @default - no secret (MSK: IAM authentication when the cluster has it on)
   */
  readonly secretArn?: string;
  /**
   * ARN of the customer managed KMS key that encrypts `secretArn`. The function's role may
   * `kms:Decrypt` with it, only through Secrets Manager (`kms:ViaService`). Required for an MSK
   * SASL/SCRAM secret (AWS refuses a secret under the default `aws/secretsmanager` key there);
   * for self-managed Kafka, give it when the secret uses a customer managed key.
   *
   * @default - the secret is encrypted with `aws/secretsmanager` (self-managed Kafka only)
   */
  readonly secretEncryptionKeyArn?: string;
  /**
   * The Kafka consumer group the mapping joins (1 to 200 of `[a-zA-Z0-9-/*:_+=.@]`). It must
   * be unique among the cluster's Lambda event sources, and changing it replaces the mapping,
   * which then starts again from `settings.kafka.startingPosition` (the inbox absorbs the
   * duplicates).
   *
   * @default `<consumerName>-<a hash of this construct's path>`, stable and unique per stack, so the
   * IAM policy can name the group
   */
  readonly consumerGroupId?: string;
  /**
   * The topic. It replaces `settings.kafka.topic` in the settings the consumer is built with,
   * so the local runtime and the stack cannot disagree within one settings object.
   *
   * @default settings.kafka.topic
   */
  readonly topic?: string;
  /**
   * Self-managed only: how the brokers authenticate the mapping with `secretArn`.
   *
   * @default KafkaAuthentication.SASL_SCRAM_512
   */
  readonly authenticationMethod?: KafkaAuthentication;
  /**
   * Self-managed only: the VPC placement of brokers that are not reachable over the internet.
   *
   * @default - brokers reachable over the internet (then `secretArn` is required)
   */
  readonly vpc?: KafkaVpcPlacement;
  /**
   * A schema registry the mapping validates the records against before invoking the function:
   * `new ConfluentSchemaRegistry({ … })` or `new GlueSchemaRegistry({ … })` from
   * `aws-cdk-lib/aws-lambda-event-sources`, which grant the function what the pollers need
   * (Confluent: reading the registry's secret; AWS Glue: `glue:GetRegistry` and
   * `glue:GetSchemaVersion` on the registry and its schemas). It needs provisioned mode, which this
   * mapping always has. Match the consumer's `kafka.value` option to its `eventRecordFormat`:
   * `SOURCE` delivers the original bytes without the schema id (use `kafkaAvroFormat` or
   * `kafkaProtobufFormat`), `JSON` delivers JSON (keep the default format)
   * (https://docs.aws.amazon.com/lambda/latest/dg/services-consume-kafka-events.html).
   *
   * @default - no schema registry
   */
  readonly schemaRegistry?: ISchemaRegistry;
  /**
   * An S3 bucket as the mapping's on-failure destination, in place of the dead-letter queue. For
   * the batches Lambda gives up on (retries exhausted by function errors or timeouts, records
   * older than `maxRecordAgeSeconds`), an SQS destination receives **metadata only** (topic,
   * partition, offsets); an S3 destination receives the **whole invocation record**: the same
   * metadata and, in `payload`, the event of the last invocation with the records' keys, values
   * and headers, so nothing depends on the topic still holding them. The DLQ tool lists them
   * (`dlq list --on-failure-bucket`) and redrives them by invoking the function
   * (`dlq redrive --on-failure-bucket`). The records the consumer rejects itself still go to the
   * dead-letter queue, with their reason. The role gets `s3:PutObject` on the bucket's objects and
   * `s3:ListBucket` on the bucket (and `kms:GenerateDataKey` on its key, when it has one), as AWS
   * documents, nothing more (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html).
   * Give the bucket a lifecycle rule: Lambda writes one object per batch given up, under
   * `aws/lambda/<mapping UUID>/`; the bucket must be reachable from the cluster's VPC (an S3
   * gateway endpoint or a NAT route).
   *
   * @default - the dead-letter queue (metadata only)
   */
  readonly onFailureBucket?: IBucket;
}

/** Properties of a {@link KafkaSource}. */
export interface KafkaSourceProps extends KafkaSourceOptions {
  /** The consumer function (its entry dispatches SQS and Kafka events). It must have an execution role. */
  readonly function: IFunction;
  /** The dead-letter queue: the mapping's on-failure destination. Must be a standard queue. */
  readonly deadLetterQueue: IQueue;
  /** The consumer's validated settings; `kafka` and `consumerName` are used here. */
  readonly settings: ConsumerSettings;
}

const CLUSTER_ARN = /^arn:aws[a-z-]*:kafka:[a-z0-9-]+:\d{12}:cluster\/[^/\s]+\/[^/\s]+$/;
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:(?<name>\S+)$/;
/** Secrets Manager appends `-` and six random characters to a secret's name in its ARN. */
const SECRET_NAME_WITH_SUFFIX = /^(?<name>.+)-[A-Za-z0-9]{6}$/;
const KMS_KEY_ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/;
/** AWS's rule for the name of an MSK SASL/SCRAM secret. */
export const MSK_SCRAM_SECRET_PREFIX = 'AmazonMSK_';
const BOOTSTRAP_SERVER = /^[A-Za-z0-9.-]+:\d{1,5}$/;
const CONSUMER_GROUP_ID = /^[a-zA-Z0-9\-/*:_+=.@]{1,200}$/;

/**
 * Checks the Kafka source options against the rules the mapping needs and returns one
 * sentence per broken rule (empty when all hold). The Kafka settings themselves (finite
 * retries, record age, pollers, topic name) are checked by `settingsProblems`.
 *
 * Rules:
 * - exactly one of `clusterArn` (MSK) or `bootstrapServers` (self-managed);
 * - a cluster ARN, secret ARN and broker addresses of the right form (values that are CDK tokens
 *   are not checked); a secret ARN complete with the 6-character suffix Secrets Manager appends to
 *   the name (`Secret.fromSecretCompleteArn` and the mapping need it);
 * - MSK with a secret (SASL/SCRAM): the secret's name starts with `AmazonMSK_` and its customer
 *   managed key is given, both AWS rules
 *   (https://docs.aws.amazon.com/msk/latest/developerguide/msk-password-tutorial.html);
 * - a self-managed cluster without a VPC placement needs a secret (AWS: brokers reached over
 *   the internet require authentication); `vpc` and `authenticationMethod` apply to
 *   self-managed Kafka only;
 * - a legal consumer group id;
 * - the on-failure destination is the dead-letter queue, so the queue must be standard: Lambda
 *   cannot deliver on-failure records to a FIFO queue (they carry no message group id).
 *
 * @param options - the Kafka source options
 * @param settings - the settings the consumer is built with (topic already applied)
 */
export function kafkaSourceProblems(options: KafkaSourceOptions, settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const { clusterArn, bootstrapServers, secretArn, consumerGroupId } = options;
  const isMsk = clusterArn !== undefined;
  const isSelfManaged = bootstrapServers !== undefined;
  if (isMsk === isSelfManaged) {
    problems.push(
      `Kafka event source: give exactly one of a cluster ARN (Amazon MSK) or bootstrap servers (self-managed Kafka), ` +
        `got ${isMsk ? 'both' : 'neither'}`,
    );
  }
  if (isMsk && !Token.isUnresolved(clusterArn) && !CLUSTER_ARN.test(clusterArn)) {
    problems.push(
      `Kafka cluster ARN "${clusterArn}" is not an Amazon MSK cluster ARN (arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>)`,
    );
  }
  if (isSelfManaged) {
    const literal = bootstrapServers.filter((server) => !Token.isUnresolved(server));
    if (bootstrapServers.length === 0) problems.push('Kafka bootstrap servers must list at least one broker (host:port)');
    const malformed = literal.filter((server) => !BOOTSTRAP_SERVER.test(server));
    if (malformed.length > 0) {
      problems.push(`Kafka bootstrap servers must each be host:port, got ${malformed.map((s) => JSON.stringify(s)).join(', ')}`);
    }
    if (options.vpc === undefined && secretArn === undefined) {
      problems.push(
        'self-managed Kafka reached over the internet needs a secret ARN with the credentials (AWS rule); ' +
          'give a secret, or a VPC placement when the brokers are private',
      );
    }
  }
  if (isMsk && options.vpc !== undefined) {
    problems.push("a VPC placement applies to self-managed Kafka only: an MSK mapping uses the cluster's own subnets and security groups");
  }
  if (options.authenticationMethod !== undefined && (!isSelfManaged || secretArn === undefined)) {
    problems.push(
      'a Kafka authentication method applies to self-managed Kafka with a secret ARN only (MSK uses SASL/SCRAM-512 with a secret)',
    );
  }
  problems.push(...secretProblems(options));
  if (consumerGroupId !== undefined && !Token.isUnresolved(consumerGroupId) && !CONSUMER_GROUP_ID.test(consumerGroupId)) {
    problems.push(`Kafka consumer group id "${consumerGroupId}" must be 1 to 200 of a-z, A-Z, 0-9 and - / * : _ + = . @ (AWS rule)`);
  }
  if (settings.queue.fifo) {
    problems.push(
      "a Kafka event source needs a standard dead-letter queue: the mapping's on-failure destination is the DLQ, and Lambda " +
        'cannot send on-failure records to a FIFO queue (rule: Kafka retries finite with an on-failure destination); use fifo=false',
    );
  }
  return problems;
}

/** The secret and its key (see {@link kafkaSourceProblems}); values that are CDK tokens are not checked. */
function secretProblems(options: KafkaSourceOptions): string[] {
  const { clusterArn, secretArn, secretEncryptionKeyArn: keyArn } = options;
  const problems: string[] = [];
  const isMsk = clusterArn !== undefined;
  if (keyArn !== undefined && secretArn === undefined) {
    problems.push('a Kafka secret encryption key ARN applies only with a secret ARN');
  }
  if (keyArn !== undefined && !Token.isUnresolved(keyArn) && !KMS_KEY_ARN.test(keyArn)) {
    problems.push(
      `Kafka secret encryption key ARN "${keyArn}" is not a KMS key ARN (arn:aws:kms:<region>:<account>:key/<key id>; an alias does not work in an IAM policy)`,
    );
  }
  if (secretArn === undefined) return problems;
  if (isMsk && keyArn === undefined) {
    problems.push(
      'an Amazon MSK SASL/SCRAM secret must be encrypted with a customer managed KMS key (AWS rule: a secret under the default ' +
        "aws/secretsmanager key cannot be used with MSK); give that key's ARN (kafka.secretEncryptionKeyArn, or -c kafkaSecretKeyArn=arn:aws:kms:...) " +
        'so the function may decrypt the secret',
    );
  }
  if (Token.isUnresolved(secretArn)) return problems;
  const name = SECRET_ARN.exec(secretArn)?.groups?.name;
  if (name === undefined) {
    problems.push(
      `Kafka secret ARN "${secretArn}" is not a Secrets Manager secret ARN ` +
        '(arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>)',
    );
    return problems;
  }
  const suffixed = SECRET_NAME_WITH_SUFFIX.exec(name)?.groups?.name;
  if (suffixed === undefined) {
    problems.push(
      `Kafka secret ARN "${secretArn}" lacks the 6-character suffix that Secrets Manager appends to the secret's name ` +
        `(e.g. ...:secret:${name}-AbCdEf): the event source mapping and the IAM policy need the complete ARN. ` +
        `Print it with: aws secretsmanager describe-secret --secret-id ${name} --query ARN --output text`,
    );
  } else if (isMsk && !suffixed.startsWith(MSK_SCRAM_SECRET_PREFIX)) {
    problems.push(
      `Kafka secret "${suffixed}" cannot authenticate with Amazon MSK: the name of an MSK SASL/SCRAM secret must start with ` +
        `${MSK_SCRAM_SECRET_PREFIX} (AWS rule, https://docs.aws.amazon.com/msk/latest/developerguide/msk-password-tutorial.html)`,
    );
  }
  return problems;
}

/** The `MetricsConfig` of the mapping: event counts, error counts and Kafka consumer metrics (offset lag). */
export const kafkaMappingMetrics: readonly MetricType[] = [MetricType.EVENT_COUNT, MetricType.ERROR_COUNT, MetricType.KAFKA_METRICS];

/**
 * The consumer function's Kafka event source mapping (Amazon MSK or self-managed Apache
 * Kafka), with AWS's error handling controls set so that a poison record cannot block its
 * partition (case C8):
 *
 * - `FunctionResponseTypes: [ReportBatchItemFailures]`: the handler reports the first failed
 *   record of each partition and every later record of that partition in the batch (case C12).
 * - `MaximumRetryAttempts` = `kafkaRetryAttempts(settings)` (finite: the setting, or
 *   `maxAttempts × batchSize − 1 + 5`),
 *   `BisectBatchOnFunctionError` and `MaximumRecordAgeInSeconds` (-1: no limit) from the settings.
 * - `DestinationConfig.OnFailure` = the dead-letter queue: records that Lambda gives up on
 *   (retries exhausted by function errors or timeouts, records older than the maximum age) are
 *   sent there. For an SQS destination Lambda sends **metadata only** (topic, partition, offsets,
 *   the error), not the record: replay those from the topic. The consumer dead-letters the
 *   records it rejects itself, with their bodies and reasons, before Lambda ever gives up. The
 *   destination must be reachable from the cluster's VPC (an SQS VPC endpoint or a NAT route,
 *   https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html). With `onFailureBucket`
 *   the destination is that S3 bucket instead, which keeps the whole invocation record (the
 *   records' keys, values and headers in `payload`).
 * - `ProvisionedPollerConfig` from the settings: the error handling controls above require
 *   provisioned mode (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
 * - `MetricsConfig`: `EventCount`, `ErrorCount` and `KafkaMetrics` (billed as CloudWatch
 *   metrics); the offset lag alarm itself uses the function's `OffsetLag` metric.
 * - `FilterCriteria` from `settings.kafka.filters` (patterns on `value`, checked by
 *   `settingsProblems`): a record no pattern matches is committed without an invocation
 *   (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html).
 *
 * **IAM, stated explicitly.** The mapping is created with the `EventSourceMapping` L2
 * (`function.addEventSourceMapping`) that `ManagedKafkaEventSource` and
 * `SelfManagedKafkaEventSource` wrap, with the same properties: `ManagedKafkaEventSource` also
 * attaches the AWS managed policy `AWSLambdaMSKExecutionRole` (kafka, EC2 and CloudWatch Logs
 * actions on `*`), and the consumer's role has no AWS managed policy; one code path serves both
 * kinds of cluster. The role gets
 * (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-permissions.html):
 * - MSK: `kafka:DescribeClusterV2` and `kafka:GetBootstrapBrokers` on the cluster; without a
 *   secret (IAM authentication) also `kafka-cluster:Connect` and
 *   `kafka-cluster:DescribeClusterDynamicConfiguration` on the cluster, `kafka-cluster:DescribeTopic`
 *   and `kafka-cluster:ReadData` on the topic, `kafka-cluster:DescribeGroup` and
 *   `kafka-cluster:AlterGroup` on the consumer group (with SASL/SCRAM the brokers' ACLs decide);
 * - MSK, or self-managed in a VPC: the six EC2 network interface actions the pollers need in
 *   the cluster's VPC, on `*` (in a separate policy, acknowledged for cdk-nag with its reason);
 * - `secretsmanager:GetSecretValue` and `DescribeSecret` on the secret, when there is one, and
 *   `kms:Decrypt` on its customer managed key (`secretEncryptionKeyArn`), only through Secrets
 *   Manager (condition `kms:ViaService` = `secretsmanager.<region>.amazonaws.com`);
 * - `sqs:SendMessage` on the dead-letter queue (the on-failure destination; the consumer has it
 *   already);
 * - with `onFailureBucket`, `s3:PutObject` on its objects, `s3:ListBucket` on it and
 *   `kms:GenerateDataKey` on its key, if any (`KafkaS3OnFailureDestination`);
 * - with `schemaRegistry`, what its `bind` grants (Confluent: reading the registry's secret; AWS
 *   Glue: `glue:GetRegistry` and `glue:GetSchemaVersion` on the registry and its schemas, a
 *   wildcard cdk-nag reports as `AwsSolutions-IAM5` for the app to acknowledge, see `docs/kafka.md`).
 *
 * **Several topics.** Another `KafkaSource` on the same function reads another topic (or
 * cluster): the first source's mapping keeps the id `KafkaEventSource` and its statement ids, the
 * next ones get ids of their own (a hash of their construct path appended). The consumer's
 * `kafka` decoding option applies to every topic of the function.
 *
 * **Checked at synth.** The options are checked before anything is built (see
 * {@link kafkaSourceProblems}; the constructor throws `InvalidSettingsError`, which `runCdkApp`
 * prints as one message without a stack trace), and the built mapping is validated when the
 * app synthesizes: it must have finite retries, an on-failure destination, partial batch
 * responses and provisioned pollers. An escape hatch that removes one of these fails `cdk synth`.
 * The topic's retention (`settings.kafka.topicRetentionHours`) is checked against the inbox TTL
 * by `settingsProblems`; an unlimited one with no maximum record age is a warning annotation
 * (`windowWarnings`).
 */
export class KafkaSource extends Construct {
  /** The event source mapping; `eventSourceMappingId` and `eventSourceMappingArn` name it. */
  public readonly mapping: EventSourceMapping;
  /** Amazon MSK or self-managed Apache Kafka. */
  public readonly kind: 'msk' | 'self-managed';
  /** The topic the mapping reads. */
  public readonly topic: string;
  /** The consumer group the mapping joins. */
  public readonly consumerGroupId: string;
  /**
   * Appended to the ids of this source's mapping and policy statements when the function already
   * has a Kafka source (another topic): `''` for the first, so its resources keep their ids.
   */
  private readonly suffix: string;

  /**
   * @throws InvalidSettingsError when the options break a rule of {@link kafkaSourceProblems} (a
   *   secret ARN without its suffix, both or neither of a cluster and brokers, …); nothing is created
   * @throws Error when the function has no role (the construct must grant the mapping's IAM)
   */
  constructor(scope: Construct, id: string, props: KafkaSourceProps) {
    const problems = kafkaSourceProblems(props, props.settings);
    if (problems.length > 0) throw new InvalidSettingsError(problems);
    super(scope, id);
    const { settings } = props;
    const kafka = settings.kafka;
    // The topic's retention against the inbox window (settings/windows.ts): a warning when nothing bounds what a mapping re-reads.
    for (const warning of windowWarnings(settings, { kafka: true }))
      Annotations.of(this).addWarningV2('idempotent-consumer:windows', warning);
    const role = props.function.role;
    if (role === undefined) throw new Error('KafkaSource needs a function with an execution role');

    this.suffix = props.function.node.tryFindChild('KafkaEventSource') === undefined ? '' : Names.uniqueId(this).slice(-8);
    this.kind = props.clusterArn !== undefined ? 'msk' : 'self-managed';
    this.topic = props.topic ?? kafka.topic;
    this.consumerGroupId =
      props.consumerGroupId ?? `${settings.consumerName}-${Names.uniqueResourceName(this, { maxLength: 60, separator: '-' })}`;

    const secret = props.secretArn === undefined ? undefined : Secret.fromSecretCompleteArn(this, 'Secret', props.secretArn);
    const common = {
      kafkaTopic: this.topic,
      kafkaConsumerGroupId: this.consumerGroupId,
      startingPosition: kafka.startingPosition === 'LATEST' ? StartingPosition.LATEST : StartingPosition.TRIM_HORIZON,
      batchSize: kafka.batchSize,
      reportBatchItemFailures: true,
      retryAttempts: kafkaRetryAttempts(settings),
      bisectBatchOnError: kafka.bisectBatchOnError,
      maxRecordAge: kafka.maxRecordAgeSeconds === -1 ? undefined : Duration.seconds(kafka.maxRecordAgeSeconds),
      onFailure:
        props.onFailureBucket === undefined ? new SqsDlq(props.deadLetterQueue) : new KafkaS3OnFailureDestination(props.onFailureBucket),
      provisionedPollerConfig: { minimumPollers: kafka.minimumPollers, maximumPollers: kafka.maximumPollers },
      metricsConfig: { metrics: [...kafkaMappingMetrics] },
      schemaRegistryConfig: props.schemaRegistry,
      // Filter criteria on `value` (settings.kafka.filters, checked by settingsProblems): a record no pattern matches is committed unprocessed.
      filters: kafka.filters?.map((pattern) => FilterCriteria.filter(pattern as Record<string, unknown>)),
    };

    // The mapping is a child of the function: the first keeps the id it always had (its logical id,
    // and so the deployed mapping and its offsets, stay); another topic on the same function gets
    // an id of its own from this construct's path.
    const mappingId = `KafkaEventSource${this.suffix}`;
    if (props.clusterArn !== undefined) {
      this.mapping = props.function.addEventSourceMapping(mappingId, {
        ...common,
        eventSourceArn: props.clusterArn,
        sourceAccessConfigurations:
          secret === undefined ? undefined : [{ type: SourceAccessConfigurationType.SASL_SCRAM_512_AUTH, uri: secret.secretArn }],
      });
      this.grantMskAccess(role, props.clusterArn, secret === undefined);
    } else {
      const placement = props.vpc;
      const authentication = SourceAccessConfigurationType.of(props.authenticationMethod ?? KafkaAuthentication.SASL_SCRAM_512);
      this.mapping = props.function.addEventSourceMapping(mappingId, {
        ...common,
        kafkaBootstrapServers: [...(props.bootstrapServers ?? [])],
        sourceAccessConfigurations: [
          ...(secret === undefined ? [] : [{ type: authentication, uri: secret.secretArn }]),
          ...(placement === undefined
            ? []
            : [
                { type: SourceAccessConfigurationType.VPC_SECURITY_GROUP, uri: placement.securityGroup.securityGroupId },
                ...placement.vpc
                  .selectSubnets(placement.subnets)
                  .subnetIds.map((subnetId) => ({ type: SourceAccessConfigurationType.VPC_SUBNET, uri: subnetId })),
              ]),
        ],
      });
    }
    if (this.kind === 'msk' || props.vpc !== undefined) this.grantNetworkInterfaces(role);
    secret?.grantRead(props.function);
    if (props.secretArn !== undefined && props.secretEncryptionKeyArn !== undefined) {
      // Secrets Manager, in the secret's region, decrypts the secret with its key for the role.
      role.addToPrincipalPolicy(
        new PolicyStatement({
          sid: `KafkaSecretKey${this.suffix}`,
          actions: ['kms:Decrypt'],
          resources: [props.secretEncryptionKeyArn],
          conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${arnRegion(props.secretArn)}.amazonaws.com` } },
        }),
      );
    }

    if (kafka.maxRecordAgeSeconds === -1) {
      // The L2 leaves the property out for "no limit"; state AWS's default in the template.
      this.cfnMapping.maximumRecordAgeInSeconds = -1;
    }
    this.node.addValidation({ validate: () => this.mappingProblems() });
  }

  /** The mapping's CloudFormation resource (escape hatch; the synth-time validation reads it). */
  public get cfnMapping(): CfnEventSourceMapping {
    return this.mapping.node.defaultChild as CfnEventSourceMapping;
  }

  /** The MSK cluster permissions, and with IAM authentication the topic and group ones (see the class comment). */
  private grantMskAccess(role: IRole, clusterArn: string, iamAuthentication: boolean): void {
    const arns = mskResourceArns(clusterArn, this.topic, this.consumerGroupId);
    const discovery = new PolicyStatement({
      sid: `KafkaClusterDiscovery${this.suffix}`,
      actions: ['kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'],
      resources: [clusterArn],
    });
    role.addToPrincipalPolicy(discovery);
    if (!iamAuthentication) return;
    const statements = [
      new PolicyStatement({
        sid: `KafkaClusterConnect${this.suffix}`,
        actions: ['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration'],
        resources: [clusterArn],
      }),
      new PolicyStatement({
        sid: `KafkaTopicRead${this.suffix}`,
        actions: ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'],
        resources: [arns.topic],
      }),
      new PolicyStatement({
        sid: `KafkaConsumerGroup${this.suffix}`,
        actions: ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'],
        resources: [arns.group],
      }),
    ];
    for (const statement of statements) role.addToPrincipalPolicy(statement);
  }

  /**
   * The EC2 network interface actions of the event pollers in the cluster's VPC, in a policy
   * of their own so that the wildcard acknowledgement covers these actions only. The mapping
   * depends on the policy: Lambda checks the role's permissions when it creates the mapping.
   */
  private grantNetworkInterfaces(role: IRole): void {
    const policy = new Policy(this, 'NetworkInterfacePolicy', {
      roles: [role],
      statements: [
        new PolicyStatement({
          sid: 'KafkaPollerNetworkInterfaces',
          actions: [
            'ec2:CreateNetworkInterface',
            'ec2:DescribeNetworkInterfaces',
            'ec2:DescribeVpcs',
            'ec2:DeleteNetworkInterface',
            'ec2:DescribeSubnets',
            'ec2:DescribeSecurityGroups',
          ],
          resources: ['*'],
        }),
      ],
    });
    this.mapping.node.addDependency(policy);
    Validations.of(policy).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "The Kafka event pollers create, describe and delete network interfaces in the cluster's VPC " +
        '(https://docs.aws.amazon.com/lambda/latest/dg/with-msk-permissions.html). The ec2:Describe* actions support no ' +
        'resource-level permissions, and the subnets and security groups of CreateNetworkInterface belong to the cluster, ' +
        'which this stack does not know; these six actions are those of AWSLambdaMSKExecutionRole, in a policy of their own.',
    });
  }

  /** The rules the built mapping must keep (see the class comment). */
  private mappingProblems(): string[] {
    const stack = Stack.of(this);
    const cfn = this.cfnMapping;
    const problems: string[] = [];
    const rule = 'rule: Kafka retries finite with an on-failure destination';
    const retries = stack.resolve(cfn.maximumRetryAttempts) as unknown;
    if (typeof retries !== 'number' || !Number.isInteger(retries) || retries < 0 || retries > 10_000) {
      problems.push(
        `Kafka event source mapping has MaximumRetryAttempts ${JSON.stringify(retries)}: it must be 0 to 10000 (${rule}; ` +
          'unset or -1 retries a failing batch until its records expire and blocks their partitions)',
      );
    }
    const destination = (stack.resolve(cfn.destinationConfig) as { onFailure?: { destination?: unknown } } | undefined)?.onFailure
      ?.destination;
    if (destination === undefined) {
      problems.push(`Kafka event source mapping has no on-failure destination (DestinationConfig.OnFailure) (${rule})`);
    }
    const responseTypes = stack.resolve(cfn.functionResponseTypes) as unknown;
    if (!Array.isArray(responseTypes) || !responseTypes.includes('ReportBatchItemFailures')) {
      problems.push('Kafka event source mapping must report batch item failures (FunctionResponseTypes: [ReportBatchItemFailures])');
    }
    if (stack.resolve(cfn.provisionedPollerConfig) === undefined) {
      problems.push(
        'Kafka event source mapping needs provisioned pollers (ProvisionedPollerConfig): its error handling controls require provisioned mode',
      );
    }
    return problems;
  }
}

/**
 * The ARNs of an MSK cluster's topic and consumer group, built from the cluster ARN
 * `arn:<partition>:kafka:<region>:<account>:cluster/<name>/<uuid>`:
 * `...:topic/<name>/<uuid>/<topic>` and `...:group/<name>/<uuid>/<group>`
 * (https://docs.aws.amazon.com/msk/latest/developerguide/kafka-actions.html). Works for a token
 * (e.g. an imported value) as well as a literal ARN.
 */
export function mskResourceArns(clusterArn: string, topic: string, consumerGroupId: string): { topic: string; group: string } {
  const [, partition, , region, account, resource] = Fn.split(':', clusterArn, 6);
  const [, clusterName, clusterUuid] = Fn.split('/', resource ?? '', 3);
  const prefix = `arn:${partition}:kafka:${region}:${account}`;
  return {
    topic: `${prefix}:topic/${clusterName}/${clusterUuid}/${topic}`,
    group: `${prefix}:group/${clusterName}/${clusterUuid}/${consumerGroupId}`,
  };
}

/** The region field of an ARN (`arn:<partition>:<service>:<region>:…`), for a literal ARN or a token. */
function arnRegion(arn: string): string {
  return Token.isUnresolved(arn) ? Fn.select(3, Fn.split(':', arn)) : (arn.split(':')[3] ?? '');
}

// --- The S3 on-failure destination (onFailureBucket) ---

/**
 * An S3 bucket as a Kafka mapping's on-failure destination, granting the function's role what
 * Lambda needs to write there and no more: `s3:PutObject` on the bucket's objects,
 * `s3:ListBucket` on the bucket, `kms:GenerateDataKey` on its customer managed key, if any
 * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html). CDK's own
 * `S3OnFailureDestination` grants read and write (deletes included).
 */
class KafkaS3OnFailureDestination implements IEventSourceDlq {
  constructor(private readonly bucket: IBucket) {}

  bind(_target: IEventSourceMapping, targetHandler: IFunction): DlqDestinationConfig {
    const role = targetHandler.role;
    if (role === undefined) throw new Error('an S3 on-failure destination needs a function with an execution role');
    role.addToPrincipalPolicy(new PolicyStatement({ actions: ['s3:PutObject'], resources: [this.bucket.arnForObjects('*')] }));
    role.addToPrincipalPolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }));
    this.bucket.encryptionKey?.grant(role, 'kms:GenerateDataKey');
    return { destination: this.bucket.bucketArn };
  }
}
