/**
 * The consumer function on Lambda Managed Instances: attached to a capacity provider, where one
 * execution environment serves many invocations at once. The rules AWS applies, checked at synth
 * ({@link managedInstancesProblems}), and the function's configuration ({@link attachToCapacityProvider}).
 *
 * @module
 */
import { Annotations, Token } from 'aws-cdk-lib';
import {
  CapacityProvider,
  type CfnCapacityProvider,
  type CfnFunction,
  type ICapacityProvider,
  type IFunction,
  Function as LambdaFunction,
} from 'aws-cdk-lib/aws-lambda';
import type { ConsumerSettings } from 'idempotent-consumer/settings';

/**
 * The oldest Node.js runtime Lambda Managed Instances run: `nodejs22.x`
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-runtimes.html).
 */
export const MANAGED_INSTANCES_MIN_NODE_MAJOR = 22;

/**
 * The smallest function on Lambda Managed Instances, in MB: 2 GB and 1 vCPU
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-best-practices.html, "Function configuration").
 */
export const MANAGED_INSTANCES_MIN_MEMORY_MB = 2048;

/**
 * The memory-to-vCPU ratios of an execution environment, in GiB per vCPU: 2 (compute), 4
 * (general), 8 (memory). The API takes 2.0 to 8.0 (`ExecutionEnvironmentMemoryGiBPerVCpu`,
 * https://docs.aws.amazon.com/lambda/latest/api/API_LambdaManagedInstancesCapacityProviderConfig.html);
 * the supported ratios are these three
 * (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-function-capacityproviderconfig.html).
 */
export const MANAGED_INSTANCES_MEMORY_GIB_PER_VCPU = [2, 4, 8] as const;

/**
 * The range of `PerExecutionEnvironmentMaxConcurrency`, in concurrent invocations per execution
 * environment (https://docs.aws.amazon.com/lambda/latest/api/API_LambdaManagedInstancesCapacityProviderConfig.html).
 */
export const PER_EXECUTION_ENVIRONMENT_MAX_CONCURRENCY = { min: 1, max: 1600 } as const;

/**
 * Lambda's default maximum concurrency for Node.js runtimes on Lambda Managed Instances: 64
 * concurrent invocations per vCPU of the execution environment
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-nodejs-runtime.html, "Maximum concurrency").
 */
export const NODEJS_MAX_CONCURRENCY_PER_VCPU = 64;

/**
 * The range of `MinExecutionEnvironments` and `MaxExecutionEnvironments`, in execution environments
 * (https://docs.aws.amazon.com/lambda/latest/api/API_FunctionScalingConfig.html).
 */
export const EXECUTION_ENVIRONMENTS = { min: 0, max: 15_000 } as const;

/**
 * How the consumer function runs on Lambda Managed Instances (the `managedInstances` prop of
 * `IdempotentConsumer`). The capacity provider (its VPC, subnets, security groups, instance types,
 * operator role, vCPU ceiling) is the user's: create one with `lambda.CapacityProvider` or import
 * one with `CapacityProvider.fromCapacityProviderArn`. Its architecture must be `arm64`, the
 * consumer function's.
 *
 * @example
 * const capacityProvider = new lambda.CapacityProvider(this, 'Capacity', {
 *   subnets: vpc.privateSubnets,
 *   securityGroups: [securityGroup],
 *   architectures: [lambda.Architecture.ARM_64],
 * });
 * new IdempotentConsumer(this, 'Consumer', {
 *   entry: 'src/handler.ts',
 *   settings: withOverrides({ function: { memorySizeMb: 2048 } }),
 *   managedInstances: { capacityProvider, perExecutionEnvironmentMaxConcurrency: 32 },
 * });
 */
