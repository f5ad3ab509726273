import { beforeAll, describe, expect, it } from 'vitest';
import { Fn, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { SecurityGroup, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import type { IConstruct } from 'constructs';
import { defaultSettings, withOverrides } from '../../config/settings.js';
import { InvalidSettingsError } from '../../config/validateSettings.js';
import { ConsumerStack } from '../../lib/ConsumerStack.js';
import { IdempotentConsumer } from '../../lib/IdempotentConsumer.js';
import { mskResourceArns } from '../../lib/KafkaSource.js';
import {
  acknowledgedRules,
  allowStatements,
  awsSolutionsViolations,
  cfnResourceCount,
  newApp,
  resourcesAllowing,
  skipBundling,
  synthConsumerStack,
} from './synthConsumerStack.js';

// The Kafka mapping does not depend on the handler's code: these stacks skip bundling.
const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';
const secretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/orders-AbCdEf';

/** `{ Fn::GetAtt: [<logical id>, 'Arn'] }` of a construct's CloudFormation resource. */
const arnOf = (stack: Stack, construct: IConstruct) => ({
  'Fn::GetAtt': [stack.getLogicalId(construct.node.defaultChild as CfnElement), 'Arn'],
});

/** The template's Kafka event source mappings (those with `Topics`). */
function kafkaMappings(template: Template): Record<string, { Properties: Record<string, unknown>; DependsOn?: string[] }> {
  return template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { Topics: Match.anyValue() } }) as Record<
    string,
    { Properties: Record<string, unknown>; DependsOn?: string[] }
  >;
}

describe('ConsumerStack without Kafka options', () => {
  it('creates no Kafka event source mapping, no Kafka permission and no network interface policy', () => {
    const { stack, template } = synthConsumerStack({ context: skipBundling });

    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    expect(kafkaMappings(template)).toEqual({});
    expect(stack.consumer.kafkaSource).toBeUndefined();
    expect(allowStatements(template).flatMap((s) => s.actions).filter((a) => /^(kafka|kafka-cluster|ec2):/.test(a))).toEqual([]);
    template.resourceCountIs('AWS::IAM::Policy', 1);
    expect(Object.keys(template.toJSON().Outputs as object)).not.toContain('KafkaConsumerGroupId');
  });
});

describe('ConsumerStack with an Amazon MSK event source (-c kafkaClusterArn, kafkaTopic, kafkaConsumerGroup)', () => {
  let stack: ConsumerStack;
  let template: Template;
  let mappingId: string;

  beforeAll(() => {
    ({ stack, template } = synthConsumerStack({
      context: { ...skipBundling, kafkaClusterArn: clusterArn, kafkaTopic: 'orders', kafkaConsumerGroup: 'cafe-orders-consumer' },
    }));
    const ids = Object.keys(kafkaMappings(template));
    expect(ids).toHaveLength(1);
    mappingId = ids[0] as string;
  });

  it('adds one Kafka mapping to the same function as the SQS mapping', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
    template.resourceCountIs('AWS::Lambda::Function', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: clusterArn,
      FunctionName: { Ref: stack.getLogicalId(stack.consumer.function.node.defaultChild as CfnElement) },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Description: Match.stringLikeRegexp('Kafka topic orders'),
    });
  });

  it('C8: finite retries, an on-failure destination (the DLQ), partial batch responses, bisect and record age from the settings', () => {
    const { Properties } = kafkaMappings(template)[mappingId]!;

    expect(Properties).toMatchObject({
      EventSourceArn: clusterArn,
      Topics: ['orders'],
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'cafe-orders-consumer' },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 4,
      BisectBatchOnFunctionError: false,
      MaximumRecordAgeInSeconds: -1,
      DestinationConfig: { OnFailure: { Destination: arnOf(stack, stack.consumer.deadLetterQueue) } },
    });
    expect(Properties.MaximumRetryAttempts).toBe(defaultSettings.kafka.retryAttempts);
    expect(Properties.SourceAccessConfigurations).toBeUndefined();
    expect(Properties.SelfManagedEventSource).toBeUndefined();
  });

  it('runs the pollers in provisioned mode (required for the error handling controls) with the settings\' pollers', () => {
    expect(kafkaMappings(template)[mappingId]!.Properties.ProvisionedPollerConfig).toEqual({
      MinimumPollers: defaultSettings.kafka.minimumPollers,
      MaximumPollers: defaultSettings.kafka.maximumPollers,
    });
  });

  it('turns on the mapping\'s event count, error count and Kafka (offset lag) metrics', () => {
    expect(kafkaMappings(template)[mappingId]!.Properties.MetricsConfig).toEqual({
      Metrics: ['EventCount', 'ErrorCount', 'KafkaMetrics'],
    });
  });

  it('tells the function to dead-letter on attempt MaximumRetryAttempts + 1', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ KAFKA_MAX_ATTEMPTS: String(defaultSettings.kafka.retryAttempts + 1) }) },
    });
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
    const actions = [
      'ec2:CreateNetworkInterface',
      'ec2:DeleteNetworkInterface',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSecurityGroups',
      'ec2:DescribeSubnets',
      'ec2:DescribeVpcs',
    ];
    const wildcard = allowStatements(template).filter((statement) => statement.resources.includes('*'));

    expect(wildcard).toHaveLength(1);
    expect([...wildcard[0]!.actions].sort()).toEqual(actions);
    expect(wildcard[0]!.resources).toEqual(['*']);
    expect(kafkaMappings(template)[mappingId]!.DependsOn).toContain(wildcard[0]!.policy);
  });

  it('may send to the dead-letter queue (the on-failure destination)', () => {
    expect(resourcesAllowing(template, 'sqs:SendMessage')).toEqual([arnOf(stack, stack.consumer.deadLetterQueue)]);
  });

  it('keeps the role free of AWS managed policies (no AWSLambdaMSKExecutionRole)', () => {
    template.resourceCountIs('AWS::IAM::Role', 1);
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
  });

  it('outputs the consumer group and the mapping id', () => {
    template.hasOutput('KafkaConsumerGroupId', { Value: 'cafe-orders-consumer' });
    template.hasOutput('KafkaEventSourceMappingId', { Value: { Ref: mappingId } });
  });

  it('reports no cdk-nag finding that is not acknowledged', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('acknowledges only the runtime and the network interface wildcard, each with a reason', () => {
    const rules = acknowledgedRules(stack);

    expect([...rules.keys()].sort()).toEqual(['AwsSolutions-IAM5[Resource::*]', 'AwsSolutions-L1']);
    for (const reason of rules.values()) expect(reason.length).toBeGreaterThan(40);
    const acknowledgedOn = stack.node
      .findAll()
      .filter((c) => c.node.metadata.some((m) => JSON.stringify(m.data ?? '').includes('AwsSolutions-IAM5')))
      .map((c) => c.node.path);
    expect(acknowledgedOn).toEqual(['IdempotentConsumer/Consumer/KafkaSource/NetworkInterfacePolicy']);
  });
});

