import { beforeAll, describe, expect, it } from 'vitest';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { withOverrides } from '../../config/settings.js';
import { InvalidSettingsError } from '../../config/validateSettings.js';
import { ConsumerStack } from '../../lib/ConsumerStack.js';
import { awsSolutionsViolations, cfnResourceCount, newApp, synthConsumerStack } from './synthConsumerStack.js';

/** Builds the stack and returns what it threw (or fails the test when it built). */
function synthError(build: (app: ReturnType<typeof newApp>) => void): { error: Error; resources: number } {
  const app = newApp();
  try {
    build(app);
  } catch (error) {
    return { error: error as Error, resources: cfnResourceCount(app) };
  }
  throw new Error('expected the stack to refuse these settings');
}

describe('synth-time validation of the settings', () => {
  it('C9: refuses function timeout 900 s with visibility timeout 900 s and batching window 5 s, naming the values and the rule', () => {
    const settings = withOverrides({
      function: { timeoutSeconds: 900, maxBatchingWindowSeconds: 5 },
      queue: { visibilityTimeoutSeconds: 900 },
    });

    const { error, resources } = synthError((app) => new ConsumerStack(app, 'C9', { settings }));

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('visibility timeout 900 s');
    expect(error.message).toContain('function timeout 900 s');
    expect(error.message).toContain('batching window 5 s');
    expect(error.message).toContain('5405 s');
    expect(error.message).toContain('visibility timeout ≥ 6 × function timeout + maximum batching window');
    expect((error as InvalidSettingsError).problems).toHaveLength(1);
    expect(resources).toBe(0);
  });

  it('refuses a visibility timeout one second below 6 × timeout + window, and only that', () => {
    const settings = withOverrides({
      function: { timeoutSeconds: 30, maxBatchingWindowSeconds: 5 },
      queue: { visibilityTimeoutSeconds: 184 },
    });

    const { error } = synthError((app) => new ConsumerStack(app, 'TooShort', { settings }));

    expect(error.message).toContain('visibility timeout 184 s is below 6 × function timeout 30 s + batching window 5 s = 185 s');
  });

  it('refuses a maxReceiveCount below 5 before creating any resource', () => {
    const settings = withOverrides({ queue: { maxReceiveCount: 3 } });

    const { error, resources } = synthError((app) => new ConsumerStack(app, 'FewReceives', { settings }));

    expect(error.message).toContain('maxReceiveCount 3');
    expect(resources).toBe(0);
  });

  it('refuses a batching window on a FIFO queue', () => {
    const settings = withOverrides({ queue: { fifo: true }, function: { maxBatchingWindowSeconds: 1 } });

    const { error } = synthError((app) => new ConsumerStack(app, 'FifoWindow', { settings }));

    expect(error.message).toContain('FIFO queue does not support a maximum batching window');
  });

  it('refuses a "fifo" context value other than true or false', () => {
    const app = newApp({ fifo: 'yes' });

    expect(() => new ConsumerStack(app, 'BadContext')).toThrow('CDK context "fifo" must be true or false');
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

describe('ConsumerStack with -c fifo=true', () => {
  let stack: ConsumerStack;
  let template: Template;

  beforeAll(() => {
    // `cdk synth -c fifo=true` passes the value as a string.
    ({ stack, template } = synthConsumerStack({ context: { fifo: 'true' } }));
  });

  it('creates a FIFO source queue without content-based deduplication (the producer sets deduplication ids)', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      ContentBasedDeduplication: false,
      QueueName: Match.stringLikeRegexp('-OrdersQueue\\.fifo$'),
      VisibilityTimeout: 180,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 5 }),
    });
  });

  it('creates a FIFO dead-letter queue', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      ContentBasedDeduplication: false,
      MaximumMessageSize: 1_048_576,
      RedrivePolicy: Match.absent(),
    });
  });

  it('tells the function the queue is FIFO', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ SOURCE_QUEUE_FIFO: 'true' }) },
    });
  });

  it('keeps the event source mapping without a batching window', () => {
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
    const fromSettings = synthConsumerStack({ settings: withOverrides({ queue: { fifo: true } }) }).template;

    expect(withoutCode(fromSettings)).toEqual(withoutCode(template));
  });
});
