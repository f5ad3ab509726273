/**
 * The Amazon SQS Extended Client Library's convention for a body stored in S3: the message body
 * is a pointer, `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"…","s3Key":"…"}]`,
 * and the message attribute `ExtendedPayloadSize` (`Number`) holds the size of the original body in
 * bytes. Java's and Python's extended clients read such a message back transparently.
 *
 * Sources: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-managing-large-messages.html
 * and the libraries' shared payload-offloading code
 * (https://github.com/awslabs/payload-offloading-java-common-lib-for-aws, `PayloadS3Pointer`;
 * `SQSExtendedClientConstants.RESERVED_ATTRIBUTE_NAME` in
 * https://github.com/awslabs/amazon-sqs-java-extended-client-lib).
 *
 * @module
 */

/** The class name the extended clients write as the pointer's first element. */
export const PAYLOAD_POINTER_CLASS = 'software.amazon.payloadoffloading.PayloadS3Pointer';

/** The message attribute that marks an offloaded body; its value is the original body's size in bytes. */
export const EXTENDED_PAYLOAD_SIZE_ATTRIBUTE = 'ExtendedPayloadSize';

/** Where an offloaded body is stored. */
export interface PayloadLocation {
  /** The S3 bucket's name (the pointer's `s3BucketName`). */
  readonly bucket: string;
  /** The object's key in the bucket (the pointer's `s3Key`). */
  readonly key: string;
}

/**
 * The pointer body for an object: `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":bucket,"s3Key":key}]`.
 */
export function formatPayloadPointer(location: PayloadLocation): string {
  return JSON.stringify([PAYLOAD_POINTER_CLASS, { s3BucketName: location.bucket, s3Key: location.key }]);
}

/**
 * Reads a pointer body written by {@link formatPayloadPointer} or an extended client.
 *
 * @returns the location, or `undefined` when `body` is not such a pointer
 */
export function parsePayloadPointer(body: string): PayloadLocation | undefined {
  if (!body.startsWith('[')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2 || value[0] !== PAYLOAD_POINTER_CLASS) return undefined;
  const pointer = value[1] as { s3BucketName?: unknown; s3Key?: unknown } | null;
  if (typeof pointer !== 'object' || pointer === null) return undefined;
  if (typeof pointer.s3BucketName !== 'string' || typeof pointer.s3Key !== 'string') return undefined;
  return { bucket: pointer.s3BucketName, key: pointer.s3Key };
}