describe('IdempotentConsumer with an Amazon MSK event source and a SASL/SCRAM secret', () => {
  it('authenticates with the secret, may read it, and keeps the cluster permissions', () => {
    const stack = new Stack(newApp(skipBundling), 'MskScram');
    new IdempotentConsumer(stack, 'Consumer', { kafka: { clusterArn, secretArn, consumerGroupId: 'cafe' } });
    const template = Template.fromStack(stack);

    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: clusterArn,
      SourceAccessConfigurations: [{ Type: 'SASL_SCRAM_512_AUTH', URI: secretArn }],
    });
    expect(resourcesAllowing(template, 'secretsmanager:GetSecretValue')).toEqual([secretArn]);
    expect(resourcesAllowing(template, 'kafka:GetBootstrapBrokers')).toEqual([clusterArn]);
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
    kafka: {
      retryAttempts: 2,
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
    const app = newApp(skipBundling);
    stack = new Stack(app, 'SelfManaged');
    const vpc = Vpc.fromVpcAttributes(stack, 'Vpc', {
      vpcId: 'vpc-0123456789abcdef0',
      availabilityZones: ['us-east-1a', 'us-east-1b'],
      privateSubnetIds: ['subnet-0aaaaaaaaaaaaaaa1', 'subnet-0bbbbbbbbbbbbbbb2'],
    });
    consumer = new IdempotentConsumer(stack, 'Consumer', {
      settings,
      kafka: {
        bootstrapServers: ['b-1.kafka.internal:9096', 'b-2.kafka.internal:9096'],
        secretArn,
        topic: 'payments',
        vpc: {
          vpc,
          subnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
          securityGroup: SecurityGroup.fromSecurityGroupId(stack, 'Pollers', 'sg-0123456789abcdef0'),
        },
      },
    });
    template = Template.fromStack(stack);
    mapping = Object.values(kafkaMappings(template))[0]!.Properties;
  });

  it('reads the brokers with the secret (SASL/SCRAM-512 by default) from the VPC\'s subnets', () => {
    expect(mapping).toMatchObject({
      SelfManagedEventSource: { Endpoints: { KafkaBootstrapServers: ['b-1.kafka.internal:9096', 'b-2.kafka.internal:9096'] } },
      SourceAccessConfigurations: [
        { Type: 'SASL_SCRAM_512_AUTH', URI: secretArn },
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
      MaximumRetryAttempts: 2,
      MaximumRecordAgeInSeconds: 3600,
      BisectBatchOnFunctionError: true,
      ProvisionedPollerConfig: { MinimumPollers: 2, MaximumPollers: 4 },
      DestinationConfig: { OnFailure: { Destination: arnOf(stack, consumer.deadLetterQueue) } },
    });
    expect(consumer.settings.kafka.topic).toBe('payments');
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ KAFKA_MAX_ATTEMPTS: '3' }) },
    });
  });

  it('joins a stable generated consumer group, prefixed with the consumer name', () => {
    const group = (mapping.SelfManagedKafkaEventSourceConfig as { ConsumerGroupId: string }).ConsumerGroupId;

    expect(group).toMatch(/^cafe-orders-[A-Za-z0-9-]+$/);
    expect(group).toBe(consumer.kafkaSource?.consumerGroupId);
    expect(consumer.kafkaSource?.kind).toBe('self-managed');
  });

  it('may read the secret and manage the pollers\' network interfaces, and has no MSK permission', () => {
    expect(resourcesAllowing(template, 'secretsmanager:GetSecretValue')).toEqual([secretArn]);
    expect(resourcesAllowing(template, 'ec2:CreateNetworkInterface')).toEqual(['*']);
    expect(allowStatements(template).flatMap((s) => s.actions).filter((a) => a.startsWith('kafka'))).toEqual([]);
  });

  it('reports no cdk-nag finding that is not acknowledged', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });
});

