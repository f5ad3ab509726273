import { beforeAll, describe, expect, it } from 'vitest';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { CafeStack } from '../../examples/cafe/infra/CafeStack.js';
import { cafeSettings } from '../../examples/cafe/settings.js';
import { awsSolutionsViolations, newApp, refusal, skipBundling, synthCafeStack } from './stackHelpers.js';

/** Builds a café stack that must refuse its input; returns the error. */
function refused(props: ConstructorParameters<typeof CafeStack>[2], context: Record<string, unknown> = {}): Error {
  return refusal(newApp({ ...skipBundling, ...context }), (app) => new CafeStack(app, 'Refused', props)).error;
}

describe('synth-time validation of the settings', () => {
  it('C9: refuses function timeout 900 s with visibility timeout 900 s and batching window 5 s, naming the values and the rule', () => {
    const settings = withOverrides(
      { function: { timeoutSeconds: 900, maxBatchingWindowSeconds: 5 }, queue: { visibilityTimeoutSeconds: 900 } },
      cafeSettings,
    );

    const error = refused({ settings });

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('visibility timeout 900 s');
    expect(error.message).toContain('function timeout 900 s');
    expect(error.message).toContain('batching window 5 s');
    expect(error.message).toContain('5405 s');
    expect(error.message).toContain('visibility timeout ≥ 6 × function timeout + maximum batching window');
    expect((error as InvalidSettingsError).problems).toHaveLength(1);
  });

  it('refuses a visibility timeout one second below 6 × timeout + window, and only that', () => {
    const settings = withOverrides({
      function: { timeoutSeconds: 30, maxBatchingWindowSeconds: 5 },
      queue: { visibilityTimeoutSeconds: 184 },
    });

    expect(refused({ settings }).message).toContain(
      'visibility timeout 184 s is below 6 × function timeout 30 s + batching window 5 s = 185 s',
    );
  });

  it('refuses a maxReceiveCount below 5, and one below maxAttempts + 5', () => {
    expect(refused({ settings: withOverrides({ queue: { maxReceiveCount: 3 } }) }).message).toContain(
      'maxReceiveCount 3 must be an integer from 5 to 1000',
    );
    expect(refused({ settings: withOverrides({ queue: { maxReceiveCount: 9 } }) }).message).toContain('maxReceiveCount 9 is below 10');
  });

  it('refuses a batching window on a FIFO queue', () => {
    const settings = withOverrides({ queue: { fifo: true }, function: { maxBatchingWindowSeconds: 1 } });

    expect(refused({ settings }).message).toContain('FIFO queue does not support a maximum batching window');
  });

  it('refuses a "fifo" context value other than true or false', () => {
    expect(refused({}, { fifo: 'yes' }).message).toContain(
      'CDK context "fifo" must be true or false (for example -c fifo=true), got "yes"',
    );
  });
});

/** The template without the function's code location (its hash follows the handler's source). */
function withoutCode(template: Template): unknown {
  const json = structuredClone(template.toJSON()) as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
  for (const resource of Object.values(json.Resources)) {
    if (resource.Type === 'AWS::Lambda::Function') delete resource.Properties.Code;
  }
  return json;
}

describe('CafeStack with -c fifo=true', () => {
  let stack: CafeStack;
  let template: Template;

  beforeAll(() => {
    // `cdk synth -c fifo=true` passes the value as a string.
    ({ stack, template } = synthCafeStack({ context: { fifo: 'true' } }));
  });

  it('creates a FIFO source queue without content-based deduplication, redriving after maxAttempts × batchSize + 5 receives', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      ContentBasedDeduplication: false,
      QueueName: Match.stringLikeRegexp('^CafeOrders-Consumer-[0-9A-F]{8}-Queue\\.fifo$'),
      VisibilityTimeout: 180,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 55 }),
    });
  });

  it('creates a FIFO dead-letter queue', () => {
    template.hasResourceProperties('AWS::SQS::Queue', { FifoQueue: true, MaximumMessageSize: 1_048_576, RedrivePolicy: Match.absent() });
  });

  it('tells the function the queue is FIFO, and keeps the mapping without a batching window', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ SOURCE_QUEUE_FIFO: 'true' }) },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: Match.absent(),
    });
  });

  it('reports no cdk-nag AWS Solutions finding that is not acknowledged', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });

  it('builds the same FIFO stack from settings as from context', () => {
    const fromSettings = synthCafeStack({ props: { settings: withOverrides({ queue: { fifo: true } }, cafeSettings) } }).template;

    expect(withoutCode(fromSettings)).toEqual(withoutCode(template));
  });
});
