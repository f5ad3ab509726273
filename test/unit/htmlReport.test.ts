import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  binOutcomesOverTime,
  deadLetterBars,
  escapeHtml,
  histogramPosition,
  HtmlReportScreenshotError,
  latencyHistogram,
  logTicks,
  niceStep,
  percentile,
  renderHtmlReport,
  retriesPerMessage,
  timeAxis,
  writeHtmlReport,
} from '../../packages/local/src/htmlReport.js';
import {
  assertHtmlReportInput,
  createDeliveryRecorder,
  HtmlReportInputError,
  toHtmlReportInput,
  type HtmlReportDelivery,
  type HtmlReportInput,
} from '../../packages/local/src/htmlReportInput.js';
import type { OutcomeRecord } from '../../packages/idempotent-consumer/src/observability/outcomes.js';
import type { RunReport } from '../../packages/local/src/report.js';

const delivery = (
  messageId: string,
  outcome: HtmlReportDelivery['outcome'],
  atMs: number,
  durationMs = 5,
  attempt?: number,
): HtmlReportDelivery => ({
  messageId,
  outcome,
  atMs,
  durationMs,
  ...(attempt !== undefined ? { attempt } : {}),
});

function input(overrides: Partial<HtmlReportInput> = {}): HtmlReportInput {
  return {
    title: 'Run',
    source: 'sqs',
    startedAt: '2025-03-14T09:26:53.589Z',
    durationMs: 3000,
    totals: { messages: 3, applied: 2, duplicates: 0, retried: 1, deadLettered: 1 },
    deliveries: [
      delivery('m-1', 'applied', 100),
      delivery('m-2', 'retried', 900),
      delivery('m-2', 'applied', 2100),
      delivery('m-3', 'dead-lettered', 2200),
    ],
    deadLettersByReason: { PoisonMessage: 1 },
    check: { ok: true, problems: [] },
    ...overrides,
  };
}

/** A large run: `n` messages over a minute, each applied, a few retried first, a few dead-lettered. */
function largeRun(n: number): HtmlReportInput {
  const deliveries: HtmlReportDelivery[] = [];
  for (let i = 0; i < n; i += 1) {
    const at = (i * 60_000) / n;
    if (i % 50 === 0) deliveries.push(delivery(`m-${i}`, 'retried', at, 3 + (i % 17), 1));
    deliveries.push(delivery(`m-${i}`, i % 200 === 0 ? 'dead-lettered' : 'applied', at + 10, 2 + (i % 23) * 0.7));
  }
  return input({
    durationMs: 61_000,
    deliveries,
    totals: { messages: n, applied: n - n / 200, duplicates: 0, retried: n / 50, deadLettered: n / 200 },
  });
}

describe('escapeHtml', () => {
  it('escapes the five characters that matter in content and quoted attributes', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;');
    expect(escapeHtml('plain text, ünïcödé')).toBe('plain text, ünïcödé');
  });

  it('leaves none of < > " \' unescaped, whatever the string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const escaped = escapeHtml(s);
        expect(escaped).not.toMatch(/[<>"']/);
        expect(escaped.replace(/&(amp|lt|gt|quot|#39);/g, '')).not.toContain('&');
      }),
    );
  });
});

describe('percentile (nearest rank)', () => {
  const oneToTen = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

  it('gives the smallest value with at least p % of the values at or below it', () => {
    expect(percentile(oneToTen, 50)).toBe(5);
    expect(percentile(oneToTen, 90)).toBe(9);
    expect(percentile(oneToTen, 91)).toBe(10);
    expect(percentile(oneToTen, 99)).toBe(10);
    expect(percentile(oneToTen, 100)).toBe(10);
    expect(percentile(oneToTen, 1)).toBe(1);
    expect(percentile([42], 50)).toBe(42);
    expect(percentile([], 50)).toBeNaN();
  });

  it('refuses a percentile outside (0, 100]', () => {
    expect(() => percentile(oneToTen, 0)).toThrow(RangeError);
    expect(() => percentile(oneToTen, 101)).toThrow(/p must be in \(0, 100\], got 101/);
  });

  it('agrees with the definition on any sorted data', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 100 }),
        (values, p) => {
          const sorted = [...values].sort((a, b) => a - b);
          const v = percentile(sorted, p);
          expect(sorted).toContain(v);
          expect(sorted.filter((x) => x <= v).length).toBeGreaterThanOrEqual((p / 100) * sorted.length);
          expect(sorted.filter((x) => x < v).length).toBeLessThan((p / 100) * sorted.length);
        },
      ),
    );
  });
});

