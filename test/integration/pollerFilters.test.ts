import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, expect, it } from 'vitest';
import type { SettingsOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { UnsupportedFilterRuleError } from '../../packages/local/src/matchesFilterPattern.js';
import {
  type FilteredOutReport,
  type InvocationReport,
  pollerOptionsFromSettings,
  SqsEventSourcePoller,
} from '../../packages/local/src/sqsEventSourcePoller.js';
import { receiveAll, sendMessages } from '../support/sqsMessages.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "sends to the source queue and consumes it with a local event source mapping: the deployed function's mapping would take the messages",
);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function queue(name: string, overrides: SettingsOverrides): Promise<TestResources> {
  const env = await testResources(name, {}, overrides);
  cleanups.push(() => env.dispose());
  return env;
}

async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages) +
    Number(Attributes.ApproximateNumberOfMessagesNotVisible) +
    Number(Attributes.ApproximateNumberOfMessagesDelayed)
  );
}

describe('SqsEventSourcePoller with filter criteria (function.filters)', () => {
  it('deletes the messages no filter matches without invoking, and invokes with the others', async () => {
    // Arrange: only OrderPaid events, and plain-string bodies are dropped by a field pattern.
    const env = await queue('filters', {
      function: { filters: [{ body: { type: ['OrderPaid'] } }] },
      queue: { visibilityTimeoutSeconds: 180 },
    });
    const bodies = ['{"type":"OrderPlaced","id":1}', '{"type":"OrderPaid","id":2}', 'not json', '{"type":"OrderPaid","id":3}'];
    const ids = await sendMessages(env.sqs, env.resources.queueUrl, bodies);
    const seen: SQSRecord[] = [];
    const reports: InvocationReport[] = [];
    const filtered: FilteredOutReport[] = [];
    const poller = new SqsEventSourcePoller({
      sqs: env.sqs,
      queueUrl: env.resources.queueUrl,
      queueArn: env.resources.queueArn,
      createHandler: () => (event) => {
        seen.push(...event.Records);
        return { batchItemFailures: [] };
      },
      ...pollerOptionsFromSettings(env.settings),
      concurrency: 1,
      onInvocation: (report) => reports.push(report),
      onFilteredOut: (report) => filtered.push(report),
    });
    cleanups.push(() => poller.stop());

    // Act
    await poller.runUntilIdle({ idleMs: 300, timeoutMs: 30_000 });

    // Assert: the handler saw the two OrderPaid messages; the others were deleted, not left to the redrive policy.
    expect(seen.map((record) => record.body).sort()).toEqual([bodies[1], bodies[3]].sort());
    const dropped = filtered.flatMap((report) => report.messageIds);
    expect(dropped.sort()).toEqual([ids[0], ids[2]].sort());
    expect(filtered.flatMap((report) => report.deletedIds).sort()).toEqual([ids[0], ids[2]].sort());
    expect(reports.flatMap((report) => report.messageIds)).not.toContain(ids[0]);
    expect(await queueDepth(env.sqs, env.resources.queueUrl)).toBe(0);
    expect(await receiveAll(env.sqs, env.resources.deadLetterQueueUrl, 0)).toEqual([]);
  });

  it('refuses, at construction, a filter Lambda would refuse', async () => {
    const env = await queue('filters-bad', {});
    expect(
      () =>
        new SqsEventSourcePoller({
          sqs: env.sqs,
          queueUrl: env.resources.queueUrl,
          queueArn: env.resources.queueArn,
          createHandler: () => () => ({ batchItemFailures: [] }),
          filters: [{ body: { type: [{ wildcard: 'Order*' }] } } as never],
        }),
    ).toThrow(UnsupportedFilterRuleError);
  });
});
