import { readFileSync } from 'node:fs';
import { App, CfnResource, Validations, type PolicyViolation } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import type { ConsumerSettings } from '../../config/settings.js';
import { ConsumerStack, type ConsumerStackProps } from '../../lib/ConsumerStack.js';

/** The `context` of `cdk.json`, so a test synthesizes what `npx cdk synth` does. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
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
 * the function's code is then a placeholder. For tests of the stack's other resources; the
 * default-settings test keeps bundling the real handler.
 */
export const skipBundling: Record<string, unknown> = { 'aws:cdk:bundling-stacks': [] };

/** A synthesized `ConsumerStack` (bundling the handler with the local esbuild) and its template. */
export function synthConsumerStack(
  options: {
    settings?: ConsumerSettings;
    kafka?: ConsumerStackProps['kafka'];
    monitoring?: ConsumerStackProps['monitoring'];
    context?: Record<string, unknown>;
  } = {},
): { stack: ConsumerStack; template: Template } {
  const app = newApp(options.context);
  const stack = new ConsumerStack(app, 'IdempotentConsumer', {
    settings: options.settings,
    kafka: options.kafka,
    monitoring: options.monitoring,
  });
  return { stack, template: Template.fromStack(stack) };
}

/** The `Allow` statements of `template`'s IAM policies, each with the logical id of its policy. */
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
    { Properties: { PolicyDocument: { Statement: { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[] } } }
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

/** How many CloudFormation resources exist in `scope`'s tree. */
export function cfnResourceCount(scope: IConstruct): number {
  return scope.node.findAll().filter((construct) => CfnResource.isCfnResource(construct)).length;
}
