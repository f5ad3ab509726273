/**
 * The rules Amazon SQS applies to what a producer sends, as pure functions: the character set of
 * bodies and `String` attribute values, message attributes, message size, batch entries and
 * the 12-hour visibility limit. The strict SQS server (`local/aws/strictSqs.ts`) enforces them
 * in front of fauxqs; `readInputFile` and `sendInput` use them to check input before it is sent.
 *
 * Sources (Amazon SQS API Reference and Developer Guide):
 * - `SendMessage` / `SendMessageBatch`: allowed characters, 10 entries, 1 MiB per message and
 *   per batch: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html
 * - Message attributes (names, data types, values, at most 10):
 *   https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html
 * - `ChangeMessageVisibility` (12 hours in total from the receive):
 *   https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html
 *
 * Error codes are AWS's; the message texts follow AWS's where AWS is known to use them ("Message
 * must be shorter than …", "Number of message attributes [11] exceeds the allowed maximum [10]")
 * and are written in AWS's style elsewhere.
 *
 * @module
 */

/** Numeric limits of SQS used by the rules. */
export const sqsLimits = {
  /** Message attributes per message. */
  maxAttributesPerMessage: 10,
  /** Characters of a message attribute name. */
  maxAttributeNameLength: 256,
  /** Characters of a message attribute data type (with its custom label). */
  maxDataTypeLength: 256,
  /** Entries of one `SendMessageBatch`, `DeleteMessageBatch` or `ChangeMessageVisibilityBatch`. */
  maxBatchEntries: 10,
  /** Characters of a batch entry id (letters, digits, `-`, `_`). */
  maxBatchEntryIdLength: 80,
  /** Bytes of all messages of one `SendMessageBatch` together (1 MiB since August 2025). */
  maxBatchBytes: 1_048_576,
  /** Largest `MaximumMessageSize` a queue can have, in bytes (1 MiB). */
  maxMessageBytes: 1_048_576,
  /** Longest visibility timeout, in seconds (12 hours), counted from the receive. */
  maxVisibilityTimeoutSeconds: 43_200,
  /** Significant digits of a `Number` attribute value. */
  maxNumberDigits: 38,
} as const;

/** A request or entry SQS refuses: AWS's error code, the code of the `x-amzn-query-error` header, and a message. */
export interface SqsRuleViolation {
  /** The error code of the JSON protocol (`__type` without namespace), e.g. `InvalidParameterValue`. */
  readonly code: string;
  /** The code SQS sends in `x-amzn-query-error`, e.g. `AWS.SimpleQueueService.BatchRequestTooLong`. */
  readonly queryCode: string;
  readonly message: string;
}

/** A message attribute as the SQS JSON protocol carries it (`BinaryValue` in base64). */
export interface WireMessageAttribute {
  readonly DataType?: unknown;
  readonly StringValue?: unknown;
  /** Base64 on the wire; raw bytes when checked before sending with the SDK. */
  readonly BinaryValue?: unknown;
  readonly StringListValues?: unknown;
  readonly BinaryListValues?: unknown;
}

const violation = (code: string, message: string, queryCode = code): SqsRuleViolation => ({ code, queryCode, message });

/**
 * A character SQS refuses: anything outside `#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD |
 * #x10000-#x10FFFF` (XML 1.0 `Char`). The `u` flag makes a surrogate pair one character, so
 * emoji (U+1F600 …) are allowed and a lone surrogate is refused.
 */
const disallowedCharacter = /[^\t\n\r\u{20}-\u{D7FF}\u{E000}-\u{FFFD}\u{10000}-\u{10FFFF}]/u;

/**
 * Whether SQS accepts `text` as a message body or a `String` attribute value: only tab, line
 * feed, carriage return, U+0020 to U+D7FF, U+E000 to U+FFFD and U+10000 to U+10FFFF (emoji
 * included). NUL, other C0 controls, U+FFFE, U+FFFF and lone surrogates are refused.
 */
export function isSqsText(text: string): boolean {
  return !disallowedCharacter.test(text);
}

