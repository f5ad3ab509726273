import type { KafkaEvent } from 'idempotent-consumer/kafka';
import { readKafkaBatchResponse } from 'idempotent-consumer/kafka';
import type { FunctionInvoker, FunctionResponse } from './functionInvoker.js';

/** What the consumer's function made of a redriven Kafka record. */
export type KafkaRedriveOutcome =
  /**
   * It returned without reporting the record: the consumer applied it, found it a duplicate, or
   * dead-lettered it again (then a new dead letter, with its reason, is in the DLQ). The record is
   * settled either way: its old dead letter can go.
   */
  | { readonly acknowledged: true }
  /** It reported the record for a retry, threw, timed out, or answered what a mapping would refuse: the dead letter stays. */
  | { readonly acknowledged: false; readonly detail: string };

/**
 * Redrives one Kafka record by invoking the consumer's function with `event` (one record, from
 * `kafkaRedriveEvent`), and reads the response as the Kafka event source mapping does
 * (`readKafkaBatchResponse`): a response that reports no failure acknowledges the record.
 *
 * @throws the invoker's errors (the function does not exist, access denied, throttling): nothing was decided
 */
export async function redriveKafkaRecord(invoker: FunctionInvoker, functionName: string, event: KafkaEvent): Promise<KafkaRedriveOutcome> {
  return judgeKafkaRedrive(await invoker.invoke(functionName, event), event);
}

/** What a function's response says of a one-record Kafka event (see {@link KafkaRedriveOutcome}). */
export function judgeKafkaRedrive(response: FunctionResponse, event: KafkaEvent): KafkaRedriveOutcome {
  if (response.functionError !== undefined) {
    const error = response.payload as { errorType?: unknown; errorMessage?: unknown } | null;
    const what =
      typeof error?.errorType === 'string' ? `${error.errorType}: ${typeof error.errorMessage === 'string' ? error.errorMessage : ''}` : '';
    return { acknowledged: false, detail: `the function failed (${response.functionError})${what !== '' ? `: ${what}` : ''}` };
  }
  if (response.statusCode < 200 || response.statusCode > 299) {
    return { acknowledged: false, detail: `Lambda answered status ${response.statusCode}` };
  }
  const verdict = readKafkaBatchResponse(response.payload, event.records);
  if (verdict.kind === 'success') return { acknowledged: true };
  if (verdict.kind === 'partial') return { acknowledged: false, detail: 'the consumer reported it for a retry (a retryable failure)' };
  return { acknowledged: false, detail: `the response is not a valid partial batch response: ${verdict.reason}` };
}
