/**
 * The `OutboxRelay` construct with EventBridge destinations, synthesized (bundling skipped): a bus
 * it creates or one it is given, the bus ARN in the relay's environment (which the runtime reads as
 * an EventBridge destination), `events:PutEvents` on that bus only, cdk-nag, and the FIFO refusal.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, BillingMode, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { parseDestinationTarget } from '../../packages/idempotent-consumer/src/outbox/outboxRelayConfig.js';
import { OutboxRelay, type OutboxRelayProps } from '../../packages/cdk/src/OutboxRelay.js';

function synth(props: (stack: Stack) => Partial<OutboxRelayProps>, bundle = false) {
  const app = new App({ context: bundle ? {} : { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'RelayStack', { env: { account: '123456789012', region: 'eu-west-1' } });
  const table = (id: string, partitionKey: string, stream?: StreamViewType) =>
    new Table(stack, id, {
      partitionKey: { name: partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      ...(stream === undefined ? {} : { stream }),
    });
  const relay = new OutboxRelay(stack, 'OutboxRelay', {
    consumerName: 'payments',
    inboxTable: table('Inbox', 'pk', StreamViewType.NEW_IMAGE),
    idempotencyTable: table('Idempotency', 'id'),
    destination: { create: 'eventBus' },
    ...props(stack),
  });
  return { app, stack, relay, template: Template.fromStack(stack) };
}

const arn = (stack: Stack, construct: IConstruct) => ({
  'Fn::GetAtt': [stack.getLogicalId(construct.node.defaultChild as CfnElement), 'Arn'],
});

interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
}
const putEventsStatements = (template: Template) =>
  (Object.values(template.findResources('AWS::IAM::Policy')) as { Properties: { PolicyDocument: { Statement: Statement[] } } }[])
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
    .filter((statement) => [statement.Action].flat().includes('events:PutEvents'));

describe('OutboxRelay with EventBridge', () => {
  it('creates a bus, passes its ARN as the destination and grants events:PutEvents on it only', () => {
    const { stack, relay, template } = synth(() => ({}));
    template.resourceCountIs('AWS::Events::EventBus', 1);
    const bus = relay.destinations['default']!;
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ OUTBOX_DESTINATION_DEFAULT: arn(stack, bus) }) },
    });
    const statements = putEventsStatements(template);
    expect(statements).toEqual([expect.objectContaining({ Effect: 'Allow', Action: 'events:PutEvents', Resource: arn(stack, bus) })]);
  });

  it('takes a bus it is given (also of another account, by ARN) beside other destinations, and creates none', () => {
    const busArn = 'arn:aws:events:eu-west-1:210987654321:event-bus/shared-orders';
    const { relay, template } = synth((stack) => ({
      destination: { eventBus: EventBus.fromEventBusArn(stack, 'Shared', busArn) },
      destinations: { audit: { create: 'queue', fifo: false } },
    }));
    template.resourceCountIs('AWS::Events::EventBus', 0);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ OUTBOX_DESTINATION_DEFAULT: busArn }) },
    });
    // What the relay reads at run time from that variable: the built-in EventBridge destination.
    expect(parseDestinationTarget(busArn)).toEqual({ kind: 'eventBridge', eventBusArn: busArn });
    expect(putEventsStatements(template).map((statement) => statement.Resource)).toEqual([busArn]);
    expect(Object.keys(relay.destinations).sort()).toEqual(['audit', 'default']);
  });

  it('passes the AWS Solutions checks (cdk-nag) with a created bus', () => {
    const { relay } = synth(() => ({}));
    const violations = new AwsSolutionsChecks().validateScope(relay).violations;
    expect(violations.map((violation) => violation.ruleName)).toEqual([]);
  });

  it("bundles a relay entry in a project without @aws-sdk/client-eventbridge: the client is left to the Lambda runtime's SDK", async () => {
    const project = await mkdtemp(join(tmpdir(), 'relay-project-'));
    try {
      await writeFile(join(project, 'package-lock.json'), '{}');
      // The project has esbuild (linked from this repository's), not the EventBridge client.
      await mkdir(join(project, 'node_modules', '.bin'), { recursive: true });
      await symlink(resolve('node_modules/esbuild'), join(project, 'node_modules', 'esbuild'));
      await symlink(resolve('node_modules/.bin/esbuild'), join(project, 'node_modules', '.bin', 'esbuild'));
      await writeFile(
        join(project, 'relay.ts'),
        "export const handler = async () => (await import('@aws-sdk/client-eventbridge')).EventBridgeClient.name;\n",
      );
      const { app } = synth(() => ({ entry: join(project, 'relay.ts'), depsLockFilePath: join(project, 'package-lock.json') }), true);
      const out = app.synth().directory;
      const assets = (await readdir(out)).filter((name) => name.startsWith('asset.'));
      const bundles = await Promise.all(assets.map((asset) => readFile(join(out, asset, 'index.mjs'), 'utf8').catch(() => '')));
      expect(bundles.some((code) => /import\(\s*["']@aws-sdk\/client-eventbridge["']\s*\)/.test(code))).toBe(true);
    } finally {
      await rm(project, { recursive: true, force: true });
    }
  }, 180_000);

  it('refuses a FIFO event bus', () => {
    expect(() => synth(() => ({ destination: { create: 'eventBus', fifo: true } }))).toThrow(/event bus is never FIFO/);
  });
});