describe('niceStep', () => {
  it.each([
    [0.37, 0.5],
    [3, 5],
    [27.75, 50],
    [100, 100],
    [101, 200],
    [0.0012, 0.002],
    [0, 1],
    [Number.NaN, 1],
  ])('%d → %d', (rough, nice) => {
    expect(niceStep(rough)).toBe(nice);
  });
});

describe('binOutcomesOverTime', () => {
  it('counts each delivery in its second of the run, by outcome', () => {
    const { binMs, bins } = binOutcomesOverTime(
      [
        delivery('a', 'applied', 0),
        delivery('b', 'applied', 999),
        delivery('c', 'duplicate', 1000),
        delivery('d', 'dead-lettered', 2999),
        delivery('e', 'retried', 2000),
      ],
      2500,
    );
    expect(binMs).toBe(1000);
    expect(bins).toEqual([
      { applied: 2, duplicate: 0, retried: 0, 'dead-lettered': 0 },
      { applied: 0, duplicate: 1, retried: 0, 'dead-lettered': 0 },
      { applied: 0, duplicate: 0, retried: 1, 'dead-lettered': 1 },
    ]);
  });

  it('widens the bins of a long run to a round width, at most maxBins of them', () => {
    expect(binOutcomesOverTime([], 120_000).binMs).toBe(1000);
    expect(binOutcomesOverTime([], 120_001).binMs).toBe(2000);
    const tenMinutes = binOutcomesOverTime([delivery('a', 'applied', 599_999)], 600_000);
    expect(tenMinutes.binMs).toBe(5000);
    expect(tenMinutes.bins).toHaveLength(120);
    expect(tenMinutes.bins[119]?.applied).toBe(1);
    const day = binOutcomesOverTime([], 86_400_000);
    expect(day.binMs).toBe(900_000);
    expect(day.bins).toHaveLength(96);
    expect(binOutcomesOverTime([], 10 * 86_400_000).binMs).toBe(7_200_000);
  });

  it('keeps a delivery that came after the measured duration', () => {
    const { bins } = binOutcomesOverTime([delivery('a', 'applied', 3500)], 2000);
    expect(bins).toHaveLength(4);
    expect(bins[3]?.applied).toBe(1);
  });

  it('loses no delivery and makes at most maxBins bins', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e7, noNaN: true }), { maxLength: 300 }),
        fc.integer({ min: 0, max: 1e7 }),
        fc.integer({ min: 1, max: 200 }),
        (ats, durationMs, maxBins) => {
          const { bins } = binOutcomesOverTime(
            ats.map((at, i) => delivery(`m-${i}`, 'applied', at)),
            durationMs,
            maxBins,
          );
          expect(bins.reduce((sum, b) => sum + b.applied, 0)).toBe(ats.length);
          expect(bins.length).toBeLessThanOrEqual(maxBins);
          expect(bins.length).toBeGreaterThanOrEqual(1);
        },
      ),
    );
  });
});

