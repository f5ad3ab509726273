/**
 * The local runtime's entry point (`idempotent-consumer/local`): run any handler built with the
 * library on embedded emulators (`runLocal`), and the types a consumer's `--check` module
 * implements.
 *
 * @module
 */
export type { LocalCheck, LocalCheckContext } from './check.js';
export { InjectedTransientFailure, runLocal, type LocalRunOptions, type LocalRunResult, type Progress, type RunningLocalRuntime } from './runLocal.js';
export { readInputFile, InputFileError, type InputMessage } from './inputFile.js';
export { formatReport, type DeadLetterCauseGroup, type RunReport } from './report.js';
export { judgeDeadLetter, foreignErrorTypes, type DeadLetterJudgement, type InjectedFaults, type InjectedKind } from './deadLetterCause.js';
export { eventTimeField, inProducerOrder } from './producerOrder.js';
export { faultKinds, type FaultKind, type FaultOptions, type FaultRates } from './faultInjection.js';
export { DataDirError, EmulatorStartError, JavaNotFoundError, LocalRuntimeError, PollerIdleTimeoutError, ProvisioningError } from './errors.js';