/** The first character SQS refuses in `text`, as `U+XXXX`, or `undefined`. */
export function firstDisallowedCharacter(text: string): string | undefined {
  const match = disallowedCharacter.exec(text);
  if (!match) return undefined;
  const codePoint = match[0].codePointAt(0) ?? 0;
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Bytes of an attribute's binary value: decoded from base64 (the wire form), or the bytes themselves. */
function binaryLength(value: unknown): number {
  if (value instanceof Uint8Array) return value.byteLength;
  if (typeof value === 'string') return Buffer.from(value, 'base64').byteLength;
  return 0;
}

/**
 * The size SQS counts for a message, in bytes: the body's UTF-8 bytes plus, for each message
 * attribute, the UTF-8 bytes of its name, of its data type and of its value (a binary value
 * counts its decoded bytes, not its base64 text).
 */
export function sqsMessageSize(body: string, attributes: Readonly<Record<string, WireMessageAttribute>> = {}): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const [name, attribute] of Object.entries(attributes)) {
    size += Buffer.byteLength(name, 'utf8');
    size += typeof attribute.DataType === 'string' ? Buffer.byteLength(attribute.DataType, 'utf8') : 0;
    size += typeof attribute.StringValue === 'string' ? Buffer.byteLength(attribute.StringValue, 'utf8') : 0;
    size += binaryLength(attribute.BinaryValue);
  }
  return size;
}

/**
 * Checks a message body: at least one character, only characters SQS allows.
 * @returns the violation, or `undefined` when SQS accepts it
 */
export function checkMessageBody(body: unknown): SqsRuleViolation | undefined {
  if (typeof body !== 'string' || body.length === 0) {
    return violation('MissingParameter', 'The request must contain the parameter MessageBody.');
  }
  const bad = firstDisallowedCharacter(body);
  if (bad !== undefined) {
    return violation(
      'InvalidMessageContents',
      `Invalid characters found (${bad}). Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.`,
    );
  }
  return undefined;
}

/** `Number` values: decimal with optional sign, fraction and exponent. */
const numberFormat = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function checkNumber(name: string, value: string): SqsRuleViolation | undefined {
  if (!numberFormat.test(value)) {
    return violation('InvalidParameterValue', `Can't cast the value of message (user) attribute '${name}' to a number.`);
  }
  const [mantissa = '', exponentText = '0'] = value.replace(/^[+-]/, '').toLowerCase().split('e');
  const [integerPart = '', fractionPart = ''] = mantissa.split('.');
  const digits = `${integerPart}${fractionPart}`.replace(/^0+/, '').replace(/0+$/, '');
  if (digits.length > sqsLimits.maxNumberDigits) {
    return violation(
      'InvalidParameterValue',
      `Message (user) attribute '${name}' has a number with more than ${sqsLimits.maxNumberDigits} digits of precision.`,
    );
  }
  if (digits.length > 0) {
    // The power of ten of the first significant digit: 123.4 → 2, 0.0012 → -3.
    const integerDigits = integerPart.replace(/^0+/, '').length;
    const leadingFractionZeros = fractionPart.length - fractionPart.replace(/^0+/, '').length;
    const magnitude = (integerDigits > 0 ? integerDigits - 1 : -(leadingFractionZeros + 1)) + Number(exponentText);
    if (magnitude > 126 || magnitude < -128) {
      return violation('InvalidParameterValue', `Message (user) attribute '${name}' has a number outside 10^-128 to 10^+126.`);
    }
  }
  return undefined;
}

const attributeNameCharacters = /^[A-Za-z0-9_.-]+$/;
const dataTypePattern = /^(String|Number|Binary)(\..+)?$/s;

/**
 * Checks one message attribute against SQS's rules: the name (1 to 256 of `A-Za-z0-9_-.`, not
 * starting with `AWS.` or `Amazon.` in any case, not starting or ending with `.`, no `..`), the
 * data type (`String`, `Number` or `Binary`, optionally with a custom label after a `.`, at most
 * 256 characters, the body's character set), and the value (non-empty; `String` and `Number`
 * in `StringValue`, `Binary` in `BinaryValue`; a `String` value in the body's character set; a
 * `Number` of at most 38 significant digits between 10^-128 and 10^+126).
 *
 * @returns the violation, or `undefined` when SQS accepts it
 */
