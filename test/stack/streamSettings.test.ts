/**
 * The stream mappings read `settings.stream` as the local shard log does (issue 20, scope 3: filter
 * criteria on every mapping the constructs create): the batch size and the filter criteria, checked
 * at synth against the source's keys.
 */
import { App, Stack } from 'aws-cdk-lib';
import { AttributeType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { describe, expect, it } from 'vitest';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError, settingsProblems } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { IdempotentConsumer } from '../../packages/cdk/src/IdempotentConsumer.js';
import { fixtureEntry, skipBundling, sourceBundling, synthConsumer } from './stackHelpers.js';

function mappingOf(template: ReturnType<typeof synthConsumer>['template']): Record<string, unknown> {
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as { Properties: Record<string, unknown> }[];
  const stream = mappings.filter((m) => m.Properties.StartingPosition !== undefined && m.Properties.ParallelizationFactor !== undefined);
  expect(stream).toHaveLength(1);
  return stream[0]!.Properties;
}

describe('stream mappings from settings.stream', () => {
  it('takes the batch size and the filter criteria of settings.stream (Kinesis on data)', () => {
    const settings = withOverrides({ stream: { batchSize: 50, filters: [{ data: { type: ['OrderPaid'] } }] } });
    const { template } = synthConsumer({ props: { settings, kinesis: {} } });
    const mapping = mappingOf(template);
    expect(mapping.BatchSize).toBe(50);
    expect(mapping.FilterCriteria).toEqual({ Filters: [{ Pattern: JSON.stringify({ data: { type: ['OrderPaid'] } }) }] });
    // The retries leave room for the attempts at that batch size: 5 × 50 − 1 + 5.
    expect(mapping.MaximumRetryAttempts).toBe(254);
  });

  it('filters a DynamoDB stream on the record fields, and has no filter without settings', () => {
    const settings = withOverrides({ stream: { filters: [{ eventName: ['INSERT', 'MODIFY'] }] } });
    const withFilter = synthConsumer({
      props: { settings },
      extra: (stack) => ({
        dynamoDbStream: {
          table: new Table(stack, 'Events', { partitionKey: { name: 'id', type: AttributeType.STRING }, stream: StreamViewType.NEW_IMAGE }),
        },
      }),
    });
    expect(mappingOf(withFilter.template).FilterCriteria).toEqual({ Filters: [{ Pattern: '{"eventName":["INSERT","MODIFY"]}' }] });
    expect(mappingOf(synthConsumer({ props: { kinesis: {} } }).template).FilterCriteria).toBeUndefined();
  });

  it("refuses at synth a pattern on another source's key, and a batch size given twice that disagrees", () => {
    const refusal = (build: (stack: Stack) => void): string => {
      const app = new App({ context: skipBundling });
      const stack = new Stack(app, 'Refused');
      try {
        build(stack);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidSettingsError);
        return (error as Error).message;
      }
      throw new Error('not refused');
    };
    const onEventName = withOverrides({ stream: { filters: [{ eventName: ['INSERT'] }] } });
    expect(
      refusal(
        (stack) =>
          new IdempotentConsumer(stack, 'C', { entry: fixtureEntry, bundling: sourceBundling, settings: onEventName, kinesis: {} }),
      ),
    ).toMatch(/stream\.filters\[0\] filters on "eventName": a Kinesis event source mapping filters only on the "data" key \(AWS rule\)/);
    const sized = withOverrides({ stream: { batchSize: 50 } });
    expect(
      refusal(
        (stack) =>
          new IdempotentConsumer(stack, 'C', {
            entry: fixtureEntry,
            bundling: sourceBundling,
            settings: sized,
            kinesis: { batchSize: 20 },
          }),
      ),
    ).toMatch(/Kinesis batch size 20 differs from settings\.stream\.batchSize 50/);
  });

  it('checks settings.stream at the settings level: either source keys, the grammar, the batch size range', () => {
    expect(settingsProblems(withOverrides({ stream: { filters: [{ data: ['x'] }, { eventName: ['INSERT'] }] } }))).toEqual([]);
    expect(settingsProblems(withOverrides({ stream: { filters: [{ body: ['x'] }] } })).join('\n')).toMatch(
      /stream\.filters\[0\] filters on "body": a Kinesis or DynamoDB Streams event source mapping filters only on the keys "data", "eventID"/,
    );
    expect(settingsProblems(withOverrides({ stream: { batchSize: 0 } })).join('\n')).toMatch(
      /stream\.batchSize 0 must be an integer from 1 to 10000/,
    );
  });
});
