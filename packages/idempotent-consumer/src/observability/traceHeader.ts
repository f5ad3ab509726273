/**
 * The X-Ray trace header a message carries on from the message it came from: a dead letter and an
 * outbox message continue the trace of the source message (SQS's `AWSTraceHeader` system
 * attribute), or, when the source gave none (a Kafka record, an SQS message from a producer that
 * does not trace), the trace of the invocation that handled it.
 *
 * @module
 */

/**
 * The SQS message system attribute that carries an X-Ray trace header
 * (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=<0|1>`): Lambda hands it to the function as
 * `record.attributes.AWSTraceHeader`, and `SendMessage` takes it in `MessageSystemAttributes`.
 * https://docs.aws.amazon.com/xray/latest/devguide/xray-services-sqs.html
 */
export const TRACE_HEADER_ATTRIBUTE = 'AWSTraceHeader';

/**
 * The HTTP header that carries the trace header on a request to an AWS service: SNS, which has no
 * system attribute for it, passes the `X-Amzn-Trace-Id` of a `Publish` request on to its
 * subscribers (an SQS subscriber receives it as `AWSTraceHeader`).
 * https://docs.aws.amazon.com/xray/latest/devguide/xray-services-sns.html
 */
export const TRACE_HEADER_HTTP_HEADER = 'X-Amzn-Trace-Id';

/** The longest trace header carried on, in characters (Lambda's and SQS's are about 100). */
const MAX_TRACE_HEADER_LENGTH = 512;
const ROOT = /^Root=1-[0-9a-f]{8}-[0-9a-f]{24}$/;
const FIELD = /^[A-Za-z][A-Za-z0-9_-]*=[\x21-\x3a\x3c-\x7e]*$/;

/**
 * Whether `value` is an X-Ray trace header that SQS and SNS take: `;`-separated `key=value` fields
 * of printable ASCII without spaces, one of them `Root=1-<8 hex digits>-<24 hex digits>`, at most
 * 512 characters. What fails is not carried on: a malformed header must never make a dead letter or
 * an outbox message fail (SQS refuses a malformed `AWSTraceHeader`).
 */
export function isTraceHeader(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TRACE_HEADER_LENGTH) return false;
  const fields = value.split(';');
  return fields.every((field) => FIELD.test(field)) && fields.some((field) => ROOT.test(field));
}

/** `value` when it is a trace header ({@link isTraceHeader}), else `undefined`. */
export function traceHeaderOrUndefined(value: unknown): string | undefined {
  return isTraceHeader(value) ? value : undefined;
}

/** Lambda's per-invocation store (Lambda Managed Instances serve several invocations in one process). */
interface InvokeStoreLike {
  getXRayTraceId(): string | undefined;
}

/**
 * The trace header of the current invocation: Lambda's per-invocation store
 * (`globalThis.awslambda.InvokeStore`, on Lambda Managed Instances, where one process serves several
 * invocations at once), else the `_X_AMZN_TRACE_ID` variable Lambda sets for each invocation; as
 * Powertools reads it (`getXrayTraceDataFromEnv` in `@aws-lambda-powertools/commons`). Lambda sets it
 * whether or not the function is traced (`Sampled=0` when it is not).
 *
 * @returns the header, or `undefined` outside Lambda (or when it is malformed)
 */
export function invocationTraceHeader(): string | undefined {
  let fromStore: string | undefined;
  try {
    const store = (globalThis as { awslambda?: { InvokeStore?: InvokeStoreLike } }).awslambda?.InvokeStore;
    fromStore = store?.getXRayTraceId();
  } catch {
    fromStore = undefined;
  }
  return traceHeaderOrUndefined(fromStore ?? process.env._X_AMZN_TRACE_ID);
}