describe('timeAxis', () => {
  it('labels the time axis at a round step, a whole number of bins, in one unit', () => {
    expect(timeAxis(24, 1000)).toEqual({ everyBins: 5, unitSeconds: 1 });
    expect(timeAxis(3, 1000)).toEqual({ everyBins: 1, unitSeconds: 1 });
    expect(timeAxis(120, 5000)).toEqual({ everyBins: 12, unitSeconds: 60 });
    expect(timeAxis(96, 900_000)).toEqual({ everyBins: 12, unitSeconds: 3600 });
    expect(timeAxis(120, 7_200_000)).toEqual({ everyBins: 12, unitSeconds: 3600 });
  });

  it('never gives more than the labels asked for', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.constantFrom(1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200),
        (bins, binSeconds) => {
          const { everyBins } = timeAxis(bins, binSeconds * 1000);
          expect(Math.floor(bins / everyBins)).toBeLessThanOrEqual(10);
        },
      ),
    );
  });
});

describe('latencyHistogram', () => {
  it('bins a narrow spread linearly, in round widths from a round edge below the fastest', () => {
    const h = latencyHistogram([10.2, 11, 11.5, 12, 13.9, 14], 10);
    expect(h?.scale).toBe('linear');
    expect(h?.edges.slice(0, 3)).toEqual([10, 10.5, 11]);
    expect(h?.counts.reduce((a, b) => a + b, 0)).toBe(6);
    expect(h?.counts[0]).toBe(1); // 10.2 in [10, 10.5)
    expect(h?.overflow).toBeUndefined();
    expect(h).toMatchObject({ p50: 11.5, p90: 14, p99: 14, min: 10.2, max: 14, total: 6 });
  });

  it('keeps a far outlier of a linear spread in one overflow bin past 1.5 × p99', () => {
    const values = [...Array.from({ length: 99 }, (_, i) => 50 + (i % 10)), 500];
    const h = latencyHistogram(values);
    expect(h?.scale).toBe('linear');
    expect(h?.p99).toBe(59);
    expect(h?.overflow).toEqual({ fromMs: h?.edges[h.edges.length - 1], count: 1 });
    expect(h?.edges[h.edges.length - 1]).toBeGreaterThanOrEqual(1.5 * 59);
    expect(h?.counts.reduce((a, b) => a + b, 0)).toBe(99);
  });

  it('bins a spread of 20× or more on a logarithmic scale, so a fast bulk and a slow tail both show', () => {
    const values = [...Array.from({ length: 95 }, (_, i) => 8 + (i % 8)), 150, 200, 250, 300, 350];
    const h = latencyHistogram(values);
    expect(h?.scale).toBe('log');
    const edges = h?.edges ?? [];
    const ratios = edges.slice(1).map((e, i) => e / (edges[i] ?? 1));
    for (const r of ratios) expect(r).toBeCloseTo(ratios[0] ?? 0, 2);
    expect(edges[0]).toBeLessThanOrEqual(8);
    expect(edges[edges.length - 1]).toBeGreaterThan(350);
    expect(h?.counts.reduce((a, b) => a + b, 0)).toBe(100);
    expect(h?.overflow).toBeUndefined();
  });

  it('puts zero durations of a log histogram in its first bin', () => {
    const h = latencyHistogram([0, 0, 1, 50, 100]);
    expect(h?.scale).toBe('log');
    expect(h?.counts[0]).toBe(3);
  });

  it('handles one value, and no value', () => {
    expect(latencyHistogram([7])).toMatchObject({ scale: 'linear', counts: [1], p50: 7, p99: 7 });
    expect(latencyHistogram([0, 0])).toMatchObject({ counts: [2] });
    expect(latencyHistogram([])).toBeUndefined();
  });

  it('counts every value once, in ascending bins of a bounded number', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1e5, noNaN: true }), { minLength: 1, maxLength: 300 }), (values) => {
        const h = latencyHistogram(values, 30);
        if (h === undefined) throw new Error('expected a histogram');
        expect(h.counts.reduce((a, b) => a + b, 0) + (h.overflow?.count ?? 0)).toBe(values.length);
        expect(h.edges).toHaveLength(h.counts.length + 1);
        for (let i = 1; i < h.edges.length; i += 1) expect(h.edges[i]).toBeGreaterThan(h.edges[i - 1] ?? Number.NaN);
        expect(h.counts.length).toBeLessThanOrEqual(80);
      }),
    );
  });
});

