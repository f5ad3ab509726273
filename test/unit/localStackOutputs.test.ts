/**
 * A stack's outputs for a local run (`local --app … --keep-running --outputs-file F
 * --endpoints-file E`): the template's outputs resolved to the local resources, in the shape
 * `cdk deploy --outputs-file` writes, and the emulators' endpoints as `NAME=value` lines that the
 * integration suite's deployed-stack mode reads (`endpointsFromEnvironment`).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseStackOutputs, selectConsumer } from '../../packages/cli/src/stackOutputs.js';
import {
  type CfnTemplateWithOutputs,
  formatEnvFile,
  localEndpointEnvironment,
  localStackOutputs,
  writeLocalOutputFiles,
} from '../../packages/local/src/app/localStackOutputs.js';
import type { ResolveContext, ResourceValues } from '../../packages/local/src/app/stackTemplate.js';
import { endpointsFromEnvironment } from '../support/awsEndpoints.js';

const queueUrl = 'http://sqs.us-east-1.localhost:4100/000000000000/p-Shop-Queue';
const resources = new Map<string, ResourceValues>([
  ['Queue', { ref: queueUrl, attributes: { Arn: 'arn:aws:sqs:us-east-1:000000000000:p-Shop-Queue', QueueUrl: queueUrl } }],
  ['Inbox', { ref: 'p-Shop-Inbox', attributes: { Arn: 'arn:aws:dynamodb:us-east-1:000000000000:table/p-Shop-Inbox' } }],
]);
const context: ResolveContext = { stackName: 'Shop', region: 'us-east-1', accountId: '000000000000', resources };

/** The resources the run created, beside two it does not create (a log group named by the template, a dashboard not named). */
function template(outputs: CfnTemplateWithOutputs['Outputs']): CfnTemplateWithOutputs {
  return {
    Resources: {
      Queue: { Type: 'AWS::SQS::Queue' },
      Inbox: { Type: 'AWS::DynamoDB::Table' },
      Logs: { Type: 'AWS::Logs::LogGroup', Properties: { LogGroupName: '/shop/consumer' } },
      Dashboard: { Type: 'AWS::CloudWatch::Dashboard', Properties: { DashboardBody: '{}' } },
    },
    ...(outputs === undefined ? {} : { Outputs: outputs }),
  };
}

describe('localStackOutputs', () => {
  it("resolves each output to the run's local resources: a queue's Ref is its URL, GetAtt its attribute, Join and Sub as CloudFormation", () => {
    const { values, leftOut } = localStackOutputs(
      template({
        QueueUrl: { Value: { Ref: 'Queue' } },
        QueueArn: { Value: { 'Fn::GetAtt': ['Queue', 'Arn'] } },
        InboxTableName: { Value: { Ref: 'Inbox' } },
        ConsumerName: { Value: 'shop' },
        Where: { Value: { 'Fn::Sub': '${AWS::StackName} in ${AWS::Region}' } },
      }),
      context,
    );

    expect(values).toEqual({
      QueueUrl: queueUrl,
      QueueArn: 'arn:aws:sqs:us-east-1:000000000000:p-Shop-Queue',
      InboxTableName: 'p-Shop-Inbox',
      ConsumerName: 'shop',
      Where: 'Shop in us-east-1',
    });
    expect(leftOut).toEqual([]);
  });

  it('names what the run does not create as CloudFormation would, without its random suffix: its own name property, else <prefix><stack>-<id>', () => {
    const { values } = localStackOutputs(
      template({
        LogGroupName: { Value: { Ref: 'Logs' } },
        DashboardUrl: { Value: { 'Fn::Join': ['', ['https://console/#dashboards/dashboard/', { Ref: 'Dashboard' }]] } },
      }),
      context,
      'p-',
    );

    expect(values).toEqual({ LogGroupName: '/shop/consumer', DashboardUrl: 'https://console/#dashboards/dashboard/p-Shop-Dashboard' });
  });

  it('leaves out, with the reason, an output with a Condition, one that uses Fn::If, and an attribute the run has no value for', () => {
    const { values, leftOut } = localStackOutputs(
      template({
        Kept: { Value: { Ref: 'Inbox' } },
        Conditional: { Value: { Ref: 'Inbox' }, Condition: 'WithAlarms' },
        Chosen: { Value: { 'Fn::If': ['WithAlarms', 'a', 'b'] } },
        LogGroupArn: { Value: { 'Fn::GetAtt': ['Logs', 'Arn'] } },
      }),
      context,
    );

    expect(values).toEqual({ Kept: 'p-Shop-Inbox' });
    expect(leftOut.map(({ key }) => key)).toEqual(['Conditional', 'Chosen', 'LogGroupArn']);
    expect(leftOut[0]!.why).toContain('Condition WithAlarms');
    expect(leftOut[1]!.why).toContain('Fn::If is not resolved by the local run');
    expect(leftOut[2]!.why).toContain('has no attribute Arn');
  });

  it('gives a template without outputs none', () => {
    expect(localStackOutputs(template(undefined), context)).toEqual({ values: {}, leftOut: [] });
  });
});

