import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Fn, Stack } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { SecurityGroup, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { defaultSettings, kafkaRetryAttempts, withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { CafeStack } from '../../examples/cafe/infra/CafeStack.js';
import { cafeSettings } from '../../examples/cafe/settings.js';
import type { IdempotentConsumer } from '../../packages/cdk/src/IdempotentConsumer.js';
import { mskResourceArns } from '../../packages/cdk/src/KafkaSource.js';
import {
  acknowledgedRules,
  allAllowedActions,
  allowStatements,
  arnOf,
  awsSolutionsViolations,
  newApp,
  refOf,
  refusal,
  resourcesAllowing,
  skipBundling,
  synthCafeStack,
  synthConsumer,
} from './stackHelpers.js';

// The Kafka mapping does not depend on the handler's code: these stacks skip bundling.
const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';
const scramSecretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:AmazonMSK_orders-AbCdEf';
const secretKeyArn = 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const selfManagedSecretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/orders-AbCdEf';

/** The template's Kafka event source mappings (those with `Topics`). */
function kafkaMappings(template: Template): Record<string, { Properties: Record<string, unknown>; DependsOn?: string[] }> {
  return template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { Topics: Match.anyValue() } }) as Record<
    string,
    { Properties: Record<string, unknown>; DependsOn?: string[] }
  >;
}

/** The event source mappings of `fn` (the café stack also has the outbox relay's stream mapping). */
function mappingsOf(template: Template, fn: IdempotentConsumer['function']): string[] {
  return Object.keys(template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { FunctionName: refOf(fn) } }));
}

/** The allow statements of the consumer's own policies (not the outbox relay's). */
function consumerStatements(template: Template) {
  return allowStatements(template).filter((statement) => !statement.policy.includes('OutboxRelay'));
}

/** The only Kafka mapping's properties. */
function kafkaMapping(template: Template): Record<string, unknown> {
  const mappings = Object.values(kafkaMappings(template));
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties;
}

describe('CafeStack without Kafka options', () => {
  it('creates no Kafka event source mapping, no Kafka permission and no network interface policy', () => {
    const { stack, template } = synthCafeStack();

    expect(mappingsOf(template, stack.consumer.function)).toHaveLength(1);
    expect(kafkaMappings(template)).toEqual({});
    expect(stack.consumer.kafkaSource).toBeUndefined();
    expect(allAllowedActions(template).filter((a) => /^(kafka|kafka-cluster|ec2|secretsmanager):/.test(a))).toEqual([]);
    const consumerPolicies = template.findResources('AWS::IAM::Policy', { Properties: { Roles: [refOf(stack.consumer.role)] } });
    // The role's default policy, and the X-Ray policy of active tracing.
    expect(Object.keys(consumerPolicies)).toHaveLength(2);
    expect(Object.keys(consumerPolicies).filter((id) => id.includes('TracingPolicy'))).toHaveLength(1);
  });
});