export interface ManagedInstancesOptions {
  /**
   * The capacity provider the function runs on. Its instances must be `arm64` (a capacity
   * provider's default is `x86_64`,
   * https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-capacityprovider-instancerequirements.html):
   * checked for a `lambda.CapacityProvider` of this app, a warning for an imported one. The
   * deploying principal needs `lambda:PassCapacityProvider` on it
   * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-core-concepts.html).
   */
  readonly capacityProvider: ICapacityProvider;
  /**
   * The most invocations (batches) one execution environment runs at once
   * (`PerExecutionEnvironmentMaxConcurrency`): a whole number from 1 to 1600. Lambda raises the
   * concurrency of an environment up to it as the environment absorbs the load. The engine keeps
   * each invocation's state apart, so any value is safe; what it costs is memory (each batch in
   * flight holds its records and reads) and DynamoDB contention between batches of one environment.
   *
   * @default - Lambda's default for Node.js, 64 per vCPU of the environment: 64 × (memory in GiB ÷
   *   `memoryGiBPerVCpu`, rounded down, at least 1), written into the template so that it and the
   *   local runtime say the same number (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-nodejs-runtime.html)
   */
  readonly perExecutionEnvironmentMaxConcurrency?: number;
  /**
   * The memory of an execution environment per vCPU, in GiB (`ExecutionEnvironmentMemoryGiBPerVCpu`):
   * 2, 4 or 8. With the function's memory (`settings.function.memorySizeMb`) it sets the
   * environment's vCPUs: memory ÷ this; at least 1 vCPU is required.
   *
   * @default 2 (the aws-cdk-lib default: 2048 MB is then exactly 1 vCPU)
   */
  readonly memoryGiBPerVCpu?: number;
  /**
   * The fewest execution environments Lambda keeps for the function (`FunctionScalingConfig`
   * `MinExecutionEnvironments`, 0 to 15000). They run, and cost instance hours, without traffic.
   *
   * @default - Lambda's default, 3 (one per Availability Zone)
   */
  readonly minExecutionEnvironments?: number;
  /**
   * The most execution environments Lambda starts for the function (`MaxExecutionEnvironments`, 0 to 15000).
   *
   * @default - no limit but the capacity provider's vCPUs
   */
  readonly maxExecutionEnvironments?: number;
}

/** What `attachToCapacityProvider` wrote into the function's template: the options with their defaults applied. */
export interface ManagedInstancesConfiguration {
  /** The capacity provider the function runs on. */
  readonly capacityProvider: ICapacityProvider;
  /** Concurrent invocations per execution environment (1 to 1600). */
  readonly perExecutionEnvironmentMaxConcurrency: number;
  /** GiB of memory per vCPU of an execution environment (2, 4 or 8). */
  readonly memoryGiBPerVCpu: number;
  /** vCPUs of an execution environment: the function's memory ÷ `memoryGiBPerVCpu`, rounded down. */
  readonly vCpusPerExecutionEnvironment: number;
  /** `MinExecutionEnvironments`, when given. */
  readonly minExecutionEnvironments?: number;
  /** `MaxExecutionEnvironments`, when given. */
  readonly maxExecutionEnvironments?: number;
}

/** What the checks need to know of the function that goes on the capacity provider. */
export interface ManagedFunctionShape {
  /** The Lambda runtime identifier, e.g. `nodejs24.x`; `undefined` when unknown. */
  readonly runtime?: string;
  /** The function's memory, in MB; `undefined` when unknown. */
  readonly memorySizeMb?: number;
  /** `arm64` or `x86_64`; `undefined` when unknown. */
  readonly architecture?: string;
}

/**
 * The function the consumer will attach: the one built from `entry` (the settings' runtime and
 * memory, `arm64`), or an existing `lambda.Function` of this app (read from its template);
 * `'imported'` for a function the construct cannot change.
 */
export function managedFunctionShape(
  existingFunction: IFunction | undefined,
  settings: ConsumerSettings,
): ManagedFunctionShape | 'imported' {
  if (existingFunction === undefined) {
    return { runtime: settings.function.runtime, memorySizeMb: settings.function.memorySizeMb, architecture: 'arm64' };
  }
  if (!(existingFunction instanceof LambdaFunction)) return 'imported';
  const cfn = existingFunction.node.defaultChild as CfnFunction;
  const memory = cfn.memorySize;
  return {
    runtime: existingFunction.runtime.name,
    memorySizeMb: memory === undefined ? 128 : Token.isUnresolved(memory) ? undefined : memory,
    architecture: existingFunction.architecture.name,
  };
}

/** The architecture of a capacity provider of this app: its `InstanceRequirements.Architectures`, `x86_64` when unset; `undefined` when unknown. */
function capacityProviderArchitecture(capacityProvider: ICapacityProvider): string | undefined {
  if (!(capacityProvider instanceof CapacityProvider)) return undefined;
  const requirements = (capacityProvider.node.defaultChild as CfnCapacityProvider).instanceRequirements;
  if (requirements === undefined) return 'x86_64';
  if (Token.isUnresolved(requirements)) return undefined;
  const architectures = (requirements as CfnCapacityProvider.InstanceRequirementsProperty).architectures;
  if (architectures === undefined) return 'x86_64';
  return architectures.length === 1 && !Token.isUnresolved(architectures[0]) ? architectures[0] : undefined;
}

/** A whole number in `[min, max]`. */
function inRange(value: number, range: { readonly min: number; readonly max: number }): boolean {
  return Number.isInteger(value) && value >= range.min && value <= range.max;
}