describe('histogramPosition and logTicks', () => {
  it('places a value along linear and logarithmic bins', () => {
    expect(histogramPosition({ scale: 'linear', edges: [10, 20, 30] }, 20)).toBe(0.5);
    expect(histogramPosition({ scale: 'log', edges: [1, 10, 100] }, 10)).toBeCloseTo(0.5, 10);
    expect(histogramPosition({ scale: 'log', edges: [1, 10, 100] }, 0)).toBe(0);
    expect(histogramPosition({ scale: 'linear', edges: [10, 20] }, 99)).toBe(1);
  });

  it('labels a log axis with round values, fewer when the range is wide', () => {
    expect(logTicks(0.8, 350)).toEqual([1, 2, 5, 10, 20, 50, 100, 200]);
    expect(logTicks(0.1, 500)).toEqual([0.1, 0.3, 1, 3, 10, 30, 100, 300]);
    expect(logTicks(0.1, 20_000)).toEqual([0.1, 1, 10, 100, 1000, 10_000]);
    expect(logTicks(0.01, 1e6)).toEqual([0.01, 1, 100, 10_000, 1e6]);
  });
});

describe('retriesPerMessage', () => {
  it('counts messages by their retried deliveries, or by the receive count when it says more', () => {
    const buckets = retriesPerMessage([
      delivery('first-time', 'applied', 0, 1, 1),
      delivery('once', 'retried', 0),
      delivery('once', 'applied', 10),
      delivery('twice', 'retried', 0),
      delivery('twice', 'retried', 10),
      delivery('twice', 'dead-lettered', 20),
      delivery('crashed-before', 'applied', 0, 1, 3),
      delivery('duplicate', 'duplicate', 5),
    ]);
    expect(buckets).toEqual([
      { label: '0', retries: 0, messages: 2 },
      { label: '1', retries: 1, messages: 1 },
      { label: '2', retries: 2, messages: 2 },
    ]);
  });

  it('gathers the most retried messages in a last N+ bucket', () => {
    const deliveries = [
      delivery('a', 'applied', 0),
      delivery('b', 'applied', 0, 1, 2),
      delivery('c', 'applied', 0, 1, 6),
      delivery('d', 'applied', 0, 1, 3),
    ];
    expect(retriesPerMessage(deliveries, 3)).toEqual([
      { label: '0', retries: 0, messages: 1 },
      { label: '1', retries: 1, messages: 1 },
      { label: '2+', retries: 2, messages: 2 },
    ]);
    expect(retriesPerMessage([])).toEqual([]);
  });
});

describe('deadLetterBars', () => {
  it('sorts reasons by count, most first, ties by name, and drops zeros', () => {
    expect(deadLetterBars({ b: 2, a: 2, c: 7, zero: 0 })).toEqual([
      { reason: 'c', count: 7 },
      { reason: 'a', count: 2 },
      { reason: 'b', count: 2 },
    ]);
  });

  it('gathers the least frequent reasons into one last bar', () => {
    const byReason = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`r${i}`, 10 - i]));
    expect(deadLetterBars(byReason, 4)).toEqual([
      { reason: 'r0', count: 10 },
      { reason: 'r1', count: 9 },
      { reason: 'r2', count: 8 },
      { reason: '3 other reasons', count: 7 + 6 + 5, otherReasons: 3 },
    ]);
    expect(deadLetterBars(byReason, Number.POSITIVE_INFINITY)).toHaveLength(6);
  });
});

