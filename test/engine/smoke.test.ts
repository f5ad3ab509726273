import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cafeResources, executionEnvironment, ledgerOf, notificationsOf, orderState, queueRecord, inboxItems } from '../support/cafeHarness.js';
import { body, lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import type { TestResources } from '../support/testResources.js';

describe('engine smoke', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('smoke');
  });
  afterAll(() => env.dispose());

  it('applies a placed and a paid event of one order in one batch', async () => {
    const { handler, outcomes } = executionEnvironment(env);
    const response = await handler(sqsEvent(queueRecord(env, 'm-1', body.placed('e-1', 'O-1')), queueRecord(env, 'm-2', body.paid('e-2', 'O-1', 10))), lambdaContext());
    console.log(JSON.stringify(outcomes.map((o) => [o.messageId, o.outcome, o.errorType, o.errorMessage])));
    expect(response).toEqual({ batchItemFailures: [] });
    expect((await orderState(env, 'O-1'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
    expect(await inboxItems(env, 'outbox')).toHaveLength(1);
    const again = await handler(sqsEvent(queueRecord(env, 'm-1', body.placed('e-1', 'O-1'), { receiveCount: 2 })), lambdaContext());
    expect(again).toEqual({ batchItemFailures: [] });
    console.log(JSON.stringify(outcomes.map((o) => [o.messageId, o.outcome, o.errorType, o.errorMessage])));
  });
});
