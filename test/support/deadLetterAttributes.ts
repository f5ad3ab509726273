import type { Message } from '@aws-sdk/client-sqs';

/**
 * A consumer attribute of a dead-letter message (`failureReason`, `errorType`, `errorMessage`,
 * `originalMessageId`, `attempts`, `bodyEncoding`, …), whatever the writer's layout.
 */
export function deadLetterAttribute(message: Message | undefined, name: string): string | undefined {
  const attributes = message?.MessageAttributes ?? {};
  return attributes[`ic.${name}`]?.StringValue ?? attributes[name]?.StringValue;
}