describe('renderHtmlReport', () => {
  it('writes a self-contained page: no script, no external resource, a policy that forbids both', () => {
    const html = renderHtmlReport(input());
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(|https?:\/\//i);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
    expect(html).not.toMatch(/\son[a-z]+=/i);
  });

  it('says the verdict, with its problems when it failed', () => {
    expect(renderHtmlReport(input())).toContain('Exactly-once check: passed');
    const failed = renderHtmlReport(input({ check: { ok: false, problems: ['applied more than once: k-1', 'line 7: lost'] } }));
    expect(failed).toContain('Exactly-once check: FAILED');
    expect(failed).toContain('<li>applied more than once: k-1</li><li>line 7: lost</li>');
    expect(failed).toContain('<title>Run · FAILED</title>');
  });

  it('escapes every string from the input', () => {
    const evil = `<script>alert("x")</script><img src=x onerror='y'>`;
    const html = renderHtmlReport(
      input({
        title: evil,
        deliveries: [delivery(evil, 'dead-lettered', 10)],
        deadLettersByReason: { [evil]: 3 },
        check: { ok: false, problems: [evil] },
        notes: [evil],
      }),
    );
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toContain("onerror='");
    expect(html.split('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;').length - 1).toBeGreaterThanOrEqual(5);
  });

  it('shows the outbox only when there is one', () => {
    expect(renderHtmlReport(input())).not.toContain('data-total="outbox"');
    const html = renderHtmlReport(input({ outbox: { written: 12, published: 9 } }));
    expect(html).toMatch(
      /data-total="outbox"><dt>Outbox<\/dt><dd><span class="number">9<\/span><span class="note">published of 12 written · 3 not yet<\/span>/,
    );
  });

  it('shows redeliveries, parking and end-to-end latency only when given', () => {
    const plain = renderHtmlReport(input());
    for (const key of ['redeliveries', 'parked', 'endToEnd']) expect(plain).not.toContain(`data-total="${key}"`);
    const html = renderHtmlReport(
      input({
        redeliveries: { total: 4, perMessage: 1.3333, byReason: { Unknown: 1, PredecessorNotApplied: 3 } },
        parking: { parked: 5, appliedFromPark: 4, settledFromPark: 4 },
        endToEndMs: { p50: 1250, p90: 4000, p99: 9500 },
      }),
    );
    expect(html).toMatch(
      /data-total="redeliveries"><dt>Redeliveries<\/dt><dd><span class="number">4<\/span><span class="note">1\.333 per message · most for PredecessorNotApplied \(3\)<\/span>/,
    );
    expect(html).toMatch(
      /data-total="parked"><dt>Parked<\/dt><dd><span class="number">5<\/span><span class="note">out of order · 4 applied, 4 settled from the park/,
    );
    expect(html).toMatch(
      /data-total="endToEnd"><dt>End to end \(p50\)<\/dt><dd><span class="number">1\.25 s<\/span><span class="note">[^<]*p90 4 s · p99 9\.5 s/,
    );
  });

  it('refuses redeliveries, parking and end-to-end figures of a wrong shape', () => {
    expect(() =>
      assertHtmlReportInput({
        ...input(),
        redeliveries: { total: -1, perMessage: 0, byReason: { X: 0.5 } },
        parking: { parked: 1, appliedFromPark: 'x', settledFromPark: 0 },
        endToEndMs: { p50: -5, p90: 1, p99: 1 },
      }),
    ).toThrow(
      /redeliveries\.total: .*got -1\n.*redeliveries\.byReason\["X"\]: .*got 0\.5\n.*parking\.appliedFromPark: .*"x"\n.*endToEndMs\.p50: .*got -5/,
    );
  });

  it('draws empty states for a run without deliveries or dead letters', () => {
    const html = renderHtmlReport(
      input({ deliveries: [], deadLettersByReason: {}, totals: { messages: 0, applied: 0, duplicates: 0, retried: 0, deadLettered: 0 } }),
    );
    expect(html.match(/No deliveries were recorded\./g)).toHaveLength(3);
    expect(html).toContain('No message was sent, so none could be lost or applied twice.');
    expect(html).toContain('Nothing was dead-lettered.');
    expect(html).not.toContain('<svg viewBox');
  });

  it('stays small for 10,000 deliveries: binned, no element per delivery', () => {
    const html = renderHtmlReport(largeRun(10_000));
    const bytes = Buffer.byteLength(html);
    expect(bytes).toBeLessThan(120_000);
    const shapes = (page: string) => page.match(/<rect /g)?.length ?? 0;
    // At most 4 outcomes in each of the minute's 61 one-second bins, plus the histograms' bars.
    expect(shapes(html)).toBeGreaterThan(61);
    expect(shapes(html)).toBeLessThanOrEqual(4 * 61 + 80 + 10);
    // Twice the deliveries over the same minute: hardly a bigger page.
    const twice = renderHtmlReport(largeRun(20_000));
    expect(shapes(twice)).toBeLessThanOrEqual(4 * 61 + 80 + 10);
    expect(Buffer.byteLength(twice)).toBeLessThan(1.2 * bytes);
  });

  it('draws at most 12 reason bars, and lists every reason in the data table', () => {
    const deadLettersByReason = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`Reason${i}`, 20 - i]));
    const html = renderHtmlReport(input({ deadLettersByReason }));
    const figure = html.slice(html.indexOf('data-chart="dead-letters"'));
    expect(figure.match(/<g class="reason"/g)).toHaveLength(12);
    expect(figure).toContain('data-reason="4 other reasons" data-count="30" data-other="true"');
    expect(figure.match(/<tr><th scope="row">Reason\d+<\/th>/g)).toHaveLength(15);
  });

  it('is the same page for the same input', () => {
    expect(renderHtmlReport(largeRun(1000))).toBe(renderHtmlReport(largeRun(1000)));
  });

  it('refuses a bad input, naming each problem', () => {
    const bad = {
      ...input(),
      source: 'rabbitmq',
      durationMs: -1,
      startedAt: 'yesterday',
      deliveries: [{ messageId: 'm', outcome: 'lost', atMs: Number.NaN, durationMs: 1 }],
    };
    let error: unknown;
    try {
      renderHtmlReport(bad as unknown as HtmlReportInput);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HtmlReportInputError);
    expect((error as HtmlReportInputError).problems).toEqual([
      'source: expected sqs, sqs-fifo, kafka, kinesis or dynamodb-streams, got "rabbitmq"',
      'startedAt: expected an ISO 8601 date, got "yesterday"',
      'durationMs: expected a finite number of milliseconds ≥ 0, got -1',
      'deliveries[0].outcome: expected one of applied, duplicate, retried, dead-lettered, got "lost"',
      'deliveries[0].atMs: expected a finite number of milliseconds ≥ 0, got NaN',
    ]);
    expect(() => assertHtmlReportInput(null)).toThrow(/expected an object, got object/);
    expect(() =>
      assertHtmlReportInput({ ...input(), totals: { ...input().totals, applied: 1.5 }, deadLettersByReason: { x: -2 } }),
    ).toThrow(
      /totals\.applied: expected a non-negative integer, got 1\.5\n.*deadLettersByReason\["x"\]: expected a non-negative integer, got -2/,
    );
  });
});

