import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cafeResources,
  executionEnvironment,
  ledgerOf,
  notificationsOf,
  orderState,
  queueRecord,
  inboxItems,
} from '../support/cafeHarness.js';
import { body, lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import type { TestResources } from '../support/testResources.js';

describe('engine smoke', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('smoke');
  });
  afterAll(() => env.dispose());

  // Ids of this run's own (env.prefix is unique per call), so the test also runs against a
  // shared deployed stack (IC_OUTPUTS_FILE), where other tests and earlier runs left their items.
  it('applies a placed and a paid event of one order in one batch', async () => {
    const id = (name: string): string => `${env.prefix}${name}`;
    const { handler, outcomes } = executionEnvironment(env);
    const response = await handler(
      sqsEvent(
        queueRecord(env, id('m-1'), body.placed(id('e-1'), id('O-1'))),
        queueRecord(env, id('m-2'), body.paid(id('e-2'), id('O-1'), 10)),
      ),
      lambdaContext(),
    );
    console.log(JSON.stringify(outcomes.map((o) => [o.messageId, o.outcome, o.errorType, o.errorMessage])));
    expect(response).toEqual({ batchItemFailures: [] });
    expect((await orderState(env, id('O-1')))?.status).toBe('Paid');
    expect(await ledgerOf(env, id('O-1'))).toHaveLength(1);
    expect(await notificationsOf(env, id('O-1'))).toHaveLength(1);
    expect((await inboxItems(env, 'outbox')).filter((item) => JSON.stringify(item).includes(id('O-1')))).toHaveLength(1);
    const again = await handler(
      sqsEvent(queueRecord(env, id('m-1'), body.placed(id('e-1'), id('O-1')), { receiveCount: 2 })),
      lambdaContext(),
    );
    expect(again).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => [o.messageId, o.outcome])).toEqual([
      [id('m-1'), 'applied'],
      [id('m-2'), 'applied'],
      [id('m-1'), 'duplicate'],
    ]);
  });
});