describe('CafeStack with an Amazon MSK event source and IAM authentication (-c kafkaClusterArn, kafkaTopic, kafkaConsumerGroup)', () => {
  let stack: CafeStack;
  let template: Template;
  let mappingId: string;

  beforeAll(() => {
    ({ stack, template } = synthCafeStack({
      context: { kafkaClusterArn: clusterArn, kafkaTopic: 'orders', kafkaConsumerGroup: 'cafe-orders-consumer' },
    }));
    mappingId = Object.keys(kafkaMappings(template))[0]!;
  });

  it('adds one Kafka mapping to the same function as the SQS mapping', () => {
    expect(mappingsOf(template, stack.consumer.function)).toHaveLength(2);
    template.resourceCountIs('AWS::Lambda::Function', 2); // the consumer and the outbox relay
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: clusterArn,
      FunctionName: refOf(stack.consumer.function),
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'Idempotent consumer cafe-orders (SQS standard, Kafka topic orders)',
    });
  });

  it('C8: finite retries (kafkaRetryAttempts), an on-failure destination (the DLQ), partial batch responses, bisect and record age from the settings', () => {
    const properties = kafkaMapping(template);

    expect(kafkaRetryAttempts(cafeSettings)).toBe(5 * 100 - 1 + 5);
    expect(properties).toMatchObject({
      EventSourceArn: clusterArn,
      Topics: ['orders'],
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'cafe-orders-consumer' },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 504,
      BisectBatchOnFunctionError: false,
      MaximumRecordAgeInSeconds: -1,
      DestinationConfig: { OnFailure: { Destination: arnOf(stack.consumer.deadLetterQueue) } },
    });
    expect(properties.SourceAccessConfigurations).toBeUndefined();
    expect(properties.SelfManagedEventSource).toBeUndefined();
  });

  it("runs the pollers in provisioned mode with the settings' pollers, and turns on the mapping's metrics", () => {
    const properties = kafkaMapping(template);

    expect(properties.ProvisionedPollerConfig).toEqual({
      MinimumPollers: defaultSettings.kafka.minimumPollers,
      MaximumPollers: defaultSettings.kafka.maximumPollers,
    });
    expect(properties.MetricsConfig).toEqual({ Metrics: ['EventCount', 'ErrorCount', 'KafkaMetrics'] });
  });

  it.each([
    ['kafka:DescribeClusterV2', clusterArn],
    ['kafka:GetBootstrapBrokers', clusterArn],
    ['kafka-cluster:Connect', clusterArn],
    ['kafka-cluster:DescribeClusterDynamicConfiguration', clusterArn],
    ['kafka-cluster:DescribeTopic', 'arn:aws:kafka:us-east-1:123456789012:topic/demo/abc/orders'],
    ['kafka-cluster:ReadData', 'arn:aws:kafka:us-east-1:123456789012:topic/demo/abc/orders'],
    ['kafka-cluster:DescribeGroup', 'arn:aws:kafka:us-east-1:123456789012:group/demo/abc/cafe-orders-consumer'],
    ['kafka-cluster:AlterGroup', 'arn:aws:kafka:us-east-1:123456789012:group/demo/abc/cafe-orders-consumer'],
  ])('allows %s on %s only', (action, resource) => {
    expect(resourcesAllowing(template, action)).toEqual([resource]);
  });

  it('allows the six EC2 network interface actions on * in a policy of their own, which the mapping depends on', () => {
    // (Besides the X-Ray actions of active tracing, in their own policy: see tracing.test.ts.)
    const wildcard = consumerStatements(template).filter(
      (statement) => statement.resources.includes('*') && !statement.actions.some((action) => action.startsWith('xray:')),
    );

    expect(wildcard).toHaveLength(1);
    expect([...wildcard[0]!.actions].sort()).toEqual([
      'ec2:CreateNetworkInterface',
      'ec2:DeleteNetworkInterface',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSecurityGroups',
      'ec2:DescribeSubnets',
      'ec2:DescribeVpcs',
    ]);
    expect(kafkaMappings(template)[mappingId]!.DependsOn).toContain(wildcard[0]!.policy);
  });

  it('may send to the dead-letter queue only (the on-failure destination), and reads no secret', () => {
    const sends = consumerStatements(template).filter((statement) => statement.actions.includes('sqs:SendMessage'));
    expect(sends.flatMap((statement) => statement.resources)).toEqual([arnOf(stack.consumer.deadLetterQueue)]);
    expect(allAllowedActions(template).filter((a) => a.startsWith('secretsmanager:') || a.startsWith('kms:'))).toEqual([]);
  });

  it('keeps the role free of AWS managed policies (no AWSLambdaMSKExecutionRole)', () => {
    const roles = Object.values(template.findResources('AWS::IAM::Role')) as { Properties: Record<string, unknown> }[];
    expect(roles).toHaveLength(2); // the consumer's and the outbox relay's
    for (const role of roles) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it('outputs the consumer group and the mapping id', () => {
    template.hasOutput('KafkaConsumerGroupId', { Value: 'cafe-orders-consumer' });
    template.hasOutput('KafkaEventSourceMappingId', { Value: { Ref: mappingId } });
  });

  it('reports no cdk-nag finding that is not acknowledged; the network interface wildcard is acknowledged on its policy only', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
    const rules = acknowledgedRules(stack);
    expect(rules.has('AwsSolutions-IAM5[Resource::*]')).toBe(true);
    const acknowledgedOn = stack.node
      .findAll()
      .filter((c) => c.node.metadata.some((m) => JSON.stringify(m.data ?? '').includes('AwsSolutions-IAM5[Resource::*]')))
      .map((c) => c.node.path);
    // (The outbox relay acknowledges its own: dynamodb:ListStreams on *, on its role; and the
    // X-Ray policy of active tracing its two actions.)
    expect(acknowledgedOn.filter((path) => !path.includes('/OutboxRelay/')).sort()).toEqual([
      'CafeOrders/Consumer/KafkaSource/NetworkInterfacePolicy',
      'CafeOrders/Consumer/TracingPolicy',
    ]);
  });
});