describe('createDeliveryRecorder and toHtmlReportInput', () => {
  it('stamps each outcome with the time since the recorder was made', () => {
    let now = 1000;
    const recorder = createDeliveryRecorder({ now: () => now });
    now = 1250;
    recorder.onOutcome({ outcome: 'retried', messageId: 'm-1', durationMs: 12, attempt: 1, reason: undefined });
    now = 3000;
    recorder.onOutcome({ outcome: 'dead-lettered', messageId: 'm-1', durationMs: 4, attempt: 2, reason: 'PoisonMessage' });
    expect(recorder.deliveries()).toEqual([
      { messageId: 'm-1', outcome: 'retried', atMs: 250, durationMs: 12, attempt: 1 },
      { messageId: 'm-1', outcome: 'dead-lettered', atMs: 2000, durationMs: 4, attempt: 2, reason: 'PoisonMessage' },
    ]);
  });

  it("takes the consumer's outcome records as they are", () => {
    const recorder = createDeliveryRecorder({ now: () => 0 });
    const record: OutcomeRecord = {
      outcome: 'dead-lettered',
      messageId: 'm-9',
      idempotencyKey: 'k-9',
      orderingKey: undefined,
      fields: {},
      attempt: undefined,
      countsAsAttempt: undefined,
      reason: 'ValidationError',
      errorType: 'SyntaxError',
      errorMessage: 'Unexpected token',
      durationMs: 1.5,
    };
    recorder.onOutcome(record);
    expect(recorder.deliveries()).toEqual([
      { messageId: 'm-9', outcome: 'dead-lettered', atMs: 0, durationMs: 1.5, reason: 'ValidationError' },
    ]);
  });

  it("makes the page's input from the run's text report", () => {
    const report: RunReport = {
      source: 'sqs',
      messagesIn: 3,
      applied: 2,
      duplicates: 0,
      retried: 1,
      deadLettered: 1,
      deadLetteredByReason: { PoisonMessage: 1 },
      unaccounted: 0,
      countsAddUp: true,
      deadLetterCauses: [
        {
          verdict: 'own',
          reason: 'PoisonMessage',
          cause: 'message',
          explanation: 'PoisonMessage: the message can never apply as it is',
          count: 1,
          lines: [3],
        },
      ],
      latencyMs: { p50: 1, p90: 2, p99: 3 },
      endToEndMs: { p50: 1500, p90: 2000, p99: 2100 },
      redeliveries: { total: 1, byReason: { Throttled: 1 }, perMessage: 0.333, perMessageByReason: { Throttled: 0.333 } },
      invocations: 2,
      durationMs: 3000,
      check: { ok: true, problems: [] },
      notes: ['a note'],
    };
    const made = toHtmlReportInput(report, input().deliveries, { startedAt: new Date('2025-03-14T09:26:53.589Z'), fifo: true });
    expect(made).toEqual({
      ...input(),
      title: 'Local run (sqs-fifo)',
      source: 'sqs-fifo',
      notes: ['a note'],
      redeliveries: { total: 1, perMessage: 0.333, byReason: { Throttled: 1 } },
      endToEndMs: { p50: 1500, p90: 2000, p99: 2100 },
    });
    expect(() => renderHtmlReport(made)).not.toThrow();
  });
});

