/**
 * The local runtime's entry point (`@idempotent-consumer/local`): run any handler built with the
 * library on embedded emulators (`runLocal`), or a CDK app's consumer from its bundle
 * (`runLocalApp`), and the types a consumer's `--check` module
 * implements; below them, the pieces the command line (`@idempotent-consumer/cli`) is built from
 * (one invocation with Lambda's context and timeout, reading a queue without consuming it,
 * sending an input file, the HTML report).
 *
 * @module
 */
export type { LocalCheck, LocalCheckContext } from './check.js';
export {
  InjectedTransientFailure,
  runLocal,
  type LocalRunOptions,
  type LocalRunResult,
  type Progress,
  type RunningLocalRuntime,
} from './runLocal.js';
export { runLocalApp, type LocalAppRunOptions } from './app/runLocalApp.js';
export {
  startEventBridgeServer,
  type EventBridgeServerOptions,
  type FailEntriesRule,
  type LocalEventBridge,
  type LocalEventBridgeEvent,
  type PutEventsCall,
  type ReceivedPutEventsEntry,
} from './aws/eventBridgeServer.js';
export { readInputFile, InputFileError, type InputMessage } from './inputFile.js';
export { formatReport, type DeadLetterCauseGroup, type Parking, type Redeliveries, type RunReport } from './report.js';
export { judgeDeadLetter, foreignErrorTypes, type DeadLetterJudgement, type InjectedFaults, type InjectedKind } from './deadLetterCause.js';
export { eventTimeField, inProducerOrder } from './producerOrder.js';
export { faultKinds, type FaultKind, type FaultOptions, type FaultRates } from './faultInjection.js';
export {
  CloudAssemblyError,
  DataDirError,
  EmulatorStartError,
  JavaNotFoundError,
  LocalRuntimeError,
  PollerIdleTimeoutError,
  ProvisioningError,
  TemplateMismatchError,
  type TemplateDifference,
} from './errors.js';
export { MessageHold, type ReceiveOptions } from './messageHold.js';
export { FaultFlagError, faultRatesFromFlags, parseSeedFlag } from './faultInjection.js';
export { inputLineBody } from './inputFile.js';
export { fifoIdPattern, SendInputError, sendInput, type SendInputOptions, type SentInputMessage } from './sendInput.js';
export { writeHtmlReport, type WriteHtmlReportOptions } from './htmlReport.js';
export { toHtmlReportInput, type HtmlReportInput } from './htmlReportInput.js';
export { createLambdaContext, newLogStreamName, type LambdaContextOptions } from './lambdaContext.js';
export { invokeWithinTimeout } from './invokeWithinTimeout.js';
export { judgeBatchResponse, type BatchJudgement, type InvocationOutcome } from './judgeBatchResponse.js';
export { MetricsCapture, type MetricTotals } from './metricsCapture.js';
export { startLocalConsumer, type LocalConsumer, type LocalConsumerOptions } from './startLocalConsumer.js';