describe('IdempotentConsumer with an Amazon MSK event source and a SASL/SCRAM secret', () => {
  let stack: Stack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthConsumer({
      props: { kafka: { clusterArn, secretArn: scramSecretArn, secretEncryptionKeyArn: secretKeyArn, consumerGroupId: 'orders' } },
    }));
  });

  it('authenticates with the secret (SASL/SCRAM-512)', () => {
    expect(kafkaMapping(template)).toMatchObject({
      EventSourceArn: clusterArn,
      SourceAccessConfigurations: [{ Type: 'SASL_SCRAM_512_AUTH', URI: scramSecretArn }],
    });
  });

  it('may read the secret, and decrypt it with its customer managed key only through Secrets Manager', () => {
    expect(resourcesAllowing(template, 'secretsmanager:GetSecretValue')).toEqual([scramSecretArn]);
    const onKey = allowStatements(template).filter((s) => s.resources.includes(secretKeyArn));
    expect(onKey).toHaveLength(1);
    expect(onKey[0]!.actions).toEqual(['kms:Decrypt']);
    expect(onKey[0]!.condition).toEqual({ StringEquals: { 'kms:ViaService': 'secretsmanager.us-east-1.amazonaws.com' } });
  });

  it("keeps the cluster discovery permissions and grants no IAM-authentication action (the brokers' ACLs decide)", () => {
    expect(resourcesAllowing(template, 'kafka:GetBootstrapBrokers')).toEqual([clusterArn]);
    expect(allAllowedActions(template).filter((a) => a.startsWith('kafka-cluster:'))).toEqual([]);
  });

  it('reports no cdk-nag finding that is not acknowledged', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });
});

describe('mskResourceArns', () => {
  it('derives the topic and group ARNs from a literal cluster ARN', () => {
    expect(mskResourceArns(clusterArn, 'orders', 'g-1')).toEqual({
      topic: 'arn:aws:kafka:us-east-1:123456789012:topic/demo/abc/orders',
      group: 'arn:aws:kafka:us-east-1:123456789012:group/demo/abc/g-1',
    });
  });

  it('derives them with CloudFormation functions from a token (an imported cluster ARN)', () => {
    const stack = new Stack(newApp(), 'Imported');
    const { topic } = mskResourceArns(Fn.importValue('ClusterArn'), 'orders', 'g-1');

    const resolved = JSON.stringify(stack.resolve(topic));
    expect(resolved).toContain('"Fn::Select"');
    expect(resolved).toContain('{"Fn::ImportValue":"ClusterArn"}');
    expect(resolved).toContain(':topic/');
    expect(resolved).toContain('/orders');
  });
});

