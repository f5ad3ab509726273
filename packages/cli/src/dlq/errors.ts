/**
 * The DLQ tool's errors. Each has a stable `name` and a message written for an operator; the
 * command line prints the message and exits with {@link DlqToolError.exitCode}.
 *
 * @module
 */

/** Base of the DLQ tool's errors: sets `name` to the subclass's name and forwards `cause`. */
export abstract class DlqToolError extends Error {
  /** The process exit code the command line uses for this error. @default 1 */
  readonly exitCode: number = 1;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A flag or argument is missing or malformed. Exit code 2. */
export class UsageError extends DlqToolError {
  override readonly exitCode = 2;
}

/** The queue URL names no queue (SQS `QueueDoesNotExist` / `AWS.SimpleQueueService.NonExistentQueue`). */
export class QueueNotFoundError extends DlqToolError {
  constructor(
    public readonly queueUrl: string,
    options?: ErrorOptions,
  ) {
    super(
      `queue not found: ${queueUrl}. Check the URL (account, region and name) and that --endpoint / ` +
        'AWS_ENDPOINT_URL point at the server that holds it.',
      options,
    );
  }
}

/** No AWS credentials could be loaded, or AWS rejected them. */
export class CredentialsError extends DlqToolError {}

/** The SQS endpoint cannot be reached (connection refused, unknown host). */
export class EndpointUnreachableError extends DlqToolError {}

/** The queue is not a dead-letter queue: see `assertDeadLetterQueue` for how that is decided. */
export class NotADeadLetterQueueError extends DlqToolError {
  constructor(
    public readonly queueUrl: string,
    reason: string,
  ) {
    super(`${queueUrl} is not a dead-letter queue: ${reason}. Pass --no-dlq-check to use it anyway.`);
  }
}

/** `show ID` found no message with that id among the messages it could see. */
export class MessageNotFoundError extends DlqToolError {}

/** A deletion needs a confirmation and none can be asked (no terminal and no `--yes`). */
export class ConfirmationRequiredError extends DlqToolError {}

/** One bad line of an archive file. Line numbers start at 1. */
export interface ArchiveLineProblem {
  readonly line: number;
  readonly message: string;
}

/** An archive file cannot be read, or some of its lines are not archived messages. */
export class ArchiveFormatError extends DlqToolError {
  constructor(
    public readonly file: string,
    public readonly problems: readonly ArchiveLineProblem[],
    options?: ErrorOptions,
  ) {
    super(
      problems.length === 1 && problems[0]?.line === 0
        ? `${file}: ${problems[0].message}`
        : `${file}: ${problems.length} bad line(s); nothing was sent:\n` +
            problems.map((p) => `  ${file}:${p.line}: ${p.message}`).join('\n'),
      options,
    );
  }
}

/**
 * An archive does not end with the trailer line `archive` writes (a count and a SHA-256 of its
 * lines), or the trailer does not match: the file was cut, changed, or written by hand. Nothing
 * was sent.
 */
export class ArchiveIncompleteError extends DlqToolError {}

/** A body the consumer offloaded to S3 cannot be read back, or is not the one it stored. */
export class PayloadUnavailableError extends DlqToolError {}

/** The archive file cannot be written (it exists, its folder is missing, no permission). Nothing was deleted. */
export class ArchiveFileError extends DlqToolError {}

/** SQS's message move task ended in the `FAILED` state; the messages not moved stay in the DLQ. */
export class MoveTaskFailedError extends DlqToolError {}

/** The operator interrupted the command (Ctrl-C). Exit code 130. */
export class InterruptedError extends DlqToolError {
  override readonly exitCode = 130;
}

/** Names under which SQS and its emulators report an action they do not implement. */
const UNSUPPORTED_OPERATION_NAMES = new Set([
  'UnsupportedOperation',
  'AWS.SimpleQueueService.UnsupportedOperation',
  'InvalidAction',
  'UnknownOperationException',
  'NotImplemented',
  'NotImplementedException',
]);

/**
 * Whether an SQS error says the server does not implement the action (AWS
 * `UnsupportedOperation`, fauxqs `InvalidAction: Unknown action`, LocalStack's
 * `NotImplemented` / HTTP 501).
 */
export function isUnsupportedOperation(error: unknown): boolean {
  const e = error as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  if (e === undefined || e === null) return false;
  if (e.$metadata?.httpStatusCode === 501) return true;
  return UNSUPPORTED_OPERATION_NAMES.has(e.name ?? '') || UNSUPPORTED_OPERATION_NAMES.has(e.Code ?? '');
}

/** Whether an SQS error says the queue does not exist. */
export function isQueueDoesNotExist(error: unknown): boolean {
  const e = error as { name?: string; Code?: string } | undefined;
  const names = ['QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 'NonExistentQueue'];
  return names.includes(e?.name ?? '') || names.includes(e?.Code ?? '');
}

/**
 * Turns an error of the AWS SDK into the tool's error with an operator's message, when it is one
 * the tool knows (missing or rejected credentials, a missing queue, an unreachable endpoint, a
 * missing region). Other errors are returned unchanged.
 *
 * @param error - anything a command threw
 * @param context.queueUrl - the queue the command worked on, named in the message
 * @param context.endpoint - the endpoint the client used, if one was set
 */
export function toDlqToolError(error: unknown, context: { queueUrl?: string; endpoint?: string } = {}): unknown {
  if (error instanceof DlqToolError) return error;
  const e = error as { name?: string; code?: string; message?: string; cause?: { code?: string } } | undefined;
  if (e === undefined || e === null || typeof e !== 'object') return error;
  const name = e.name ?? '';
  const message = e.message ?? '';
  if (name === 'CredentialsProviderError' || /Could not load credentials/i.test(message)) {
    return new CredentialsError(
      'no AWS credentials found. Configure them as for the AWS CLI (AWS_PROFILE, AWS_ACCESS_KEY_ID and ' +
        'AWS_SECRET_ACCESS_KEY, SSO, an instance role); for the local emulator pass --endpoint ' +
        '(dummy credentials are used for a localhost endpoint).',
      { cause: error },
    );
  }
  if (['InvalidClientTokenId', 'UnrecognizedClientException', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidSecurity'].includes(name)) {
    return new CredentialsError(`AWS rejected the credentials (${name}): ${message}`, { cause: error });
  }
  if (isQueueDoesNotExist(error)) {
    return new QueueNotFoundError(context.queueUrl ?? '(unknown queue)', { cause: error });
  }
  const code = e.code ?? e.cause?.code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ECONNRESET') {
    return new EndpointUnreachableError(
      `cannot reach SQS${context.endpoint !== undefined ? ` at ${context.endpoint}` : ''} (${code}). ` +
        'Is the local runtime running, and are --endpoint / AWS_ENDPOINT_URL and the queue URL right?',
      { cause: error },
    );
  }
  if (/Region is missing/i.test(message)) {
    return new UsageError('no AWS region: pass --region or set AWS_REGION', { cause: error });
  }
  return error;
}
