/**
 * The Kafka retry policy (`kafka.retry`) in the synthesized stack: the function's environment
 * carries it to the handler, "until it succeeds" gives the mapping its 10,000 retries, and a delay
 * that does not fit in the function timeout is refused at synth.
 */
import { describe, expect, it } from 'vitest';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { newApp, refusal, skipBundling, synthConsumer } from './stackHelpers.js';
import { Stack } from 'aws-cdk-lib';
import { IdempotentConsumer } from '../../packages/cdk/src/IdempotentConsumer.js';

const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';
const kafkaConnectWay = withOverrides({
  function: { timeoutSeconds: 120 },
  queue: { visibilityTimeoutSeconds: 720 },
  kafka: { retry: { delaySeconds: 30, untilSuccess: true } },
});

describe('IdempotentConsumer with a Kafka retry policy', () => {
  it('passes the policy to the function and gives the mapping 10000 retries, no record age limit, an on-failure destination', () => {
    const { template } = synthConsumer({ props: { settings: kafkaConnectWay, kafka: { clusterArn } } });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { KAFKA_RETRY_DELAY_SECONDS: '30', KAFKA_RETRY_UNTIL_SUCCESS: 'true' } },
    });
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).filter(
      (resource) => (resource as { Properties: { Topics?: unknown } }).Properties.Topics !== undefined,
    ) as { Properties: Record<string, unknown> }[];
    expect(mappings).toHaveLength(1);
    expect(mappings[0]!.Properties).toMatchObject({ MaximumRetryAttempts: 10_000, MaximumRecordAgeInSeconds: -1 });
    expect(mappings[0]!.Properties.DestinationConfig).toBeDefined();
  });

  it('refuses a delay that does not fit in the function timeout, naming the timeout it needs', () => {
    const { error } = refusal(newApp(skipBundling), (app) => {
      const stack = new Stack(app, 'Refused');
      new IdempotentConsumer(stack, 'Consumer', {
        entry: 'unused.ts',
        settings: withOverrides({ kafka: { retry: { delaySeconds: 30 } } }),
        kafka: { clusterArn },
      });
    });
    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('must stay below the function timeout 30 s');
    expect(error.message).toContain('a function timeout of at least 36 s');
  });
});
