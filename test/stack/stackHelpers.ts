import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { App, CfnResource, Stack, Validations, type CfnElement, type PolicyViolation } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { CafeStack, type CafeStackProps } from '../../examples/cafe/infra/CafeStack.js';
import { IdempotentConsumer, type IdempotentConsumerProps } from '../../packages/cdk/src/IdempotentConsumer.js';

/** The small handler the generic construct's tests deploy (it imports the package by name). */
export const fixtureEntry = fileURLToPath(new URL('./fixtures/handler.ts', import.meta.url));

/** Bundling options a handler inside this repository needs (it imports the package by name from its sources). */
export const sourceBundling = { esbuildArgs: { '--conditions': '@idempotent-consumer/source' } } as const;

/** The `context` of `cdk.json`, so a test synthesizes what `npx cdk synth` does. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL('../../examples/cafe/cdk.json', import.meta.url), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  return cdkJson.context ?? {};
}

/** A new app with `cdk.json`'s context plus `context` (as `-c key=value` would add it). */
export function newApp(context: Record<string, unknown> = {}): App {
  return new App({ context: { ...cdkJsonContext(), ...context } });
}

/**
 * CDK context that skips asset bundling for every stack (`aws:cdk:bundling-stacks` = none):
 * the function's code is then a placeholder. For tests of the other resources; one test bundles.
 */
export const skipBundling: Record<string, unknown> = { 'aws:cdk:bundling-stacks': [] };

/** A synthesized café stack (bundling skipped unless `bundle`) and its template. */
export function synthCafeStack(options: { props?: CafeStackProps; context?: Record<string, unknown>; bundle?: boolean } = {}): {
  stack: CafeStack;
  template: Template;
} {
  const app = newApp({ ...(options.bundle === true ? {} : skipBundling), ...options.context });
  const stack = new CafeStack(app, 'CafeOrders', options.props);
  return { stack, template: Template.fromStack(stack) };
}

/**
 * A stack holding one generic {@link IdempotentConsumer} (id `Consumer`) for the fixture handler
 * (bundling skipped unless `bundle`), and its template. `extra` adds resources before the
 * consumer (business tables, an existing queue) and returns props to merge; `after` adds
 * resources after it.
 */
export function synthConsumer(
  options: {
    props?: Partial<IdempotentConsumerProps>;
    extra?: (stack: Stack) => Partial<IdempotentConsumerProps>;
    /** Adds resources after the consumer (monitoring), before the template is made. */
    after?: (stack: Stack, consumer: IdempotentConsumer) => void;
    context?: Record<string, unknown>;
    bundle?: boolean;
  } = {},
): { stack: Stack; consumer: IdempotentConsumer; template: Template } {
  const app = newApp({ ...(options.bundle === true ? {} : skipBundling), ...options.context });
  const stack = new Stack(app, 'Generic');
  const extra = options.extra?.(stack) ?? {};
  const props: IdempotentConsumerProps = { ...options.props, ...extra };
  const usesFunction = props.existingFunction !== undefined;
  const consumer = new IdempotentConsumer(stack, 'Consumer', {
    ...(usesFunction ? {} : { entry: fixtureEntry, bundling: sourceBundling }),
    ...props,
  });
  options.after?.(stack, consumer);
  return { stack, consumer, template: Template.fromStack(stack) };
}

/** `{ Ref: <logical id> }` of a construct's CloudFormation resource. */
export function refOf(construct: IConstruct): { Ref: string } {
  return { Ref: Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnElement) };
}

/** `{ Fn::GetAtt: [<logical id>, 'Arn'] }` of a construct's CloudFormation resource. */
export function arnOf(construct: IConstruct): { 'Fn::GetAtt': [string, string] } {
  return { 'Fn::GetAtt': [Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnElement), 'Arn'] };
}

/** An `Allow` statement of the template's IAM policies, with the logical id of its policy. */
export interface AllowStatement {
  readonly policy: string;
  readonly actions: string[];
  readonly resources: unknown[];
  readonly condition?: unknown;
}