export function checkMessageAttribute(name: string, attribute: WireMessageAttribute): SqsRuleViolation | undefined {
  const invalidName = (why: string) => violation('InvalidParameterValue', `Message (user) attribute name '${name}' is invalid: ${why}.`);
  if (name.length === 0) return invalidName('a name must not be empty');
  if (name.length > sqsLimits.maxAttributeNameLength) {
    return invalidName(`a name is at most ${sqsLimits.maxAttributeNameLength} characters long`);
  }
  if (!attributeNameCharacters.test(name)) {
    return invalidName('a name can contain only A-Z, a-z, 0-9, underscore (_), hyphen (-) and period (.)');
  }
  if (/^(aws|amazon)\./i.test(name)) return invalidName("names starting with 'AWS.' or 'Amazon.' are reserved for use by AWS");
  if (name.startsWith('.') || name.endsWith('.')) return invalidName('a name must not start or end with a period');
  if (name.includes('..')) return invalidName('a name must not contain successive periods');

  const dataType = attribute.DataType;
  if (typeof dataType !== 'string' || dataType.length === 0) {
    return violation('InvalidParameterValue', `Message (user) attribute '${name}' must have a data type.`);
  }
  const typeMatch = dataTypePattern.exec(dataType);
  if (typeMatch === null || dataType.length > sqsLimits.maxDataTypeLength || !isSqsText(dataType)) {
    return violation(
      'InvalidParameterValue',
      `The type of message (user) attribute '${name}' is invalid. You must use only the following supported type prefixes: Binary, Number, String.`,
    );
  }
  const baseType = typeMatch[1];
  if (baseType === 'Binary') {
    if (binaryLength(attribute.BinaryValue) === 0) {
      return violation('InvalidParameterValue', `Message (user) attribute '${name}' must contain a non-empty value of type 'Binary'.`);
    }
    return undefined;
  }
  const value = attribute.StringValue;
  if (typeof value !== 'string' || value.length === 0) {
    return violation('InvalidParameterValue', `Message (user) attribute '${name}' must contain a non-empty value of type '${baseType}'.`);
  }
  const bad = firstDisallowedCharacter(value);
  if (bad !== undefined) {
    return violation(
      'InvalidParameterValue',
      `Message (user) attribute '${name}' contains an invalid character (${bad}). Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.`,
    );
  }
  return baseType === 'Number' ? checkNumber(name, value) : undefined;
}

/**
 * Checks the message attributes of one message: at most 10, each valid
 * ({@link checkMessageAttribute}).
 *
 * @returns the first violation, or `undefined` when SQS accepts them
 */
