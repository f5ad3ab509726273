import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { buildDeadLetterMessage, type DeadLetterContext } from './deadLetterMessage.js';

/** Options of {@link DeadLetterQueue}. */
export interface DeadLetterQueueOptions {
  readonly sqs: SQSClient;
  /** The dead-letter queue's URL. */
  readonly queueUrl: string;
  /** Whether it is a FIFO queue (its URL ends in `.fifo`). @default derived from the URL */
  readonly fifo?: boolean;
  /** Its maximum message size, in bytes. */
  readonly maxMessageSizeBytes: number;
}

/**
 * The consumer's writer to the dead-letter queue: the original body, byte for byte, with the
 * reason attached (see `buildDeadLetterMessage`).
 */
export class DeadLetterQueue {
  readonly #options: DeadLetterQueueOptions;
  readonly #fifo: boolean;

  constructor(options: DeadLetterQueueOptions) {
    this.#options = options;
    this.#fifo = options.fifo ?? options.queueUrl.endsWith('.fifo');
  }

  /**
   * Sends one failed message to the dead-letter queue.
   *
   * @returns the dead-letter message's id
   * @throws the SQS client's error when the send fails: the caller must then NOT acknowledge
   *   the message (it is retried, and the queue's redrive policy is the safety net)
   */
  async send(context: DeadLetterContext): Promise<string | undefined> {
    const input = buildDeadLetterMessage(this.#options.queueUrl, context, {
      fifo: this.#fifo,
      maxMessageSizeBytes: this.#options.maxMessageSizeBytes,
    });
    const output = await this.#options.sqs.send(new SendMessageCommand(input));
    return output.MessageId;
  }
}