describe('localEndpointEnvironment and formatEnvFile', () => {
  it('writes NAME=value lines that node --env-file reads back, and that the test run takes as its endpoints', () => {
    const environment = localEndpointEnvironment({
      dynamoDb: 'http://127.0.0.1:8001',
      sqs: 'http://127.0.0.1:9001',
      s3: 'http://127.0.0.1:9001',
    });
    const text = formatEnvFile(environment);

    expect(text).toContain('AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8001\n');
    expect(text).toContain('AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9001\n');
    expect(parseEnv(text)).toEqual(environment);
    expect(endpointsFromEnvironment(parseEnv(text))).toEqual({
      dynamoDbEndpoint: 'http://127.0.0.1:8001',
      sqsEndpoint: 'http://127.0.0.1:9001',
      region: 'us-east-1',
      source: 'environment',
    });
  });

  it('quotes a value a shell would split, so `set -a; . FILE` reads it whole', () => {
    expect(formatEnvFile({ A: 'two words', B: "it's" })).toBe("A='two words'\nB='it'\\''s'\n");
  });
});

describe('writeLocalOutputFiles', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-outputs-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("writes the outputs as `cdk deploy --outputs-file` does, which the command line's reader takes as the stack's consumer, and leaves no temporary file", async () => {
    const outputsFile = join(dir, 'cdk-outputs.json');
    const endpointsFile = join(dir, 'local.env');
    const outputs = { ConsumerName: 'shop', QueueUrl: queueUrl, DeadLetterQueueUrl: `${queueUrl}-dlq`, StockTableName: 'p-Shop-Stock' };

    await writeLocalOutputFiles({ outputsFile, endpointsFile }, 'Shop', outputs, { AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:9001' });

    const written = await readFile(outputsFile, 'utf8');
    expect(JSON.parse(written)).toEqual({ Shop: outputs });
    expect(written.endsWith('\n')).toBe(true);
    const consumer = selectConsumer(parseStackOutputs(JSON.parse(written), outputsFile), {}, outputsFile);
    expect(consumer).toMatchObject({ stackName: 'Shop', consumerName: 'shop', queueUrl, tables: { Stock: 'p-Shop-Stock' } });
    expect(await readFile(endpointsFile, 'utf8')).toBe('AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9001\n');
    expect((await readdir(dir)).sort()).toEqual(['cdk-outputs.json', 'local.env']);
  });

  it('fails with the file system error when the directory is gone, and writes nothing', async () => {
    const outputsFile = join(dir, 'missing', 'cdk-outputs.json');

    await expect(writeLocalOutputFiles({ outputsFile }, 'Shop', {}, {})).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(dir)).toEqual([]);
  });
});
