import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deadLetters } from '../support/cafeHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { consumerEnvironment, outcomeList, sourceRecord, storedItem } from '../support/consumerHarness.js';
import { parkedIds, tally, tallyConsumer, tallyTables } from '../support/parkHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { awsClients, describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a consumer with a table of its own and parking on');

describe('parking faults', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('parkfaults', tallyTables, {
      consumerName: 'tallies',
      retry: { parkOutOfOrder: true, backoffBaseSeconds: 2 },
    });
  });
  afterAll(() => env.dispose());

  it('applies in its own invocation a parked batch message whose predecessor, a sibling of the batch, was applied on its read after parking', async () => {
    // Batch [third, second]: both wait for the first and are parked; the first commits (in another
    // environment) while they are being parked, its park read missing them. The re-decision after
    // parking applies the second (the third is decided before it, still waiting): the third's
    // predecessor is then applied by this invocation, which must apply the third too (docs/parking.md,
    // "never leave a message waiting for its wake-up when its predecessor was applied").
    const predecessorEnvironment = consumerEnvironment(env, tallyConsumer());
    const clients = awsClients();
    let raced = false;
    // Both parks wait until the predecessor has committed and read the park (empty then).
    let predecessorDone: Promise<unknown> | undefined;
    clients.dynamoDb.middlewareStack.add(
      (next, context) => async (args) => {
        const pk = (args.input as { Key?: { pk?: string | { S?: string } } }).Key?.pk;
        const key = typeof pk === 'string' ? pk : pk?.S;
        if (context.commandName === 'UpdateItemCommand' && key === 'tallies#park#SIB') {
          raced = true;
          predecessorDone ??= predecessorEnvironment.handler(
            sqsEvent(sourceRecord(env, 'm-sib-0', tally('SIB', 'sib-0', 0))),
            lambdaContext(),
          );
          expect(await predecessorDone).toEqual({ batchItemFailures: [] });
        }
        return next(args);
      },
      { step: 'initialize', name: 'commitThePredecessorFirst' },
    );
    try {
      const environment = consumerEnvironment(env, tallyConsumer(), { dynamoDb: clients.dynamoDb });
      const response = (await environment.handler(
        sqsEvent(sourceRecord(env, 'm-sib-2', tally('SIB', 'sib-2', 2)), sourceRecord(env, 'm-sib-1', tally('SIB', 'sib-1', 1))),
        lambdaContext(),
      )) as SQSBatchResponse;
      expect(raced).toBe(true);
      expect(outcomeList(predecessorEnvironment.outcomes)).toEqual(['m-sib-0:applied']);
      expect(outcomeList(environment.outcomes).sort()).toEqual(['m-sib-1:applied', 'm-sib-2:applied']);
      expect(response).toEqual({ batchItemFailures: [] });
      expect(await storedItem(env, 'tallies', { key: 'SIB' })).toMatchObject({ count: 3 });
      expect(await parkedIds(env, 'SIB')).toEqual([]);
    } finally {
      clients.destroy();
    }
  });
  it('applies in its own invocation a message taken up from the park (still waiting then) once a batch message applied on its read after parking unblocks it', async () => {
    // Z (needs 3) waits in the park. Batch [A (needs 0), B (needs 2)]: A applies (tally 1); Z, taken
    // up, and B still wait. While B is being parked, C (needs 0) commits in another environment
    // (tally 2; its park read sees Z, which still waits, and misses B). B's re-decision after
    // parking applies it (tally 3): Z's predecessor is now applied by this invocation, which read Z
    // from the park, yet Z is left for its wake-up.
    const parker = consumerEnvironment(env, tallyConsumer());
    expect(await parker.handler(sqsEvent(sourceRecord(env, 'm-tk-z', tally('TK', 'tk-z', 3))), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-tk-z' }],
    });
    expect(await parkedIds(env, 'TK')).toEqual(['m-tk-z']);
    const otherEnvironment = consumerEnvironment(env, tallyConsumer());
    const clients = awsClients();
    let otherDone: Promise<unknown> | undefined;
    clients.dynamoDb.middlewareStack.add(
      (next, context) => async (args) => {
        const pk = (args.input as { Key?: { pk?: string | { S?: string } } }).Key?.pk;
        const key = typeof pk === 'string' ? pk : pk?.S;
        if (context.commandName === 'UpdateItemCommand' && key === 'tallies#park#TK') {
          otherDone ??= otherEnvironment.handler(sqsEvent(sourceRecord(env, 'm-tk-c', tally('TK', 'tk-c', 0))), lambdaContext());
          expect(await otherDone).toEqual({ batchItemFailures: [] });
        }
        return next(args);
      },
      { step: 'initialize', name: 'commitAnotherFirst' },
    );
    try {
      const environment = consumerEnvironment(env, tallyConsumer(), { dynamoDb: clients.dynamoDb });
      const response = (await environment.handler(
        sqsEvent(sourceRecord(env, 'm-tk-a', tally('TK', 'tk-a', 0)), sourceRecord(env, 'm-tk-b', tally('TK', 'tk-b', 2))),
        lambdaContext(),
      )) as SQSBatchResponse;
      expect(otherDone).toBeDefined();
      expect(outcomeList(otherEnvironment.outcomes)).toEqual(['m-tk-c:applied']);
      expect(response).toEqual({ batchItemFailures: [] });
      expect(outcomeList(environment.outcomes).sort()).toEqual(['m-tk-a:applied', 'm-tk-b:applied', 'm-tk-z:applied']);
      expect(await storedItem(env, 'tallies', { key: 'TK' })).toMatchObject({ count: 4 });
      expect(await parkedIds(env, 'TK')).toEqual([]);
    } finally {
      clients.destroy();
    }
  });
  it('dead-letters once a parked message dead-lettered from the park while its wake-up receive is under way', async () => {
    // M (needs 1, valid below 1) is parked with the receipt handle of its first receive. Its
    // wake-up comes: received again (a new receipt handle), handed to an invocation W. Meanwhile
    // invocation X applies its predecessor and takes M up from the park: a BusinessRuleViolation
    // on the new state. Dead-lettered from there and deleted with the parked, older receipt
    // handle, it would be sent a second time by W; so X leaves it to its own receive (out of the
    // park), and W dead-letters it once.
    const environment = consumerEnvironment(env, tallyConsumer());
    const first = sourceRecord(env, 'm-dl-1', tally('DL', 'dl-1', 1, { below: 1 }));
    expect(await environment.handler(sqsEvent(first), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-dl-1' }] });
    expect(await parkedIds(env, 'DL')).toEqual(['m-dl-1']);
    const wakeUp = {
      ...first,
      receiptHandle: `${first.receiptHandle}-2`,
      attributes: { ...first.attributes, ApproximateReceiveCount: '2' },
    };

    const other = consumerEnvironment(env, tallyConsumer());
    await other.handler(sqsEvent(sourceRecord(env, 'm-dl-0', tally('DL', 'dl-0', 0))), lambdaContext());
    expect(outcomeList(other.outcomes)).toEqual(['m-dl-0:applied']);
    expect(await parkedIds(env, 'DL')).toEqual([]);

    environment.outcomes.length = 0;
    expect(await environment.handler(sqsEvent(wakeUp), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(environment.outcomes).toMatchObject([{ messageId: 'm-dl-1', outcome: 'dead-lettered', reason: 'BusinessRuleViolation' }]);
    const copies = (await deadLetters(env)).filter((message) => deadLetterAttribute(message, 'originalMessageId') === 'm-dl-1');
    expect(copies).toHaveLength(1);
  });
});