describe('IdempotentConsumer with a self-managed Kafka event source in a VPC', () => {
  const settings = withOverrides({
    retry: { maxAttempts: 1 },
    kafka: {
      retryAttempts: 60,
      maxRecordAgeSeconds: 3600,
      bisectBatchOnError: true,
      startingPosition: 'LATEST',
      batchSize: 50,
      minimumPollers: 2,
      maximumPollers: 4,
    },
  });
  let stack: Stack;
  let consumer: IdempotentConsumer;
  let template: Template;
  let mapping: Record<string, unknown>;

  beforeAll(() => {
    ({ stack, consumer, template } = synthConsumer({
      props: { settings },
      extra: (s) => {
        const vpc = Vpc.fromVpcAttributes(s, 'Vpc', {
          vpcId: 'vpc-0123456789abcdef0',
          availabilityZones: ['us-east-1a', 'us-east-1b'],
          privateSubnetIds: ['subnet-0aaaaaaaaaaaaaaa1', 'subnet-0bbbbbbbbbbbbbbb2'],
        });
        return {
          kafka: {
            bootstrapServers: ['b-1.kafka.internal:9096', 'b-2.kafka.internal:9096'],
            secretArn: selfManagedSecretArn,
            topic: 'payments',
            vpc: {
              vpc,
              subnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
              securityGroup: SecurityGroup.fromSecurityGroupId(s, 'Pollers', 'sg-0123456789abcdef0'),
            },
          },
        };
      },
    }));
    mapping = kafkaMapping(template);
  });

  it("reads the brokers with the secret (SASL/SCRAM-512 by default) from the VPC's subnets", () => {
    expect(mapping).toMatchObject({
      SelfManagedEventSource: { Endpoints: { KafkaBootstrapServers: ['b-1.kafka.internal:9096', 'b-2.kafka.internal:9096'] } },
      SourceAccessConfigurations: [
        { Type: 'SASL_SCRAM_512_AUTH', URI: selfManagedSecretArn },
        { Type: 'VPC_SECURITY_GROUP', URI: 'sg-0123456789abcdef0' },
        { Type: 'VPC_SUBNET', URI: 'subnet-0aaaaaaaaaaaaaaa1' },
        { Type: 'VPC_SUBNET', URI: 'subnet-0bbbbbbbbbbbbbbb2' },
      ],
    });
    expect(mapping.EventSourceArn).toBeUndefined();
  });

  it('takes the topic from the options and every error handling control from the settings', () => {
    expect(mapping).toMatchObject({
      Topics: ['payments'],
      StartingPosition: 'LATEST',
      BatchSize: 50,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 60,
      MaximumRecordAgeInSeconds: 3600,
      BisectBatchOnFunctionError: true,
      ProvisionedPollerConfig: { MinimumPollers: 2, MaximumPollers: 4 },
      DestinationConfig: { OnFailure: { Destination: arnOf(consumer.deadLetterQueue) } },
    });
    expect(consumer.settings.kafka.topic).toBe('payments');
  });

  it('joins a stable generated consumer group, prefixed with the consumer name', () => {
    const group = (mapping.SelfManagedKafkaEventSourceConfig as { ConsumerGroupId: string }).ConsumerGroupId;

    expect(group).toMatch(/^idempotent-consumer-[A-Za-z0-9-]+$/);
    expect(group).toBe(consumer.kafkaSource?.consumerGroupId);
    expect(consumer.kafkaSource?.kind).toBe('self-managed');
  });

  it("may read the secret and manage the pollers' network interfaces, and has no MSK permission", () => {
    expect(resourcesAllowing(template, 'secretsmanager:GetSecretValue')).toEqual([selfManagedSecretArn]);
    expect(resourcesAllowing(template, 'ec2:CreateNetworkInterface')).toEqual(['*']);
    expect(allAllowedActions(template).filter((a) => a.startsWith('kafka') || a.startsWith('kms:'))).toEqual([]);
  });

  it('reports no cdk-nag finding that is not acknowledged', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });
});