describe('writeHtmlReport', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'html-report-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('writes the page and returns its size', async () => {
    const path = join(dir, 'run.html');
    const { bytes } = await writeHtmlReport(path, input());
    const written = await readFile(path, 'utf8');
    expect(written).toBe(renderHtmlReport(input()));
    expect(bytes).toBe(Buffer.byteLength(written));
  });

  it('writes nothing for a bad input, and leaves no partial file when the folder is missing', async () => {
    const path = join(dir, 'bad.html');
    await expect(writeHtmlReport(path, { ...input(), durationMs: Number.NaN })).rejects.toThrow(HtmlReportInputError);
    expect(existsSync(path)).toBe(false);
    await expect(writeHtmlReport(join(dir, 'missing', 'run.html'), input())).rejects.toThrow(/ENOENT/);
    expect((await readdir(dir)).filter((f) => f.includes('partial'))).toEqual([]);
  });

  it('says what is missing when the screenshot has no browser, and keeps the page', async () => {
    const path = join(dir, 'shot.html');
    const png = join(dir, 'shot.png');
    await expect(writeHtmlReport(path, input(), { screenshot: png, chromiumPath: join(dir, 'no-chromium') })).rejects.toThrow(
      HtmlReportScreenshotError,
    );
    await expect(writeHtmlReport(path, input(), { screenshot: png, chromiumPath: join(dir, 'no-chromium') })).rejects.toThrow(
      /Chromium is not at .*no-chromium: install it/,
    );
    expect(existsSync(path)).toBe(true);
    expect(existsSync(png)).toBe(false);
  });
});
