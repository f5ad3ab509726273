/**
 * A stack's outputs for a local run of its CDK app (`local --app … --keep-running --outputs-file
 * F`): the template's `Outputs` resolved against the local tables, queues, topics, buckets and
 * functions, written as `cdk deploy --outputs-file F` writes them (`{ "<StackName>": {
 * "<OutputKey>": "<value>" } }`), so what reads a deployed stack's outputs (the command line's
 * `--outputs-file`, the integration suite's `IC_OUTPUTS_FILE`) reads the local run's; and the
 * emulators' endpoints as `NAME=value` lines (`--endpoints-file`).
 *
 * @module
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { localCredentials, localRegion } from '../localClientConfig.js';
import type { CfnTemplate, ResolveContext, ResourceValues } from './stackTemplate.js';
import { NO_VALUE, resolveValue } from './stackTemplate.js';

/** One output of a template's `Outputs` section (`Export` is not read: nothing imports it locally). */
export interface CfnOutput {
  readonly Value?: unknown;
  readonly Description?: string;
  readonly Condition?: string;
}

/** A template with its `Outputs` section. */
export interface CfnTemplateWithOutputs extends CfnTemplate {
  readonly Outputs?: Readonly<Record<string, CfnOutput>>;
}

/** The outputs of a stack, resolved locally: see {@link localStackOutputs}. */
export interface LocalStackOutputs {
  /** Output key → value, in the template's order. */
  readonly values: Readonly<Record<string, string>>;
  /** The outputs left out, each with the reason (an `Fn::If`, a `Condition`, an attribute the run has no value for). */
  readonly leftOut: readonly { readonly key: string; readonly why: string }[];
}

/**
 * Resolves a template's outputs as CloudFormation would after a deployment, with the local
 * resources in place of the deployed ones (`resolveValue`): a queue's `Ref` is its local URL, a
 * table's its local name, a topic's its local ARN. A resource the run does not create (a log group,
 * a dashboard, an alarm) resolves to the name CloudFormation would give it without its random
 * suffix: its own name property (`LogGroupName` of an `AWS::Logs::LogGroup`) when the template
 * sets one, else `<prefix><stack>-<logical id>`; its other attributes have no local value. An
 * output that cannot be resolved, or has a `Condition` (conditions are not evaluated locally), is
 * left out and named in `leftOut`.
 *
 * @param prefix - the prefix of the run's local names (`provisionStack`'s). @default ''
 */
export function localStackOutputs(template: CfnTemplateWithOutputs, context: ResolveContext, prefix = ''): LocalStackOutputs {
  const resources = new Map<string, ResourceValues>();
  for (const [id, resource] of Object.entries(template.Resources ?? {})) {
    const own = context.resources.get(id);
    if (own !== undefined) {
      resources.set(id, own);
      continue;
    }
    const nameProperty = `${resource.Type.split('::')[2] ?? ''}Name`;
    const given = resource.Properties?.[nameProperty];
    resources.set(id, { ref: typeof given === 'string' ? given : `${prefix}${context.stackName}-${id}`, attributes: {} });
  }
  const values: Record<string, string> = {};
  const leftOut: { key: string; why: string }[] = [];
  for (const [key, output] of Object.entries(template.Outputs ?? {})) {
    if (output.Condition !== undefined) {
      leftOut.push({ key, why: `it has the Condition ${output.Condition}, which the local run does not evaluate` });
      continue;
    }
    try {
      const value = resolveValue(output.Value, { ...context, resources }, `the output ${key}`);
      if (value === NO_VALUE) leftOut.push({ key, why: 'its value is AWS::NoValue' });
      else values[key] = value;
    } catch (error) {
      leftOut.push({ key, why: (error as Error).message });
    }
  }
  return { values, leftOut };
}

/**
 * The environment that points AWS SDKs and the AWS CLI at a local run's emulators: the
 * service-specific endpoint variables (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SQS`, …,
 * which the SDK for JavaScript v3 reads), the region and the emulators' static credentials.
 */
export function localEndpointEnvironment(endpoints: {
  readonly dynamoDb: string;
  readonly sqs: string;
  readonly s3: string;
}): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamoDb,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: endpoints.dynamoDb,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_SNS: endpoints.sqs,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    AWS_REGION: localRegion,
    AWS_DEFAULT_REGION: localRegion,
    AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
  };
}

/**
 * `NAME=value` lines, one a line, for `node --env-file`, dotenv, or `set -a; . FILE; set +a` in a
 * POSIX shell (a value with characters a shell would read is single-quoted).
 */
export function formatEnvFile(variables: Readonly<Record<string, string>>): string {
  return Object.entries(variables)
    .map(([name, value]) => `${name}=${/^[\w@%+=:,./-]*$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`}`)
    .join('\n')
    .concat('\n');
}

/** Where {@link writeLocalOutputFiles} writes. */
export interface LocalOutputFiles {
  /** The stack outputs, as `cdk deploy --outputs-file` writes them. */
  readonly outputsFile?: string;
  /** The emulators' endpoints, region and credentials ({@link localEndpointEnvironment}), as `NAME=value` lines. */
  readonly endpointsFile?: string;
}

/**
 * Writes the endpoints file, then the outputs file (so a reader that waits for the outputs file finds
 * both), each whole or not at all: written beside its final path, then renamed over it.
 *
 * @throws the file system's error (`ENOENT`, `EACCES`, `EISDIR`) when a file cannot be written
 */
export async function writeLocalOutputFiles(
  files: LocalOutputFiles,
  stackName: string,
  outputs: Readonly<Record<string, string>>,
  environment: Readonly<Record<string, string>>,
): Promise<void> {
  if (files.endpointsFile !== undefined) await writeWhole(files.endpointsFile, formatEnvFile(environment));
  if (files.outputsFile !== undefined) await writeWhole(files.outputsFile, `${JSON.stringify({ [stackName]: outputs }, null, 2)}\n`);
}

async function writeWhole(file: string, content: string): Promise<void> {
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  try {
    await writeFile(temporary, content, 'utf8');
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
