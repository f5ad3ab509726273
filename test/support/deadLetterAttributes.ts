import type { Message } from '@aws-sdk/client-sqs';
import { readDeadLetterAttributes } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';

/**
 * A consumer attribute of a dead-letter message: `failureReason`, `errorType`, `errorMessage`, or
 * one of the `ic.context` fields (`originalMessageId`, `attempts`, `source`, `bodyEncoding`, …), as text.
 */
export function deadLetterAttribute(message: Message | undefined, name: string): string | undefined {
  const info = readDeadLetterAttributes(message?.MessageAttributes ?? {});
  if (info === undefined) return undefined;
  if (name === 'failureReason' || name === 'errorType' || name === 'errorMessage') return info[name];
  const value = (info.context as Record<string, unknown>)[name];
  return value === undefined ? undefined : typeof value === 'string' ? value : JSON.stringify(value);
}