export function checkMessageAttributes(attributes: unknown): SqsRuleViolation | undefined {
  if (attributes === undefined || attributes === null) return undefined;
  if (typeof attributes !== 'object' || Array.isArray(attributes)) {
    return violation('InvalidParameterValue', 'MessageAttributes must be a map of attribute name to value.');
  }
  const entries = Object.entries(attributes as Record<string, WireMessageAttribute>);
  if (entries.length > sqsLimits.maxAttributesPerMessage) {
    return violation(
      'InvalidParameterValue',
      `Number of message attributes [${entries.length}] exceeds the allowed maximum [${sqsLimits.maxAttributesPerMessage}].`,
    );
  }
  for (const [name, attribute] of entries) {
    if (typeof attribute !== 'object' || attribute === null) {
      return violation('InvalidParameterValue', `Message (user) attribute '${name}' must have a value.`);
    }
    const problem = checkMessageAttribute(name, attribute);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Checks one message as `SendMessage` (or one `SendMessageBatch` entry) would: the body, the
 * attributes, and the size (body + attributes) against the queue's `MaximumMessageSize`.
 *
 * @param maximumMessageSize - the queue's `MaximumMessageSize`, in bytes (1,024 to 1,048,576)
 * @returns the first violation, or `undefined` when SQS accepts the message
 */
export function checkMessage(body: unknown, attributes: unknown, maximumMessageSize: number): SqsRuleViolation | undefined {
  const problem = checkMessageBody(body) ?? checkMessageAttributes(attributes);
  if (problem) return problem;
  const size = sqsMessageSize(body as string, (attributes ?? {}) as Record<string, WireMessageAttribute>);
  if (size > maximumMessageSize) {
    return violation(
      'InvalidParameterValue',
      `One or more parameters are invalid. Reason: Message must be shorter than ${maximumMessageSize} bytes.`,
    );
  }
  return undefined;
}

const batchEntryIdPattern = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * Checks the shape of a batch request (`SendMessageBatch`, `DeleteMessageBatch`,
 * `ChangeMessageVisibilityBatch`): 1 to 10 entries, ids of 1 to 80 letters, digits, `-` or `_`,
 * all distinct. SQS refuses the whole request when one of these fails.
 *
 * @returns the violation, or `undefined`
 */
export function checkBatchEntries(entries: unknown): SqsRuleViolation | undefined {
  if (!Array.isArray(entries) || entries.length === 0) {
    return violation('EmptyBatchRequest', "The batch request doesn't contain any entries.", 'AWS.SimpleQueueService.EmptyBatchRequest');
  }
  if (entries.length > sqsLimits.maxBatchEntries) {
    return violation(
      'TooManyEntriesInBatchRequest',
      `Maximum number of entries per request are ${sqsLimits.maxBatchEntries}. You have sent ${entries.length}.`,
      'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
    );
  }
  const ids = new Set<string>();
  for (const entry of entries as Array<{ Id?: unknown }>) {
    const id = entry?.Id;
    if (typeof id !== 'string' || !batchEntryIdPattern.test(id)) {
      return violation(
        'InvalidBatchEntryId',
        'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
        'AWS.SimpleQueueService.InvalidBatchEntryId',
      );
    }
    if (ids.has(id)) {
      return violation('BatchEntryIdsNotDistinct', `Id ${id} repeated.`, 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct');
    }
    ids.add(id);
  }
  return undefined;
}

/**
 * Checks the total size of a `SendMessageBatch`: the sizes of all its messages together (body +
 * attributes, {@link sqsMessageSize}) must not exceed 1 MiB (1,048,576 bytes), SQS's per-batch
 * limit, whatever the queue's `MaximumMessageSize`.
 *
 * @returns the violation (`BatchRequestTooLong`), or `undefined`
 */
export function checkSendBatchSize(
  entries: ReadonlyArray<{ readonly MessageBody?: unknown; readonly MessageAttributes?: unknown }>,
): SqsRuleViolation | undefined {
  let total = 0;
  for (const entry of entries) {
    const body = typeof entry.MessageBody === 'string' ? entry.MessageBody : '';
    const attributes =
      typeof entry.MessageAttributes === 'object' && entry.MessageAttributes !== null
        ? (entry.MessageAttributes as Record<string, WireMessageAttribute>)
        : {};
    total += sqsMessageSize(body, attributes);
  }
  if (total > sqsLimits.maxBatchBytes) {
    return violation(
      'BatchRequestTooLong',
      `Batch requests cannot be longer than ${sqsLimits.maxBatchBytes} bytes. You have sent ${total} bytes.`,
      'AWS.SimpleQueueService.BatchRequestTooLong',
    );
  }
  return undefined;
}

/**
 * Checks a `ChangeMessageVisibility` against the 12-hour limit: a message can stay invisible at
 * most 12 hours (43,200 s) counted from the `ReceiveMessage` that returned this receipt handle,
 * so the new timeout may be at most `43200 − seconds since that receive`. SQS does not cut a
 * longer request down: it refuses it.
 *
 * @param visibilityTimeoutSeconds - the requested timeout, counted from now
 * @param secondsSinceReceive - time since the receive, in seconds (may be fractional)
 * @returns the violation, or `undefined`
 */
export function checkVisibilityExtension(visibilityTimeoutSeconds: number, secondsSinceReceive: number): SqsRuleViolation | undefined {
  if (
    !Number.isInteger(visibilityTimeoutSeconds) ||
    visibilityTimeoutSeconds < 0 ||
    visibilityTimeoutSeconds > sqsLimits.maxVisibilityTimeoutSeconds
  ) {
    return violation(
      'InvalidParameterValue',
      `Value ${String(visibilityTimeoutSeconds)} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and ${sqsLimits.maxVisibilityTimeoutSeconds}.`,
    );
  }
  if (secondsSinceReceive + visibilityTimeoutSeconds > sqsLimits.maxVisibilityTimeoutSeconds) {
    return violation(
      'InvalidParameterValue',
      `Value ${visibilityTimeoutSeconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [${sqsLimits.maxVisibilityTimeoutSeconds} seconds].`,
    );
  }
  return undefined;
}
