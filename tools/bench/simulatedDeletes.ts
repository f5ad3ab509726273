/**
 * The consumer's deletes of messages of the simulated queue, answered by that queue: the engine
 * deletes a parked message it settled outside its batch with the receipt handle the park kept
 * (`DeleteMessageBatch`, docs/parking.md), and those handles are the simulated queue's
 * (`bench-…`), which the SQS server does not know. A middleware on the consumer's SQS client
 * answers such a `DeleteMessageBatch` or `DeleteMessage` from the simulated queues being drained,
 * without sending it; the request is still counted by the client's {@link RequestMeter} (it is a
 * request the consumer makes and AWS bills) and still takes its place on the critical path
 * (`roundTrips.ts`: the modeled SQS latency, not this machine's). Every other request goes to the
 * server as before (the `GetQueueUrl` that precedes the delete, the retry backoff's
 * `ChangeMessageVisibilityBatch`, dead letters).
 *
 * SQS's answer is modeled: every entry of the simulated queue's handles is `Successful`, whether
 * it deleted the message (the handle of its latest receive) or not (a stale handle: SQS "succeeds,
 * but the message might not be deleted",
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html).
 *
 * @module
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SIMULATED_RECEIPT_HANDLE_PREFIX, type SimulatedQueue } from './SimulatedQueue.js';

/** Whether a receipt handle is one the simulated queue made. */
export function isSimulatedReceiptHandle(receiptHandle: string | undefined): boolean {
  return receiptHandle?.startsWith(SIMULATED_RECEIPT_HANDLE_PREFIX) === true;
}

/**
 * Answers `client`'s `DeleteMessageBatch` and `DeleteMessage` requests whose receipt handles are
 * the simulated queue's from `queues` (the ones being drained when the request is made), without
 * sending them. Install it after the {@link RequestMeter} (it runs after the meter's middlewares of
 * the `initialize` step), so the request is counted.
 *
 * @param queues - the simulated queues being drained; read at each request
 * @throws Error (from the request) for a `DeleteMessageBatch` that mixes the simulated queue's
 *   receipt handles with others: the benchmark sends none
 */
export function answerSimulatedDeletes(client: SQSClient, queues: ReadonlySet<SimulatedQueue>): void {
  const deleteFromQueues = (receiptHandle: string): boolean => {
    for (const queue of queues) if (queue.deleteMessage(receiptHandle)) return true;
    return false;
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ReceiptHandle?: string; Entries?: { Id?: string; ReceiptHandle?: string }[] };
      if (context.commandName === 'DeleteMessageCommand' && isSimulatedReceiptHandle(input.ReceiptHandle)) {
        deleteFromQueues(input.ReceiptHandle!);
        return { output: { $metadata: { httpStatusCode: 200 } } as never, response: undefined };
      }
      if (context.commandName === 'DeleteMessageBatchCommand') {
        const entries = input.Entries ?? [];
        const simulated = entries.filter((entry) => isSimulatedReceiptHandle(entry.ReceiptHandle));
        if (simulated.length === 0) return next(args);
        if (simulated.length !== entries.length)
          throw new Error('a DeleteMessageBatch mixes receipt handles of the simulated queue with others');
        for (const entry of entries) deleteFromQueues(entry.ReceiptHandle!);
        return {
          output: { $metadata: { httpStatusCode: 200 }, Successful: entries.map((entry) => ({ Id: entry.Id })), Failed: [] } as never,
          response: undefined,
        };
      }
      return next(args);
    },
    { step: 'initialize', priority: 'low', name: 'benchmarkSimulatedDeletes' },
  );
}
