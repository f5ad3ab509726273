// Preloaded (node --import) into the command line by dlqBin.test.ts: moves this process's wall
// clock (Date) by TEST_CLOCK_SKEW_MS milliseconds, as a machine whose clock is off would. The
// SQS server runs in the test process, with the true time.
const skew = Number(process.env.TEST_CLOCK_SKEW_MS ?? '0');
const RealDate = Date;
class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + skew);
    else super(...args);
  }
  static now() {
    return RealDate.now() + skew;
  }
}
globalThis.Date = SkewedDate;