/**
 * Checks `options` against the rules AWS applies to a function on Lambda Managed Instances and
 * returns one sentence per broken rule:
 * - the function is one the construct can configure: built from `entry`, or a `lambda.Function`
 *   of this app (an imported function is attached to its capacity provider where it is defined);
 * - its runtime is Node.js 22 or later (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-runtimes.html);
 * - its memory is at least 2048 MB and at least 1 vCPU at `memoryGiBPerVCpu`
 *   (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-best-practices.html);
 * - `memoryGiBPerVCpu` is 2, 4 or 8; `perExecutionEnvironmentMaxConcurrency` a whole number from 1
 *   to 1600 (https://docs.aws.amazon.com/lambda/latest/api/API_LambdaManagedInstancesCapacityProviderConfig.html);
 * - `minExecutionEnvironments` and `maxExecutionEnvironments` whole numbers from 0 to 15000, the
 *   first not above the second (https://docs.aws.amazon.com/lambda/latest/api/API_FunctionScalingConfig.html);
 * - a capacity provider of this app has the function's architecture (`arm64` for a function built
 *   from `entry`; a capacity provider without `architectures` is `x86_64`).
 *
 * @param options - the `managedInstances` prop
 * @param fn - the function to attach ({@link managedFunctionShape})
 */
export function managedInstancesProblems(options: ManagedInstancesOptions, fn: ManagedFunctionShape | 'imported'): string[] {
  const problems: string[] = [];
  const ratio = options.memoryGiBPerVCpu ?? MANAGED_INSTANCES_MEMORY_GIB_PER_VCPU[0];
  const ratioValid = (MANAGED_INSTANCES_MEMORY_GIB_PER_VCPU as readonly number[]).includes(ratio);
  if (!ratioValid) {
    problems.push(
      `managedInstances.memoryGiBPerVCpu ${ratio} must be one of ${MANAGED_INSTANCES_MEMORY_GIB_PER_VCPU.join(', ')} GiB per vCPU ` +
        '(AWS rule: the memory-to-vCPU ratios of Lambda Managed Instances)',
    );
  }
  const concurrency = options.perExecutionEnvironmentMaxConcurrency;
  if (concurrency !== undefined && !inRange(concurrency, PER_EXECUTION_ENVIRONMENT_MAX_CONCURRENCY)) {
    problems.push(
      `managedInstances.perExecutionEnvironmentMaxConcurrency ${concurrency} must be a whole number from ` +
        `${PER_EXECUTION_ENVIRONMENT_MAX_CONCURRENCY.min} to ${PER_EXECUTION_ENVIRONMENT_MAX_CONCURRENCY.max} (AWS rule)`,
    );
  }
  problems.push(...scalingProblems(options));

  if (fn === 'imported') {
    problems.push(
      'managedInstances needs a function the construct can configure (entry, or a lambda.Function of this app); ' +
        'existingFunction is imported: attach it to its capacity provider where it is defined, and leave managedInstances out',
    );
    return problems;
  }
  const major = /^nodejs(\d+)\.x$/.exec(fn.runtime ?? '')?.[1];
  if (fn.runtime !== undefined && (major === undefined || Number(major) < MANAGED_INSTANCES_MIN_NODE_MAJOR)) {
    problems.push(
      `the function's runtime ${fn.runtime} cannot run on Lambda Managed Instances: Node.js needs nodejs${MANAGED_INSTANCES_MIN_NODE_MAJOR}.x or later ` +
        '(AWS rule, https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-runtimes.html)',
    );
  }
  const memory = fn.memorySizeMb;
  // 1 vCPU at the ratio; an invalid ratio is reported above and not measured against.
  const oneVCpuMb = ratioValid ? ratio * 1024 : MANAGED_INSTANCES_MIN_MEMORY_MB;
  const minimum = Math.max(MANAGED_INSTANCES_MIN_MEMORY_MB, oneVCpuMb);
  if (memory !== undefined && memory < minimum) {
    problems.push(
      `the function's memory ${memory} MB is below ${minimum} MB: Lambda Managed Instances ` +
        `need at least ${MANAGED_INSTANCES_MIN_MEMORY_MB} MB and 1 vCPU (${oneVCpuMb} MB at ${ratioValid ? ratio : 2} GiB per vCPU); ` +
        'raise settings.function.memorySizeMb (AWS rule, https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-best-practices.html)',
    );
  }
  const providerArchitecture = capacityProviderArchitecture(options.capacityProvider);
  if (providerArchitecture !== undefined && fn.architecture !== undefined && providerArchitecture !== fn.architecture) {
    problems.push(
      `managedInstances.capacityProvider runs ${providerArchitecture} instances but the function is ${fn.architecture}: ` +
        `give the capacity provider architectures: [Architecture.${fn.architecture === 'arm64' ? 'ARM_64' : 'X86_64'}] ` +
        "(a capacity provider without architectures is x86_64; AWS rule: a function runs on its capacity provider's architecture)",
    );
  }
  return problems;
}

