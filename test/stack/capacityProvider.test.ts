/**
 * The consumer on Lambda Managed Instances (`managedInstances`): the function attached to the
 * capacity provider with its per-environment concurrency, `$LATEST.PUBLISHED` published on every
 * deployment for the unqualified event source mapping, another construct id (a function's compute
 * type is fixed at creation), the throttles alarm that speaks of capacity, cdk-nag clean, and the
 * synth errors for what AWS would reject.
 */
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Match, type Template } from 'aws-cdk-lib/assertions';
import { SecurityGroup, Subnet } from 'aws-cdk-lib/aws-ec2';
import { Role } from 'aws-cdk-lib/aws-iam';
import { Architecture, CapacityProvider, Code, type ICapacityProvider, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { ConsumerMonitoring } from '../../packages/cdk/src/ConsumerMonitoring.js';
import { IdempotentConsumer, type IdempotentConsumerProps } from '../../packages/cdk/src/IdempotentConsumer.js';
import type { ManagedInstancesOptions } from '../../packages/cdk/src/capacityProvider.js';
import { defaultSettings, withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import {
  awsSolutionsViolations,
  fixtureEntry,
  newApp,
  refOf,
  refusal,
  skipBundling,
  sourceBundling,
  synthConsumer,
} from './stackHelpers.js';

const CAPACITY_PROVIDER_ARN = 'arn:aws:lambda:us-east-1:123456789012:capacity-provider:consumers';

/** Settings whose function is large enough for Lambda Managed Instances (2048 MB). */
const managedSettings = withOverrides({ function: { memorySizeMb: 2048 } });

/** A capacity provider imported by ARN, as a team that shares one across stacks would give it. */
const imported = (stack: Stack): ICapacityProvider => CapacityProvider.fromCapacityProviderArn(stack, 'Capacity', CAPACITY_PROVIDER_ARN);

/** A capacity provider of this app, on imported subnets and security group (no VPC of its own). */
function ownCapacityProvider(stack: Stack, architectures?: Architecture[]): CapacityProvider {
  return new CapacityProvider(stack, 'Capacity', {
    subnets: [
      Subnet.fromSubnetId(stack, 'SubnetA', 'subnet-0123456789abcdef0'),
      Subnet.fromSubnetId(stack, 'SubnetB', 'subnet-0123456789abcdef1'),
    ],
    securityGroups: [SecurityGroup.fromSecurityGroupId(stack, 'Group', 'sg-0123456789abcdef0')],
    ...(architectures === undefined ? {} : { architectures }),
  });
}

/** The template's one `AWS::Lambda::Function`, with its logical id. */
function onlyFunction(template: Template): { id: string; properties: Record<string, unknown> } {
  const functions = Object.entries(template.findResources('AWS::Lambda::Function'));
  expect(functions).toHaveLength(1);
  const [id, resource] = functions[0] as [string, { Properties: Record<string, unknown> }];
  return { id, properties: resource.Properties };
}

/** A consumer of `managedSettings` on the capacity provider `capacityProvider(stack)` with `options`. */
function synthManaged(
  options: Omit<ManagedInstancesOptions, 'capacityProvider'> = {},
  capacityProvider: (stack: Stack) => ICapacityProvider = imported,
  extra: Partial<IdempotentConsumerProps> = {},
) {
  return synthConsumer({
    props: { settings: managedSettings, ...extra },
    extra: (stack) => ({ managedInstances: { capacityProvider: capacityProvider(stack), ...options } }),
  });
}

/** The error of a consumer built with `props` (the fixture entry unless `existingFunction`), in a fresh stack. */
function refused(props: (stack: Stack) => Partial<IdempotentConsumerProps>): InvalidSettingsError {
  const app = newApp(skipBundling);
  const stack = new Stack(app, 'Refused');
  const given = props(stack);
  const { error } = refusal(app, () => {
    new IdempotentConsumer(stack, 'Consumer', {
      ...(given.existingFunction === undefined ? { entry: fixtureEntry, bundling: sourceBundling } : {}),
      ...given,
    });
  });
  expect(error).toBeInstanceOf(InvalidSettingsError);
  return error as InvalidSettingsError;
}

describe('IdempotentConsumer on Lambda Managed Instances', () => {
  it('attaches the function to the capacity provider with the given concurrency and publishes $LATEST.PUBLISHED, cdk-nag clean', () => {
    const { stack, consumer, template } = synthManaged({ perExecutionEnvironmentMaxConcurrency: 32 });

    const fn = onlyFunction(template);
    expect(fn.properties.CapacityProviderConfig).toEqual({
      LambdaManagedInstancesCapacityProviderConfig: {
        CapacityProviderArn: CAPACITY_PROVIDER_ARN,
        PerExecutionEnvironmentMaxConcurrency: 32,
        ExecutionEnvironmentMemoryGiBPerVCpu: 2,
      },
    });
    expect(fn.properties.PublishToLatestPublished).toBe(true);
    expect(fn.properties.FunctionScalingConfig).toBeUndefined();
    expect(fn.properties).toMatchObject({ Runtime: 'nodejs24.x', MemorySize: 2048, Architectures: ['arm64'] });
    expect(consumer.managedInstances).toMatchObject({
      perExecutionEnvironmentMaxConcurrency: 32,
      memoryGiBPerVCpu: 2,
      vCpusPerExecutionEnvironment: 1,
    });
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('keeps the event source mapping on the unqualified function, which runs $LATEST.PUBLISHED, with partial batch responses', () => {
    const { consumer, template } = synthManaged({ perExecutionEnvironmentMaxConcurrency: 8 });

    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: refOf(consumer.function),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: defaultSettings.function.maxConcurrency },
    });
    template.resourceCountIs('AWS::Lambda::Version', 0);
    template.resourceCountIs('AWS::Lambda::Alias', 0);
  });

  it('gives the function another construct id, so that switching the compute type replaces it', () => {
    const managed = onlyFunction(synthManaged().template);
    const plain = onlyFunction(synthConsumer({ props: { settings: managedSettings } }).template);

    expect(managed.id).toMatch(/^ConsumerManagedInstancesFunction[0-9A-F]{8}$/);
    expect(plain.id).toMatch(/^ConsumerFunction[0-9A-F]{8}$/);
    for (const key of ['CapacityProviderConfig', 'PublishToLatestPublished', 'FunctionScalingConfig']) {
      expect(plain.properties[key]).toBeUndefined();
    }
  });

  it("writes Lambda's Node.js default concurrency, 64 per vCPU, when none is given", () => {
    const small = synthManaged();
    expect(onlyFunction(small.template).properties.CapacityProviderConfig).toMatchObject({
      LambdaManagedInstancesCapacityProviderConfig: { PerExecutionEnvironmentMaxConcurrency: 64, ExecutionEnvironmentMemoryGiBPerVCpu: 2 },
    });

    const large = synthManaged({ memoryGiBPerVCpu: 4 }, imported, {
      settings: withOverrides({ function: { memorySizeMb: 8192 } }),
    });
    expect(onlyFunction(large.template).properties.CapacityProviderConfig).toMatchObject({
      LambdaManagedInstancesCapacityProviderConfig: { PerExecutionEnvironmentMaxConcurrency: 128, ExecutionEnvironmentMemoryGiBPerVCpu: 4 },
    });
    expect(large.consumer.managedInstances?.vCpusPerExecutionEnvironment).toBe(2);
  });

  it('sets the minimum and maximum of execution environments when given', () => {
    const { template } = synthManaged({ minExecutionEnvironments: 0, maxExecutionEnvironments: 6 });

    expect(onlyFunction(template).properties.FunctionScalingConfig).toEqual({ MinExecutionEnvironments: 0, MaxExecutionEnvironments: 6 });
  });

  it('takes an arm64 capacity provider of this app by its ARN attribute, with no warning', () => {
    let provider: CapacityProvider | undefined;
    const { stack, consumer, template } = synthManaged({ perExecutionEnvironmentMaxConcurrency: 16 }, (s) => {
      provider = ownCapacityProvider(s, [Architecture.ARM_64]);
      return provider;
    });

    template.resourceCountIs('AWS::Lambda::CapacityProvider', 1);
    expect(onlyFunction(template).properties.CapacityProviderConfig).toEqual({
      LambdaManagedInstancesCapacityProviderConfig: {
        CapacityProviderArn: { 'Fn::GetAtt': [stack.getLogicalId(provider?.node.defaultChild as never), 'Arn'] },
        PerExecutionEnvironmentMaxConcurrency: 16,
        ExecutionEnvironmentMemoryGiBPerVCpu: 2,
      },
    });
    Annotations.fromStack(stack).hasNoWarning('*', Match.stringLikeRegexp('capacityProvider is imported'));
    // The capacity provider's operator role (AWSLambdaManagedEC2ResourceOperator) is the user's; the consumer adds no finding.
    expect(awsSolutionsViolations(consumer)).toEqual([]);
  });

  it('warns that the architecture of an imported capacity provider cannot be checked', () => {
    const { stack } = synthManaged();

    Annotations.fromStack(stack).hasWarning(
      '/Generic/Consumer/ManagedInstancesFunction',
      Match.stringLikeRegexp('capacityProvider is imported: make sure its instances are arm64'),
    );
  });

  it('attaches an existing lambda.Function of this app under its own id', () => {
    const { template } = synthConsumer({
      extra: (stack) => ({
        existingFunction: new LambdaFunction(stack, 'Mine', {
          runtime: Runtime.NODEJS_22_X,
          architecture: Architecture.ARM_64,
          memorySize: 4096,
          handler: 'index.handler',
          code: Code.fromInline('export const handler = async () => ({ batchItemFailures: [] });'),
          timeout: Duration.seconds(defaultSettings.function.timeoutSeconds),
        }),
        managedInstances: { capacityProvider: imported(stack), perExecutionEnvironmentMaxConcurrency: 10 },
      }),
    });

    const fn = onlyFunction(template);
    expect(fn.id).toMatch(/^Mine/);
    expect(fn.properties.CapacityProviderConfig).toMatchObject({
      LambdaManagedInstancesCapacityProviderConfig: { PerExecutionEnvironmentMaxConcurrency: 10 },
    });
    expect(fn.properties.PublishToLatestPublished).toBe(true);
  });

  it('tells the throttles alarm that throttles come from capacity, and leaves the default alarm as it was', () => {
    const throttlesAlarm = (template: Template) =>
      (
        Object.values(template.findResources('AWS::CloudWatch::Alarm')) as {
          Properties: { MetricName?: string; AlarmDescription: string };
        }[]
      )
        .filter((alarm) => alarm.Properties.MetricName === 'Throttles')
        .map((alarm) => alarm.Properties.AlarmDescription);
    const after = (stack: Stack, consumer: IdempotentConsumer) => {
      new ConsumerMonitoring(stack, 'Monitoring', { consumer });
    };

    const managed = synthConsumer({
      props: { settings: managedSettings },
      extra: (stack) => ({ managedInstances: { capacityProvider: imported(stack) } }),
      after,
    });
    const plain = synthConsumer({ after });

    expect(throttlesAlarm(managed.template)).toEqual([expect.stringContaining('on its capacity provider')]);
    expect(throttlesAlarm(plain.template)).toEqual([expect.stringContaining('the account or reserved concurrency is exhausted')]);
  });
});

describe('IdempotentConsumer refuses what Lambda Managed Instances reject', () => {
  it('a function below 2048 MB, or below 1 vCPU at its memory-to-vCPU ratio', () => {
    const defaultMemory = refused((stack) => ({ managedInstances: { capacityProvider: imported(stack) } }));
    expect(defaultMemory.problems).toEqual([
      expect.stringMatching(/^the function's memory 1024 MB is below 2048 MB: .*raise settings\.function\.memorySizeMb/),
    ]);

    const ratio = refused((stack) => ({
      settings: managedSettings,
      managedInstances: { capacityProvider: imported(stack), memoryGiBPerVCpu: 8 },
    }));
    expect(ratio.message).toContain("the function's memory 2048 MB is below 8192 MB");
  });

  it('a runtime below nodejs22.x', () => {
    const error = refused((stack) => ({
      existingFunction: new LambdaFunction(stack, 'Old', {
        runtime: Runtime.NODEJS_20_X,
        architecture: Architecture.ARM_64,
        memorySize: 2048,
        handler: 'index.handler',
        code: Code.fromInline('export const handler = async () => ({});'),
        timeout: Duration.seconds(defaultSettings.function.timeoutSeconds),
      }),
      managedInstances: { capacityProvider: imported(stack) },
    }));

    expect(error.problems).toEqual([
      expect.stringContaining(
        "the function's runtime nodejs20.x cannot run on Lambda Managed Instances: Node.js needs nodejs22.x or later",
      ),
    ]);
  });

  it('a concurrency, memory ratio or execution environment count outside the AWS ranges', () => {
    const error = refused((stack) => ({
      settings: managedSettings,
      managedInstances: {
        capacityProvider: imported(stack),
        perExecutionEnvironmentMaxConcurrency: 1601,
        memoryGiBPerVCpu: 3,
        minExecutionEnvironments: -1,
        maxExecutionEnvironments: 15_001,
      },
    }));

    expect(error.problems).toEqual([
      'managedInstances.memoryGiBPerVCpu 3 must be one of 2, 4, 8 GiB per vCPU (AWS rule: the memory-to-vCPU ratios of Lambda Managed Instances)',
      'managedInstances.perExecutionEnvironmentMaxConcurrency 1601 must be a whole number from 1 to 1600 (AWS rule)',
      'managedInstances.minExecutionEnvironments -1 must be a whole number from 0 to 15000 (AWS rule)',
      'managedInstances.maxExecutionEnvironments 15001 must be a whole number from 0 to 15000 (AWS rule)',
    ]);
    const inverted = refused((stack) => ({
      settings: managedSettings,
      managedInstances: { capacityProvider: imported(stack), minExecutionEnvironments: 7, maxExecutionEnvironments: 6 },
    }));
    expect(inverted.problems).toEqual(['managedInstances.minExecutionEnvironments 7 is above maxExecutionEnvironments 6']);
    for (const concurrency of [0, 2.5]) {
      const refusedConcurrency = refused((stack) => ({
        settings: managedSettings,
        managedInstances: { capacityProvider: imported(stack), perExecutionEnvironmentMaxConcurrency: concurrency },
      }));
      expect(refusedConcurrency.problems).toEqual([
        `managedInstances.perExecutionEnvironmentMaxConcurrency ${concurrency} must be a whole number from 1 to 1600 (AWS rule)`,
      ]);
    }
  });

  it('a capacity provider of this app whose instances are not arm64, x86_64 being its default', () => {
    for (const architectures of [undefined, [Architecture.X86_64]]) {
      const error = refused((stack) => ({
        settings: managedSettings,
        managedInstances: { capacityProvider: ownCapacityProvider(stack, architectures) },
      }));
      expect(error.problems).toEqual([
        expect.stringMatching(/^managedInstances\.capacityProvider runs x86_64 instances but the function is arm64: .*ARM_64/),
      ]);
    }
  });

  it('an imported function, which the construct cannot configure, and builds nothing', () => {
    const app = new App({ context: skipBundling });
    const stack = new Stack(app, 'Imported');
    const { error, resources } = refusal(app, () => {
      new IdempotentConsumer(stack, 'Consumer', {
        existingFunction: LambdaFunction.fromFunctionAttributes(stack, 'Theirs', {
          functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:theirs',
          role: Role.fromRoleArn(stack, 'TheirRole', 'arn:aws:iam::123456789012:role/theirs'),
          sameEnvironment: true,
        }),
        managedInstances: { capacityProvider: imported(stack) },
      });
    });

    expect((error as InvalidSettingsError).problems).toEqual([
      expect.stringContaining('managedInstances needs a function the construct can configure'),
    ]);
    expect(resources).toBe(0);
  });
});