/** Every `Allow` statement of the template's `AWS::IAM::Policy` resources, actions and resources as arrays. */
export function allowStatements(template: Template): AllowStatement[] {
  const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
  const policies = template.findResources('AWS::IAM::Policy') as Record<
    string,
    {
      Properties: {
        PolicyDocument: { Statement: { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[] };
      };
    }
  >;
  return Object.entries(policies).flatMap(([policy, resource]) =>
    resource.Properties.PolicyDocument.Statement.filter((statement) => statement.Effect === 'Allow').map((statement) => ({
      policy,
      actions: asArray(statement.Action),
      resources: asArray(statement.Resource),
      condition: statement.Condition,
    })),
  );
}

/** The resources on which `action` is allowed, across the template's policies. */
export function resourcesAllowing(template: Template, action: string): unknown[] {
  return allowStatements(template)
    .filter((statement) => statement.actions.includes(action))
    .flatMap((statement) => statement.resources);
}

/** Every action allowed on `resource` (compared as JSON), across the template's policies, sorted and unique. */
export function actionsOn(template: Template, resource: unknown): string[] {
  const wanted = JSON.stringify(resource);
  const actions = allowStatements(template)
    .filter((statement) => statement.resources.some((r) => JSON.stringify(r) === wanted))
    .flatMap((statement) => statement.actions);
  return [...new Set(actions)].sort();
}

/** Every action allowed anywhere in the template's policies. */
export function allAllowedActions(template: Template): string[] {
  return [...new Set(allowStatements(template).flatMap((statement) => statement.actions))].sort();
}

/** The cdk-nag AWS Solutions findings that are not acknowledged (errors and warnings alike). */
export function awsSolutionsViolations(scope: IConstruct): PolicyViolation[] {
  return new AwsSolutionsChecks().validateScope(scope).violations;
}

/** Every rule acknowledged in `scope`'s tree, as rule id → reason (ids without CDK's `Annotation::` prefix). */
export function acknowledgedRules(scope: IConstruct): Map<string, string> {
  const rules = new Map<string, string>();
  for (const construct of scope.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        rules.set(id.replace(/^annotation::/i, ''), reason);
      }
    }
  }
  return rules;
}

/** The exact action lists the engine needs (issue 8, item 8), written out here on purpose, sorted. */
export const BUSINESS_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
];
/** The inbox's actions: the business ones without DeleteItem. */
export const INBOX_ACTIONS = BUSINESS_ACTIONS.filter((action) => action !== 'dynamodb:DeleteItem');
/** Powertools idempotency's actions. */
export const IDEMPOTENCY_ACTIONS = ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];
/** The actions on a table's customer managed key (through DynamoDB only). */
export const TABLE_KEY_ACTIONS = [
  'kms:Decrypt',
  'kms:DescribeKey',
  'kms:Encrypt',
  'kms:GenerateDataKey',
  'kms:GenerateDataKeyWithoutPlaintext',
  'kms:ReEncryptFrom',
  'kms:ReEncryptTo',
];

/** The rules the consumer acknowledges for cdk-nag (runtime, payload bucket logs, payload objects). */
export const CONSUMER_ACKNOWLEDGED_RULES = [
  // xray:PutTraceSegments and xray:PutTelemetryRecords of active tracing, in a policy of their own.
  'AwsSolutions-IAM5[Resource::*]',
  'AwsSolutions-IAM5[Resource::<ConsumerPayloadBucketBF61D0D3.Arn>/*]',
  'AwsSolutions-L1',
  'AwsSolutions-S1',
] as const;

/** What the outbox relay acknowledges beside the consumer's (dynamodb:ListStreams on *, its on-failure queue has no DLQ of its own). */
export const RELAY_ACKNOWLEDGED_RULES = ['AwsSolutions-IAM5[Resource::*]', 'AwsSolutions-SQS3'] as const;

/** The rule ids acknowledged in `scope`'s tree, sorted, after checking that each has a reason of some length. */
export function acknowledgedRuleIds(scope: IConstruct): string[] {
  const rules = acknowledgedRules(scope);
  for (const [id, reason] of rules) {
    if (reason.length <= 80) throw new Error(`rule ${id} is acknowledged with a reason of ${reason.length} characters: say why`);
  }
  return [...rules.keys()].sort();
}

/** How many CloudFormation resources exist in `scope`'s tree. */
export function cfnResourceCount(scope: IConstruct): number {
  return scope.node.findAll().filter((construct) => CfnResource.isCfnResource(construct)).length;
}

/** Runs `build`, which must throw; returns the error and how many CloudFormation resources `app` then holds. */
export function refusal(app: App, build: (app: App) => void): { error: Error; resources: number } {
  try {
    build(app);
  } catch (error) {
    return { error: error as Error, resources: cfnResourceCount(app) };
  }
  throw new Error('expected the construct to refuse its input');
}