describe('synth-time validation of the Kafka event source', () => {
  /** Builds a ConsumerStack that must refuse its input; returns the error and how many resources exist. */
  function refused(context: Record<string, unknown>, props: ConstructorParameters<typeof ConsumerStack>[2] = {}) {
    const app = newApp({ ...skipBundling, ...context });
    try {
      new ConsumerStack(app, 'Refused', props);
    } catch (error) {
      return { error: error as Error, resources: cfnResourceCount(app) };
    }
    throw new Error('expected the stack to refuse this Kafka configuration');
  }

  it('refuses both a cluster ARN and bootstrap servers, before creating any resource', () => {
    const { error, resources } = refused({ kafkaClusterArn: clusterArn, kafkaBootstrapServers: 'b-1:9096', kafkaSecretArn: secretArn });

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain(
      'give exactly one of a cluster ARN (Amazon MSK) or bootstrap servers (self-managed Kafka), got both',
    );
    expect(resources).toBe(0);
  });

  it('refuses infinite Kafka retries (-1), naming the rule', () => {
    const settings = withOverrides({ kafka: { retryAttempts: -1 } });

    const { error, resources } = refused({ kafkaClusterArn: clusterArn }, { settings });

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('Kafka retry attempts -1 must be an integer from 0 to 10000');
    expect(error.message).toContain('Kafka retries must be finite');
    expect(resources).toBe(0);
  });

  it('refuses a topic or consumer group without a cluster', () => {
    const { error } = refused({ kafkaTopic: 'orders' });

    expect(error.message).toContain('got neither');
  });

  it('refuses Kafka on a FIFO queue: the on-failure destination (the DLQ) would be FIFO', () => {
    const { error } = refused({ kafkaClusterArn: clusterArn, fifo: 'true' });

    expect(error.message).toContain('a Kafka event source needs a standard dead-letter queue');
  });

  it('refuses self-managed brokers over the internet without a secret, and malformed values', () => {
    expect(refused({ kafkaBootstrapServers: 'b-1.example.com:9096' }).error.message).toContain(
      'self-managed Kafka reached over the internet needs a secret ARN',
    );
    expect(refused({ kafkaBootstrapServers: 'b-1.example.com', kafkaSecretArn: secretArn }).error.message).toContain(
      'must each be host:port',
    );
    expect(refused({ kafkaClusterArn: 'arn:aws:sqs:us-east-1:123456789012:queue' }).error.message).toContain(
      'is not an Amazon MSK cluster ARN',
    );
    expect(refused({ kafkaClusterArn: clusterArn, kafkaConsumerGroup: 'bad group' }).error.message).toContain(
      'Kafka consumer group id "bad group"',
    );
    expect(() => new ConsumerStack(newApp({ kafkaClusterArn: ' ' }), 'Empty')).toThrow(
      'CDK context "kafkaClusterArn" must be a non-empty string',
    );
  });

  it('fails synth when an escape hatch makes the retries infinite or removes the on-failure destination', () => {
    const app = newApp({ ...skipBundling, kafkaClusterArn: clusterArn });
    const stack = new ConsumerStack(app, 'Tampered');
    const cfn = stack.consumer.kafkaSource!.cfnMapping;
    cfn.maximumRetryAttempts = -1;
    cfn.destinationConfig = undefined;

    expect(() => Template.fromStack(stack)).toThrow(/MaximumRetryAttempts -1: it must be 0 to 10000 \(rule: Kafka retries finite with an on-failure destination/);
    expect(() => app.synth({ force: true })).toThrow(/no on-failure destination \(DestinationConfig\.OnFailure\)/);
  });
});