describe('synth-time validation of the Kafka event source', () => {
  /** Builds a café stack that must refuse its Kafka configuration; returns the error. */
  function refused(context: Record<string, unknown>, props: ConstructorParameters<typeof CafeStack>[2] = {}): Error {
    return refusal(newApp({ ...skipBundling, ...context }), (app) => new CafeStack(app, 'Refused', props)).error;
  }

  it('refuses both a cluster ARN and bootstrap servers', () => {
    const error = refused({ kafkaClusterArn: clusterArn, kafkaBootstrapServers: 'b-1:9096', kafkaSecretArn: selfManagedSecretArn });

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('give exactly one of a cluster ARN (Amazon MSK) or bootstrap servers (self-managed Kafka), got both');
  });

  it('refuses infinite Kafka retries (-1), and fewer than the attempts need, naming the rule', () => {
    const infinite = refused({ kafkaClusterArn: clusterArn }, { settings: withOverrides({ kafka: { retryAttempts: -1 } }, cafeSettings) });
    expect(infinite.message).toContain('Kafka retry attempts -1 must be an integer from 0 to 10000');
    expect(infinite.message).toContain('Kafka retries must be finite');

    const few = refused({ kafkaClusterArn: clusterArn }, { settings: withOverrides({ kafka: { retryAttempts: 4 } }, cafeSettings) });
    expect(few.message).toContain('Kafka retry attempts 4 are below 504 = maxAttempts 5 × batch size 100 − 1 + 5');
  });

  it('refuses a topic or consumer group without a cluster', () => {
    expect(refused({ kafkaTopic: 'orders' }).message).toContain('got neither');
  });

  it('refuses Kafka on a FIFO queue: the on-failure destination (the DLQ) would be FIFO', () => {
    expect(refused({ kafkaClusterArn: clusterArn, fifo: 'true' }).message).toContain(
      'a Kafka event source needs a standard dead-letter queue',
    );
  });

  it('refuses self-managed brokers over the internet without a secret, and malformed values', () => {
    expect(refused({ kafkaBootstrapServers: 'b-1.example.com:9096' }).message).toContain(
      'self-managed Kafka reached over the internet needs a secret ARN',
    );
    expect(refused({ kafkaBootstrapServers: 'b-1.example.com', kafkaSecretArn: selfManagedSecretArn }).message).toContain(
      'must each be host:port',
    );
    expect(refused({ kafkaClusterArn: 'arn:aws:sqs:us-east-1:123456789012:queue' }).message).toContain('is not an Amazon MSK cluster ARN');
    expect(refused({ kafkaClusterArn: clusterArn, kafkaConsumerGroup: 'bad group' }).message).toContain(
      'Kafka consumer group id "bad group"',
    );
    expect(refused({ kafkaClusterArn: ' ' }).message).toContain('CDK context "kafkaClusterArn" must be a non-empty string');
    expect(refused({ kafkaClusterARN: clusterArn }).message).toContain('unknown CDK context "kafkaClusterARN"');
  });

  it('refuses a secret ARN without the 6-character suffix, saying how to get the complete ARN', () => {
    const error = refused({
      kafkaBootstrapServers: 'b1.example.com:9096',
      kafkaSecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-user',
    });

    expect(error.message).toContain(
      'Kafka secret ARN "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-user" lacks the 6-character suffix that Secrets Manager appends',
    );
    expect(error.message).toContain('aws secretsmanager describe-secret --secret-id kafka-user --query ARN --output text');
  });

  it('refuses an MSK SASL/SCRAM secret whose name lacks AmazonMSK_ or whose customer managed key is not given (AWS rules)', () => {
    const error = refused({
      kafkaClusterArn: clusterArn,
      kafkaSecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:orders-user-AbCdEf',
    });

    expect((error as InvalidSettingsError).problems).toEqual([
      expect.stringContaining('an Amazon MSK SASL/SCRAM secret must be encrypted with a customer managed KMS key'),
      expect.stringContaining(
        'Kafka secret "orders-user" cannot authenticate with Amazon MSK: the name of an MSK SASL/SCRAM secret must start with AmazonMSK_',
      ),
    ]);
  });

  it('refuses a secret key that is not a key ARN, or a key without a secret', () => {
    expect(refused({ kafkaClusterArn: clusterArn, kafkaSecretArn: scramSecretArn, kafkaSecretKeyArn: 'alias/msk' }).message).toContain(
      'Kafka secret encryption key ARN "alias/msk" is not a KMS key ARN',
    );
    expect(refused({ kafkaClusterArn: clusterArn, kafkaSecretKeyArn: secretKeyArn }).message).toContain(
      'a Kafka secret encryption key ARN applies only with a secret ARN',
    );
  });

  it('fails synth when an escape hatch makes the retries infinite or removes the on-failure destination', () => {
    const app = newApp({ ...skipBundling, kafkaClusterArn: clusterArn });
    const stack = new CafeStack(app, 'Tampered');
    const cfn = stack.consumer.kafkaSource!.cfnMapping;
    cfn.maximumRetryAttempts = -1;
    cfn.destinationConfig = undefined;

    expect(() => app.synth({ force: true })).toThrow(
      /MaximumRetryAttempts -1: it must be 0 to 10000 \(rule: Kafka retries finite with an on-failure destination/,
    );
    expect(() => app.synth({ force: true })).toThrow(/no on-failure destination \(DestinationConfig\.OnFailure\)/);
  });
});

/**
 * The `-c key=value` pairs of every `npx cdk synth` / `npx cdk deploy` command in the README
 * (continuation lines joined), so that each command the README shows is synthesized here.
 */
function readmeCdkCommands(): { command: string; context: Record<string, string> }[] {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(/\\\n\s*/g, ' ');
  return [...readme.matchAll(/^\s*npx cdk (?:synth|deploy)\b[^\n#]*/gm)].map((match) => {
    const command = match[0].trim();
    const context = Object.fromEntries([...command.matchAll(/-c\s+([A-Za-z]+)=(\S+)/g)].map((pair) => [pair[1]!, pair[2]!]));
    return { command, context };
  });
}

describe("the README's cdk commands", () => {
  const commands = readmeCdkCommands();

  it('include the Kafka examples (MSK and self-managed)', () => {
    expect(commands.some((c) => c.context.kafkaClusterArn !== undefined)).toBe(true);
    expect(commands.some((c) => c.context.kafkaBootstrapServers !== undefined)).toBe(true);
  });

  it.each(commands.map((c) => [c.command, c.context] as const))('synthesize: %s', (_command, context) => {
    const { stack } = synthCafeStack({ context });

    const hasKafka = context.kafkaClusterArn !== undefined || context.kafkaBootstrapServers !== undefined;
    expect(stack.consumer.kafkaSource !== undefined).toBe(hasKafka);
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });
});
