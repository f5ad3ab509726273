/**
 * X-Ray tracing of a function the constructs create, with its permission in a policy of
 * its own, so the acknowledgement of its `Resource::*` covers these two actions and nothing else.
 *
 * @module
 */
import { Validations } from 'aws-cdk-lib';
import { type IRole, Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type CfnFunction, type Function as LambdaFunction, Tracing } from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

/**
 * Sets the X-Ray tracing of `fn` (`tracing`, `Tracing.ACTIVE` when `undefined`; create `fn`
 * without `tracing`). `DISABLED` sets `POWERTOOLS_TRACE_ENABLED=false`, Powertools Tracer's own
 * switch (https://docs.powertools.aws.dev/lambda/typescript/latest/core/tracer/). For `ACTIVE`
 * and `PASS_THROUGH`, its role `role` gets
 * `xray:PutTraceSegments` and `xray:PutTelemetryRecords` in a policy of its own (`<id>`), on `*`:
 * X-Ray has no resource-level permissions for them
 * (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsx-ray.html).
 * What Lambda's `AWSXRayDaemonWriteAccess` grants, without its sampling-rule reads.
 */
export function configureTracing(scope: Construct, id: string, fn: LambdaFunction, role: IRole, tracing: Tracing | undefined): void {
  const mode = tracing ?? Tracing.ACTIVE;
  if (mode === Tracing.DISABLED) {
    // Powertools' own switch: its Tracer records nothing, and a handler can skip loading it.
    fn.addEnvironment('POWERTOOLS_TRACE_ENABLED', 'false');
    return;
  }
  const policy = new Policy(scope, id, {
    roles: [role],
    statements: [new PolicyStatement({ actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], resources: ['*'] })],
  });
  fn.node.addDependency(policy);
  (fn.node.defaultChild as CfnFunction).tracingConfig = { mode };
  Validations.of(policy).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions ' +
      '(https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsx-ray.html); this policy holds only them.',
  });
}
