/**
 * X-Ray tracing of the functions the constructs create (issue 18, scope 4): active by default on
 * the consumer and on its outbox relay, a `tracing` prop for each, the two X-Ray actions in a
 * policy of their own (its `Resource::*` acknowledged there and nowhere else for them), and no
 * cdk-nag finding left.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { Tracing } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { awsSolutionsViolations, synthCafeStack, synthConsumer } from './stackHelpers.js';

const XRAY_ACTIONS = ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'];

/** Every IAM policy statement of the template that grants an X-Ray action, with its policy's logical id. */
function xrayStatements(template: Template): { policy: string; actions: string[]; resource: unknown }[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<
    string,
    { Properties: { PolicyDocument: { Statement: unknown[] } } }
  >;
  return Object.entries(policies).flatMap(([policy, resource]) =>
    resource.Properties.PolicyDocument.Statement.flatMap((statement) => {
      const { Action, Resource } = statement as { Action: string | string[]; Resource: unknown };
      const actions = [Action].flat();
      return actions.some((action) => action.startsWith('xray:')) ? [{ policy, actions, resource: Resource }] : [];
    }),
  );
}

/** The tracing mode of each function of the template, by logical id (`undefined`: none). */
function tracingModes(template: Template): Record<string, string | undefined> {
  const functions = template.findResources('AWS::Lambda::Function') as Record<string, { Properties: { TracingConfig?: { Mode: string } } }>;
  return Object.fromEntries(Object.entries(functions).map(([id, fn]) => [id, fn.Properties.TracingConfig?.Mode]));
}

/** `POWERTOOLS_TRACE_ENABLED` of each function of the template, by logical id. */
function traceSwitches(template: Template): Record<string, string | undefined> {
  const functions = template.findResources('AWS::Lambda::Function') as Record<
    string,
    { Properties: { Environment?: { Variables?: Record<string, string> } } }
  >;
  return Object.fromEntries(
    Object.entries(functions).map(([id, fn]) => [id, fn.Properties.Environment?.Variables?.POWERTOOLS_TRACE_ENABLED]),
  );
}

describe('tracing of the functions the constructs create', () => {
  it('traces the café consumer and its outbox relay actively by default, with the X-Ray actions in policies of their own, cdk-nag clean', () => {
    const { stack, template } = synthCafeStack();

    const modes = Object.values(tracingModes(template));
    expect(modes).toEqual(['Active', 'Active']);
    const statements = xrayStatements(template);
    expect(statements).toHaveLength(2);
    for (const statement of statements) {
      expect(statement.actions.sort()).toEqual([...XRAY_ACTIONS].sort());
      expect(statement.resource).toBe('*');
      expect(statement.policy).toMatch(/TracingPolicy/);
    }
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('passes PASS_THROUGH on, and grants no X-Ray action when tracing is DISABLED', () => {
    const passThrough = synthConsumer({ props: { tracing: Tracing.PASS_THROUGH } });
    expect(Object.values(tracingModes(passThrough.template))).toEqual(['PassThrough']);
    expect(xrayStatements(passThrough.template)).toHaveLength(1);
    expect(awsSolutionsViolations(passThrough.stack)).toEqual([]);

    const disabled = synthConsumer({ props: { tracing: Tracing.DISABLED } });
    expect(Object.values(tracingModes(disabled.template))).toEqual([undefined]);
    expect(xrayStatements(disabled.template)).toEqual([]);
    // Powertools' switch, which the café's handler also reads to skip loading its Tracer.
    expect(Object.values(traceSwitches(disabled.template))).toEqual(['false']);
    expect(Object.values(traceSwitches(passThrough.template))).toEqual([undefined]);
  });

  it("gives the outbox relay the consumer's tracing unless outbox.tracing says otherwise", () => {
    const outbox = { destination: { create: 'topic' as const } };
    const inherited = synthConsumer({ props: { tracing: Tracing.DISABLED, outbox } });
    expect(Object.values(tracingModes(inherited.template))).toEqual([undefined, undefined]);

    const own = synthConsumer({ props: { tracing: Tracing.DISABLED, outbox: { ...outbox, tracing: Tracing.ACTIVE } } });
    const modes = tracingModes(own.template);
    expect(
      Object.entries(modes)
        .filter(([, mode]) => mode === 'Active')
        .map(([id]) => id),
    ).toEqual([expect.stringMatching(/OutboxRelay/)]);
    expect(awsSolutionsViolations(own.stack)).toEqual([]);
  });
});