/** `minExecutionEnvironments` and `maxExecutionEnvironments` (see {@link managedInstancesProblems}). */
function scalingProblems(options: ManagedInstancesOptions): string[] {
  const problems: string[] = [];
  const { minExecutionEnvironments: min, maxExecutionEnvironments: max } = options;
  for (const [name, value] of [
    ['minExecutionEnvironments', min],
    ['maxExecutionEnvironments', max],
  ] as const) {
    if (value !== undefined && !inRange(value, EXECUTION_ENVIRONMENTS)) {
      problems.push(
        `managedInstances.${name} ${value} must be a whole number from ${EXECUTION_ENVIRONMENTS.min} to ${EXECUTION_ENVIRONMENTS.max} (AWS rule)`,
      );
    }
  }
  if (min !== undefined && max !== undefined && min > max) {
    problems.push(`managedInstances.minExecutionEnvironments ${min} is above maxExecutionEnvironments ${max}`);
  }
  return problems;
}

/**
 * The default `PerExecutionEnvironmentMaxConcurrency` of a Node.js function: 64 per vCPU, with
 * vCPUs = memory (MB) ÷ (1024 × `memoryGiBPerVCpu`) rounded down and at least 1, at most 1600.
 */
export function defaultPerExecutionEnvironmentMaxConcurrency(memorySizeMb: number, memoryGiBPerVCpu: number): number {
  const vCpus = Math.max(1, Math.floor(memorySizeMb / (1024 * memoryGiBPerVCpu)));
  return Math.min(PER_EXECUTION_ENVIRONMENT_MAX_CONCURRENCY.max, NODEJS_MAX_CONCURRENCY_PER_VCPU * vCpus);
}

/**
 * Puts `fn` on the capacity provider of `options` (checked with {@link managedInstancesProblems}
 * first): `CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig` with the
 * capacity provider's ARN, `PerExecutionEnvironmentMaxConcurrency` and
 * `ExecutionEnvironmentMemoryGiBPerVCpu` always written out; `PublishToLatestPublished: true`, so
 * every deployment publishes the `$LATEST.PUBLISHED` version that an unqualified invocation (the
 * event source mappings') runs
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-version-publishing.html);
 * `FunctionScalingConfig` when a minimum or maximum of execution environments is given. What
 * `CapacityProvider.addFunction` writes, for an imported capacity provider too.
 *
 * @returns the configuration written, defaults applied
 */
export function attachToCapacityProvider(fn: LambdaFunction, options: ManagedInstancesOptions): ManagedInstancesConfiguration {
  const cfn = fn.node.defaultChild as CfnFunction;
  const memory = typeof cfn.memorySize === 'number' ? cfn.memorySize : 128;
  const memoryGiBPerVCpu = options.memoryGiBPerVCpu ?? MANAGED_INSTANCES_MEMORY_GIB_PER_VCPU[0];
  const perExecutionEnvironmentMaxConcurrency =
    options.perExecutionEnvironmentMaxConcurrency ?? defaultPerExecutionEnvironmentMaxConcurrency(memory, memoryGiBPerVCpu);
  cfn.capacityProviderConfig = {
    lambdaManagedInstancesCapacityProviderConfig: {
      capacityProviderArn: options.capacityProvider.capacityProviderArn,
      perExecutionEnvironmentMaxConcurrency,
      executionEnvironmentMemoryGiBPerVCpu: memoryGiBPerVCpu,
    },
  };
  cfn.publishToLatestPublished = true;
  const { minExecutionEnvironments, maxExecutionEnvironments } = options;
  if (minExecutionEnvironments !== undefined || maxExecutionEnvironments !== undefined) {
    cfn.functionScalingConfig = { minExecutionEnvironments, maxExecutionEnvironments };
  }
  if (!(options.capacityProvider instanceof CapacityProvider)) {
    Annotations.of(fn).addWarningV2(
      'idempotent-consumer:imported-capacity-provider',
      `managedInstances.capacityProvider is imported: make sure its instances are ${fn.architecture.name} (architectures), ` +
        "the function's architecture; a capacity provider without architectures runs x86_64 (the construct cannot check it)",
    );
  }
  return {
    capacityProvider: options.capacityProvider,
    perExecutionEnvironmentMaxConcurrency,
    memoryGiBPerVCpu,
    vCpusPerExecutionEnvironment: Math.max(1, Math.floor(memory / (1024 * memoryGiBPerVCpu))),
    ...(minExecutionEnvironments === undefined ? {} : { minExecutionEnvironments }),
    ...(maxExecutionEnvironments === undefined ? {} : { maxExecutionEnvironments }),
  };
}
