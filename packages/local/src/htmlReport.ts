/**
 * The picture of a local run: one self-contained HTML page (inline CSS and inline SVG, no
 * script, no external resource, readable from `file://`) with the exactly-once verdict, the
 * totals, outcomes over time, the latency distribution, retries per message and dead letters
 * by reason. Every chart has a title, a text description and its data as a table.
 *
 * The charts draw binned data only, so the page stays small whatever the number of
 * deliveries (a few dozen kilobytes for 10,000).
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext } from 'playwright-core';
import { LocalRuntimeError } from './errors.js';
import {
  assertHtmlReportInput,
  htmlReportOutcomes,
  type HtmlReportDelivery,
  type HtmlReportInput,
  type HtmlReportOutcome,
  type HtmlReportSource,
} from './htmlReportInput.js';

// ---------------------------------------------------------------------------------------------
// Pure parts: escaping, percentiles, binning.
// ---------------------------------------------------------------------------------------------

const htmlEscapes: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML and SVG content and for quoted attribute values (`& < > " '`). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => htmlEscapes[c] ?? c);
}

/**
 * The `p`-th percentile of values sorted ascending, by the nearest-rank method: the smallest
 * value such that at least `p` % of the values are at most it.
 *
 * @param sorted values in ascending order
 * @param p the percentile, in (0, 100]
 * @returns the value; `NaN` for no values
 * @throws RangeError when `p` is outside (0, 100]
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile: p must be in (0, 100], got ${p}`);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** The smallest of 1, 2 or 5 times a power of ten that is at least `rough` (1 for `rough` ≤ 0). */
export function niceStep(rough: number): number {
  if (!(rough > 0) || !Number.isFinite(rough)) return 1;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough * (1 - 1e-12)) ?? 10 * power;
  return Number(step.toPrecision(12));
}

/** Deliveries of one time bin, by outcome. */
export type OutcomeCounts = Record<HtmlReportOutcome, number>;

/** Outcomes over time: {@link binOutcomesOverTime}'s result. */
export interface OutcomeBins {
  /** The width of a bin, in milliseconds: 1,000 (one second) unless the run is long. */
  readonly binMs: number;
  /** One entry per bin from the run's start; bin `i` covers `[i·binMs, (i+1)·binMs)`. */
  readonly bins: readonly OutcomeCounts[];
}

const binSecondsLadder = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600] as const;
const tickSecondsLadder = [...binSecondsLadder, 7200, 10_800, 21_600, 43_200, 86_400] as const;

/** A unit of time for labels, in seconds. */
export type TimeUnit = 1 | 60 | 3600;

/**
 * Where the time axis gets a label: every `everyBins` bins, a round step of time (1, 2, 5, 10,
 * 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12, 24 h) that is a whole number of bins and
 * gives at most `maxLabels` steps; the labels are written in the step's unit (`unitSeconds`),
 * so one axis never mixes seconds and minutes.
 */
export function timeAxis(binCount: number, binMs: number, maxLabels = 10): { everyBins: number; unitSeconds: TimeUnit } {
  const binSeconds = binMs / 1000;
  const spanSeconds = binCount * binSeconds;
  const stepSeconds =
    tickSecondsLadder.find((s) => s >= binSeconds && s % binSeconds === 0 && spanSeconds / s <= maxLabels) ??
    binSeconds * Math.max(1, Math.ceil(binCount / maxLabels));
  return { everyBins: Math.max(1, Math.round(stepSeconds / binSeconds)), unitSeconds: unitOf(stepSeconds) };
}

/**
 * Counts deliveries per bin of time: one second per bin, or the smallest of 2, 5, 10, 15, 30 s,
 * 1, 2, 5, 10, 15, 30 min, 1 h (then whole hours) that keeps the bins at most `maxBins`.
 * The bins span the run's duration, or up to the last delivery when one came later.
 *
 * @param durationMs the run's duration, in milliseconds
 * @param maxBins the most bins to make (at least 1)
 */
export function binOutcomesOverTime(deliveries: readonly HtmlReportDelivery[], durationMs: number, maxBins = 120): OutcomeBins {
  const limit = Math.max(1, Math.floor(maxBins));
  let span = Math.max(0, durationMs);
  for (const d of deliveries) span = Math.max(span, d.atMs);
  let binMs = 0;
  for (const seconds of binSecondsLadder) {
    if (Math.ceil(span / (seconds * 1000)) <= limit) {
      binMs = seconds * 1000;
      break;
    }
  }
  if (binMs === 0) binMs = Math.ceil(span / limit / 3_600_000) * 3_600_000;
  const count = Math.max(1, Math.ceil(span / binMs));
  const bins: OutcomeCounts[] = Array.from({ length: count }, () => ({ applied: 0, duplicate: 0, retried: 0, 'dead-lettered': 0 }));
  for (const d of deliveries) {
    const bin = bins[Math.min(count - 1, Math.floor(d.atMs / binMs))];
    if (bin !== undefined) bin[d.outcome] += 1;
  }
  return { binMs, bins };
}

/** The latency distribution: {@link latencyHistogram}'s result. */
export interface LatencyHistogram {
  /**
   * `linear`: bins of one round width. `log`: bins of one ratio (5 to 50 a decade), when the
   * slowest value is 20 or more times the fastest (a fast bulk and a slow tail both show).
   */
  readonly scale: 'linear' | 'log';
  /** The bins' edges in milliseconds, ascending, one more than the bins: bin `i` covers `[edges[i], edges[i+1])`. */
  readonly edges: readonly number[];
  /** Deliveries per bin. */
  readonly counts: readonly number[];
  /** Deliveries slower than the last bin (kept apart so that a few outliers do not squash the rest), when any. */
  readonly overflow: { readonly fromMs: number; readonly count: number } | undefined;
  /** Percentiles by the nearest-rank method, and the extremes, in milliseconds. */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly min: number;
  readonly max: number;
  readonly total: number;
}

const binsPerDecadeLadder = [5, 10, 20, 25, 50] as const;

/** The finest time the latency histogram tells apart: one microsecond, in milliseconds. */
const resolutionMs = 0.001;

/**
 * Bins processing times into about `targetBins` bins.
 *
 * - When the slowest value is at least 20 times the fastest positive one, the bins are
 *   logarithmic: edges at `10^(k/d)` ms, `d` bins a decade (5, 10, 20, 25 or 50: the nearest to
 *   `targetBins` over the decades spanned); values under a microsecond fall in the first bin.
 * - Otherwise they are linear, of a round width (1, 2 or 5 times a power of ten, in
 *   milliseconds, at least a microsecond) from the fastest value down to a round edge; and when there are at least 50
 *   values and the slowest is over twice the p99, the bins stop at 1.5 × p99 and the slower
 *   values go to one overflow bin.
 *
 * @param durationsMs processing times, in milliseconds (any order)
 * @returns `undefined` for no values
 */
export function latencyHistogram(durationsMs: readonly number[], targetBins = 30): LatencyHistogram | undefined {
  if (durationsMs.length === 0) return undefined;
  const values = Array.from(Float64Array.from(durationsMs).sort());
  const min = values[0] ?? 0;
  const max = values[values.length - 1] ?? 0;
  const stats = { p50: percentile(values, 50), p90: percentile(values, 90), p99: percentile(values, 99), min, max, total: values.length };
  const target = Math.max(1, targetBins);
  const fastestPositive = values.find((v) => v >= resolutionMs);

  if (fastestPositive !== undefined && max >= 20 * fastestPositive) {
    const decades = Math.log10(max) - Math.log10(fastestPositive);
    const perDecade = binsPerDecadeLadder.reduce((best, d) =>
      Math.abs(d - target / decades) < Math.abs(best - target / decades) ? d : best,
    );
    const k = (v: number) => Math.floor(Math.log10(v) * perDecade + 1e-9);
    const first = k(fastestPositive);
    const binCount = k(max) - first + 1;
    const edges = Array.from({ length: binCount + 1 }, (_, i) => Number((10 ** ((first + i) / perDecade)).toPrecision(4)));
    const counts = new Array<number>(binCount).fill(0);
    for (const v of values) counts[v >= resolutionMs ? Math.min(binCount - 1, Math.max(0, k(v) - first)) : 0]! += 1;
    return { scale: 'log', edges, counts, overflow: undefined, ...stats };
  }

  const capped = values.length >= 50 && stats.p99 > 0 && max > 2 * stats.p99;
  const upper = capped ? 1.5 * stats.p99 : max;
  const width = Math.max(resolutionMs, upper > min ? niceStep((upper - min) / target) : niceStep(Math.max(upper, 1) / 10));
  const start = Math.floor(min / width) * width;
  const binCount = Math.max(1, Math.floor((upper - start) / width + 1e-9) + 1);
  const edges = Array.from({ length: binCount + 1 }, (_, i) => round(start + i * width, 6));
  const counts = new Array<number>(binCount).fill(0);
  let overflowCount = 0;
  for (const v of values) {
    const index = Math.floor((v - start) / width + 1e-9);
    if (index >= binCount && capped) overflowCount += 1;
    else counts[Math.min(binCount - 1, Math.max(0, index))]! += 1;
  }
  const overflow = capped && overflowCount > 0 ? { fromMs: edges[binCount] ?? upper, count: overflowCount } : undefined;
  return { scale: 'linear', edges, counts, overflow, ...stats };
}

/**
 * Where a value sits along a histogram's bins, from 0 (the first edge) to 1 (the last edge):
 * linear or logarithmic as the histogram is; clamped to [0, 1].
 */
export function histogramPosition(histogram: Pick<LatencyHistogram, 'scale' | 'edges'>, valueMs: number): number {
  const first = histogram.edges[0] ?? 0;
  const last = histogram.edges[histogram.edges.length - 1] ?? 1;
  const f =
    histogram.scale === 'log'
      ? valueMs <= 0
        ? 0
        : (Math.log10(valueMs) - Math.log10(first)) / (Math.log10(last) - Math.log10(first))
      : (valueMs - first) / (last - first);
  return Number.isFinite(f) ? Math.min(1, Math.max(0, f)) : 0;
}

/**
 * Round values inside a log histogram's range, to label its axis, at most `max` of them: 1, 2
 * and 5 times powers of ten, or 1 and 3 times, or powers of ten (every other one, or fewer, for a
 * very wide range).
 */
export function logTicks(firstEdge: number, lastEdge: number, max = 8): number[] {
  const inRange = (v: number) => v >= firstEdge * (1 - 1e-9) && v <= lastEdge * (1 + 1e-9);
  for (const multiples of [[1, 2, 5], [1, 3], [1]] as const) {
    const ticks: number[] = [];
    for (let e = Math.floor(Math.log10(firstEdge)); e <= Math.ceil(Math.log10(lastEdge)); e += 1) {
      for (const m of multiples) {
        const v = Number((m * 10 ** e).toPrecision(6));
        if (inRange(v)) ticks.push(v);
      }
    }
    if (ticks.length <= max || multiples.length === 1) {
      const every = Math.ceil(ticks.length / Math.max(1, max));
      return ticks.filter((_, i) => i % every === 0);
    }
  }
  return [];
}

/** Messages by how many retries they needed: {@link retriesPerMessage}'s result. */
export interface RetryBucket {
  /** `0`, `1`, … or `N+` for the last bucket when it gathers N or more retries. */
  readonly label: string;
  /** The smallest number of retries in the bucket. */
  readonly retries: number;
  readonly messages: number;
}

/**
 * Counts messages by the retries they needed before their last delivery: the larger of the
 * message's `retried` deliveries and its highest `attempt` less one (a delivery the consumer
 * never reported, e.g. after a crash, still raises the receive count).
 *
 * @param maxBuckets the most buckets; the last gathers the rest (`N+`)
 * @returns buckets 0, 1, … up to the most retries seen; empty for no deliveries
 */
export function retriesPerMessage(deliveries: readonly HtmlReportDelivery[], maxBuckets = 10): RetryBucket[] {
  const perMessage = new Map<string, { retried: number; attempt: number }>();
  for (const d of deliveries) {
    const seen = perMessage.get(d.messageId) ?? { retried: 0, attempt: 0 };
    if (d.outcome === 'retried') seen.retried += 1;
    if (d.attempt !== undefined) seen.attempt = Math.max(seen.attempt, d.attempt);
    perMessage.set(d.messageId, seen);
  }
  if (perMessage.size === 0) return [];
  const limit = Math.max(2, Math.floor(maxBuckets));
  const retries = [...perMessage.values()].map((m) => Math.max(m.retried, m.attempt - 1));
  const most = retries.reduce((a, b) => Math.max(a, b), 0);
  const lumped = most >= limit;
  const length = lumped ? limit : most + 1;
  const buckets = Array.from({ length }, (_, i) => ({ label: lumped && i === length - 1 ? `${i}+` : String(i), retries: i, messages: 0 }));
  for (const r of retries) buckets[Math.min(length - 1, r)]!.messages += 1;
  return buckets;
}

/** One bar of dead letters by reason. */
export interface ReasonBar {
  readonly reason: string;
  readonly count: number;
  /** For the bar that gathers the least frequent reasons: how many reasons it holds. */
  readonly otherReasons?: number;
}

/**
 * Sorts the reasons by count, most first (ties by name), drops zero counts, and gathers the
 * reasons past `maxBars - 1` into one last bar when there are more than `maxBars`.
 */
export function deadLetterBars(byReason: Readonly<Record<string, number>>, maxBars = 12): ReasonBar[] {
  const sorted = Object.entries(byReason)
    .filter(([, n]) => n > 0)
    .sort(([a, n], [b, m]) => m - n || (a < b ? -1 : a > b ? 1 : 0))
    .map(([reason, count]) => ({ reason, count }));
  const limit = Math.max(2, Math.floor(maxBars));
  if (sorted.length <= limit) return sorted;
  const rest = sorted.slice(limit - 1);
  return [
    ...sorted.slice(0, limit - 1),
    { reason: `${rest.length} other reasons`, count: rest.reduce((sum, r) => sum + r.count, 0), otherReasons: rest.length },
  ];
}

// ---------------------------------------------------------------------------------------------
// Formatting.
// ---------------------------------------------------------------------------------------------

const integerFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** A count with thousands separators: `10,000`. */
function count(n: number): string {
  return integerFormat.format(n);
}

/** Milliseconds for a person: `0.42 ms`, `7.5 ms`, `230 ms`, `1.25 s`. */
function ms(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value < 1) return `${round(value, 2)} ms`;
  if (value < 10) return `${round(value, 1)} ms`;
  if (value < 1000) return `${Math.round(value)} ms`;
  return `${round(value / 1000, value < 10_000 ? 2 : 1)} s`;
}

/** A run's duration: `42.1 s`, `3 min 07 s`, `1 h 02 min`. */
function duration(valueMs: number): string {
  const seconds = valueMs / 1000;
  if (seconds < 60) return `${round(seconds, 1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${String(Math.floor(seconds % 60)).padStart(2, '0')} s`;
  return `${Math.floor(seconds / 3600)} h ${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')} min`;
}

/** An axis label of milliseconds, short: `0`, `2.5`, `120`, `1.5k`. */
function axisMs(value: number): string {
  if (value >= 10_000) return `${round(value / 1000, 1)}k`;
  return String(round(value, value < 10 ? 2 : 1));
}

/** A time in seconds written in a unit of 1 s, 60 s or 3,600 s: `90 s`, `1.5 min`, `2 h`. */
function timeLabel(seconds: number, unitSeconds: TimeUnit): string {
  return `${round(seconds / unitSeconds, 2)} ${unitSeconds === 1 ? 's' : unitSeconds === 60 ? 'min' : 'h'}`;
}

/** The unit a step of time reads best in: hours, minutes or seconds, whichever divides it. */
function unitOf(stepSeconds: number): TimeUnit {
  if (stepSeconds >= 3600 && stepSeconds % 3600 === 0) return 3600;
  if (stepSeconds >= 60 && stepSeconds % 60 === 0) return 60;
  return 1;
}

function binName(binMs: number): string {
  return binMs === 1000 ? 'second' : timeLabel(binMs / 1000, unitOf(binMs / 1000));
}

function share(part: number, whole: number): string {
  if (whole <= 0) return '';
  const percent = (100 * part) / whole;
  return `${percent > 0 && percent < 0.1 ? '<0.1' : round(percent, 1)} %`;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

const sourceNames: Readonly<Record<HtmlReportSource, string>> = {
  sqs: 'SQS standard queue',
  'sqs-fifo': 'SQS FIFO queue',
  kafka: 'Kafka',
  kinesis: 'Kinesis Data Streams',
  'dynamodb-streams': 'DynamoDB Streams',
};

const outcomeNames: Readonly<Record<HtmlReportOutcome, string>> = {
  applied: 'applied',
  duplicate: 'duplicate',
  retried: 'retried',
  'dead-lettered': 'dead-lettered',
};

/** The CSS class of an outcome's colour. */
const outcomeClass: Readonly<Record<HtmlReportOutcome, string>> = {
  applied: 'c-applied',
  duplicate: 'c-duplicate',
  retried: 'c-retried',
  'dead-lettered': 'c-dead',
};

// ---------------------------------------------------------------------------------------------
// SVG charts. Coordinates are in the viewBox's units; the SVG scales to its card's width.
// ---------------------------------------------------------------------------------------------

/** Rounds a coordinate to 0.1 unit (keeps the markup short). */
const n1 = (value: number) => String(round(value, 1));

interface Frame {
  readonly width: number;
  readonly height: number;
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

const plotWidth = (f: Frame) => f.width - f.left - f.right;
const plotHeight = (f: Frame) => f.height - f.top - f.bottom;

/** A count axis from 0 to a round top with about `ticks` steps. */
function countAxis(maxValue: number, ticks = 4): { top: number; step: number } {
  const step = Math.max(1, niceStep(maxValue / ticks));
  return { top: Math.max(step, Math.ceil(maxValue / step) * step), step };
}

function svgOpen(id: string, frame: Frame, title: string, description: string): string {
  return (
    `<svg viewBox="0 0 ${frame.width} ${frame.height}" role="img" aria-labelledby="${id}-title ${id}-desc" focusable="false">` +
    `<title id="${id}-title">${escapeHtml(title)}</title><desc id="${id}-desc">${escapeHtml(description)}</desc>`
  );
}

/** Horizontal grid lines and labels of a count axis, plus the axis' title. */
function countGrid(frame: Frame, axis: { top: number; step: number }, label: string): string {
  const parts: string[] = [];
  for (let value = 0; value <= axis.top + 1e-9; value += axis.step) {
    const y = frame.top + plotHeight(frame) * (1 - value / axis.top);
    parts.push(`<line class="grid" x1="${frame.left}" x2="${frame.width - frame.right}" y1="${n1(y)}" y2="${n1(y)}"/>`);
    parts.push(`<text class="tick" x="${frame.left - 6}" y="${n1(y + 4)}" text-anchor="end">${count(value)}</text>`);
  }
  const cy = frame.top + plotHeight(frame) / 2;
  parts.push(`<text class="axis-title" transform="translate(14 ${n1(cy)}) rotate(-90)" text-anchor="middle">${escapeHtml(label)}</text>`);
  return `<g aria-hidden="true">${parts.join('')}</g>`;
}

function baseline(frame: Frame, xLabel: string): string {
  const y = frame.height - frame.bottom;
  return (
    `<g aria-hidden="true"><line class="axis" x1="${frame.left}" x2="${frame.width - frame.right}" y1="${y}" y2="${y}"/>` +
    `<text class="axis-title" x="${n1(frame.left + plotWidth(frame) / 2)}" y="${frame.height - 6}" text-anchor="middle">${escapeHtml(xLabel)}</text></g>`
  );
}

function dataTable(caption: string, head: readonly string[], rows: readonly (readonly string[])[]): string {
  const th = head.map((h) => `<th scope="col">${escapeHtml(h)}</th>`).join('');
  const body = rows
    .map(
      (row) =>
        `<tr>${row.map((cell, i) => (i === 0 ? `<th scope="row">${escapeHtml(cell)}</th>` : `<td>${escapeHtml(cell)}</td>`)).join('')}</tr>`,
    )
    .join('');
  return `<details><summary>${escapeHtml(caption)}</summary><table><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table></details>`;
}

function legend(items: ReadonlyArray<readonly [cssClass: string, label: string]>): string {
  return `<ul class="legend">${items.map(([cls, label]) => `<li><span class="swatch ${cls}" aria-hidden="true"></span>${escapeHtml(label)}</li>`).join('')}</ul>`;
}

function figure(chart: string, heading: string, lead: string, body: string, wide = false): string {
  return (
    `<figure class="card${wide ? ' wide' : ''}" data-chart="${chart}" aria-labelledby="${chart}-heading">` +
    `<figcaption><h2 id="${chart}-heading">${escapeHtml(heading)}</h2><p>${lead}</p></figcaption>${body}</figure>`
  );
}

function emptyState(text: string): string {
  return `<p class="empty">${escapeHtml(text)}</p>`;
}

function outcomesOverTime(input: HtmlReportInput): string {
  const heading = 'Outcomes over time';
  if (input.deliveries.length === 0)
    return figure(
      'outcomes-over-time',
      heading,
      'Deliveries by outcome, per second of the run.',
      emptyState('No deliveries were recorded.'),
      true,
    );
  const { binMs, bins } = binOutcomesOverTime(input.deliveries, input.durationMs);
  const frame: Frame = { width: 960, height: 280, left: 58, right: 14, top: 12, bottom: 44 };
  const totals = bins.map((b) => htmlReportOutcomes.reduce((sum, o) => sum + b[o], 0));
  const peak = Math.max(...totals);
  const countScale = countAxis(peak);
  const slot = plotWidth(frame) / bins.length;
  const gap = slot >= 4 ? Math.max(1, slot * 0.18) : 0;
  const scale = plotHeight(frame) / countScale.top;
  const bottom = frame.height - frame.bottom;
  const bars: string[] = [];
  const per = binName(binMs);
  const binUnit = unitOf(binMs / 1000);
  const binRange = (i: number) => `${round((i * binMs) / 1000 / binUnit, 2)}–${timeLabel(((i + 1) * binMs) / 1000, binUnit)}`;
  bins.forEach((bin, i) => {
    const total = totals[i] ?? 0;
    if (total === 0) return;
    const x = frame.left + i * slot + gap / 2;
    let y = bottom;
    const rects = htmlReportOutcomes
      .filter((o) => bin[o] > 0)
      .map((o) => {
        const h = bin[o] * scale;
        y -= h;
        return `<rect class="${outcomeClass[o]}" data-outcome="${o}" data-count="${bin[o]}" x="${n1(x)}" y="${n1(y)}" width="${n1(slot - gap)}" height="${n1(h)}"/>`;
      })
      .join('');
    const what = htmlReportOutcomes
      .filter((o) => bin[o] > 0)
      .map((o) => `${count(bin[o])} ${outcomeNames[o]}`)
      .join(', ');
    bars.push(`<g class="bar" data-bin="${i}" data-total="${total}"><title>${binRange(i)}: ${what}</title>${rects}</g>`);
  });
  const axis = timeAxis(bins.length, binMs);
  const ticks: string[] = [];
  for (let i = 0; i <= bins.length; i += axis.everyBins) {
    const x = frame.left + i * slot;
    ticks.push(`<line class="axis" x1="${n1(x)}" x2="${n1(x)}" y1="${bottom}" y2="${bottom + 4}"/>`);
    ticks.push(
      `<text class="tick" x="${n1(x)}" y="${bottom + 17}" text-anchor="middle">${timeLabel((i * binMs) / 1000, axis.unitSeconds)}</text>`,
    );
  }
  const busiest = totals.indexOf(peak);
  const sum = (o: HtmlReportOutcome) => input.deliveries.reduce((s, d) => s + (d.outcome === o ? 1 : 0), 0);
  const description =
    `Stacked bars of deliveries per ${per} over ${duration(input.durationMs)}: ` +
    `${htmlReportOutcomes.map((o) => `${count(sum(o))} ${outcomeNames[o]}`).join(', ')}. ` +
    `The busiest ${per} had ${plural(peak, 'delivery', 'deliveries')} (${binRange(busiest)}).`;
  const svg =
    svgOpen('outcomes-over-time', frame, `Deliveries per ${per}, by outcome`, description) +
    countGrid(frame, countScale, `deliveries per ${per}`) +
    `<g class="bars">${bars.join('')}</g>` +
    `<g aria-hidden="true">${ticks.join('')}</g>` +
    baseline(frame, 'time since the run started') +
    '</svg>';
  const table = dataTable(
    `Data: deliveries per ${per}`,
    ['time', ...htmlReportOutcomes.map((o) => outcomeNames[o]), 'all'],
    bins.map((b, i) => [binRange(i), ...htmlReportOutcomes.map((o) => count(b[o])), count(totals[i] ?? 0)]),
  );
  const lead = `Every delivery by its outcome, per ${per} of the run (${plural(input.deliveries.length, 'delivery', 'deliveries')} recorded).`;
  return figure(
    'outcomes-over-time',
    heading,
    escapeHtml(lead),
    legend(htmlReportOutcomes.map((o) => [outcomeClass[o], outcomeNames[o]])) + svg + table,
    true,
  );
}

function latencyDistribution(input: HtmlReportInput): string {
  const heading = 'Latency distribution';
  const histogram = latencyHistogram(input.deliveries.map((d) => d.durationMs));
  if (histogram === undefined)
    return figure('latency', heading, 'Processing time per delivery.', emptyState('No deliveries were recorded.'));
  const frame: Frame = { width: 560, height: 300, left: 58, right: 16, top: 56, bottom: 44 };
  const { counts, overflow, edges } = histogram;
  const slots = counts.length + (overflow !== undefined ? 1 : 0);
  const slot = plotWidth(frame) / slots;
  const gap = slot >= 4 ? Math.max(1, slot * 0.12) : 0;
  const axis = countAxis(Math.max(...counts, overflow?.count ?? 0));
  const bottom = frame.height - frame.bottom;
  const barHeight = (n: number) => (n === 0 ? 0 : Math.max(1.5, (n / axis.top) * plotHeight(frame)));
  const range = (i: number) => `${axisMs(edges[i] ?? 0)}–${axisMs(edges[i + 1] ?? 0)} ms`;
  const bar = (cls: string, bin: string, i: number, n: number, title: string) =>
    `<rect class="${cls}" data-bin="${bin}" data-count="${n}" x="${n1(frame.left + i * slot + gap / 2)}" y="${n1(bottom - barHeight(n))}" width="${n1(slot - gap)}" height="${n1(barHeight(n))}">` +
    `<title>${escapeHtml(title)}</title></rect>`;
  const bars = counts
    .map((n, i) => (n === 0 ? '' : bar('c-latency', String(i), i, n, `${range(i)}: ${plural(n, 'delivery', 'deliveries')}`)))
    .join('');
  const overflowBar =
    overflow === undefined
      ? ''
      : bar(
          'c-latency overflow',
          'overflow',
          counts.length,
          overflow.count,
          `${ms(overflow.fromMs)} or slower (up to ${ms(histogram.max)}): ${plural(overflow.count, 'delivery', 'deliveries')}`,
        );
  // Where a value sits on the axis: inside its bin, or in the middle of the overflow bin.
  const binnedWidth = counts.length * slot;
  const xOf = (value: number) =>
    overflow !== undefined && value >= overflow.fromMs
      ? frame.left + binnedWidth + slot / 2
      : frame.left + histogramPosition(histogram, value) * binnedWidth;
  const markers = (
    [
      ['p50', histogram.p50],
      ['p90', histogram.p90],
      ['p99', histogram.p99],
    ] as const
  )
    .map(([name, value], row) => {
      const x = xOf(value);
      const y = 14 + row * 15;
      const anchor = x > frame.width - 110 ? 'end' : 'start';
      const dx = anchor === 'end' ? -4 : 4;
      return (
        `<g class="marker" data-percentile="${name}" data-value="${value}"><line x1="${n1(x)}" x2="${n1(x)}" y1="${y - 10}" y2="${bottom}"/>` +
        `<text x="${n1(x + dx)}" y="${y}" text-anchor="${anchor}">${name} ${escapeHtml(ms(value))}</text></g>`
      );
    })
    .join('');
  const tickValues =
    histogram.scale === 'log'
      ? logTicks(edges[0] ?? 1, edges[edges.length - 1] ?? 10)
      : edges.filter((_, i) => i % Math.max(1, niceStep(counts.length / 6)) === 0);
  const ticks = tickValues.map((value) => {
    const x = frame.left + histogramPosition(histogram, value) * binnedWidth;
    return (
      `<line class="axis" x1="${n1(x)}" x2="${n1(x)}" y1="${bottom}" y2="${bottom + 4}"/>` +
      `<text class="tick" x="${n1(x)}" y="${bottom + 17}" text-anchor="middle">${axisMs(value)}</text>`
    );
  });
  if (overflow !== undefined) {
    ticks.push(`<text class="tick" x="${n1(frame.left + binnedWidth + slot / 2)}" y="${bottom + 17}" text-anchor="middle">slower</text>`);
  }
  const first = edges[0] ?? 0;
  const binning =
    histogram.scale === 'log'
      ? `in ${counts.length} bins on a logarithmic scale from ${ms(first)} to ${ms(edges[edges.length - 1] ?? 0)}`
      : `in bins of ${ms((edges[1] ?? 0) - first)} from ${ms(first)}`;
  const description =
    `Histogram of the processing time of ${plural(histogram.total, 'delivery', 'deliveries')}, ${binning}` +
    `${overflow !== undefined ? `, and ${count(overflow.count)} slower than ${ms(overflow.fromMs)} in one last bin` : ''}. ` +
    `Median (p50) ${ms(histogram.p50)}, p90 ${ms(histogram.p90)}, p99 ${ms(histogram.p99)}; fastest ${ms(histogram.min)}, slowest ${ms(histogram.max)}.`;
  const svg =
    svgOpen('latency', frame, 'Processing time per delivery', description) +
    countGrid(frame, axis, 'deliveries') +
    `<g class="bars">${bars}${overflowBar}</g>` +
    `<g aria-hidden="true">${ticks.join('')}</g>` +
    `<g class="markers" aria-hidden="true">${markers}</g>` +
    baseline(frame, histogram.scale === 'log' ? 'processing time (ms, logarithmic scale)' : 'processing time (ms)') +
    '</svg>';
  const rows = counts.map((n, i) => [range(i), count(n)]);
  if (overflow !== undefined) rows.push([`${ms(overflow.fromMs)} or slower`, count(overflow.count)]);
  const lead = (
    [
      ['p50', histogram.p50],
      ['p90', histogram.p90],
      ['p99', histogram.p99],
      ['max', histogram.max],
    ] as const
  )
    .map(([name, value]) => `<span class="stat">${name} <b>${escapeHtml(ms(value))}</b></span>`)
    .join(' ');
  return figure(
    'latency',
    heading,
    lead,
    svg + dataTable('Data: deliveries per bin of processing time', ['processing time', 'deliveries'], rows),
  );
}

function retriesChart(input: HtmlReportInput): string {
  const heading = 'Retries per message';
  const buckets = retriesPerMessage(input.deliveries);
  if (buckets.length === 0)
    return figure('retries', heading, 'How many retries each message needed.', emptyState('No deliveries were recorded.'));
  const frame: Frame = { width: 560, height: 300, left: 58, right: 16, top: 26, bottom: 44 };
  const axis = countAxis(Math.max(...buckets.map((b) => b.messages)));
  const slot = plotWidth(frame) / buckets.length;
  const barWidth = Math.min(64, slot * 0.62);
  const bottom = frame.height - frame.bottom;
  const bars = buckets
    .map((b, i) => {
      const cx = frame.left + (i + 0.5) * slot;
      const h = b.messages === 0 ? 0 : Math.max(2, (b.messages / axis.top) * plotHeight(frame));
      const cls = b.retries === 0 ? 'c-applied' : 'c-retried';
      const label = `<text class="value" x="${n1(cx)}" y="${n1(bottom - h - 5)}" text-anchor="middle">${count(b.messages)}</text>`;
      const rect =
        b.messages === 0
          ? ''
          : `<rect class="${cls}" data-retries="${escapeHtml(b.label)}" data-count="${b.messages}" x="${n1(cx - barWidth / 2)}" y="${n1(bottom - h)}" width="${n1(barWidth)}" height="${n1(h)}">` +
            `<title>${escapeHtml(b.label)} ${b.retries === 1 && b.label === '1' ? 'retry' : 'retries'}: ${plural(b.messages, 'message')}</title></rect>`;
      const tick = `<text class="tick" x="${n1(cx)}" y="${bottom + 17}" text-anchor="middle">${escapeHtml(b.label)}</text>`;
      return rect + label + tick;
    })
    .join('');
  const messages = buckets.reduce((s, b) => s + b.messages, 0);
  const description =
    `Bars of messages by the number of retries they needed: ` +
    buckets.map((b) => `${b.label} ${b.label === '1' ? 'retry' : 'retries'}, ${plural(b.messages, 'message')}`).join('; ') +
    '.';
  const svg =
    svgOpen('retries', frame, 'Messages by the number of retries they needed', description) +
    countGrid(frame, axis, 'messages') +
    `<g class="bars">${bars}</g>` +
    baseline(frame, 'retries before the last delivery') +
    '</svg>';
  const firstTime = buckets[0]?.messages ?? 0;
  const lead = escapeHtml(`${share(firstTime, messages)} of ${plural(messages, 'message')} went through on their first delivery.`);
  return figure(
    'retries',
    heading,
    lead,
    legend([
      ['c-applied', 'first delivery'],
      ['c-retried', 'after retries'],
    ]) +
      svg +
      dataTable(
        'Data: messages by retries',
        ['retries', 'messages'],
        buckets.map((b) => [b.label, count(b.messages)]),
      ),
  );
}

/** Cuts a label to about `max` characters, at a character boundary, with an ellipsis. */
function truncate(label: string, max: number): string {
  const chars = Array.from(label);
  return chars.length <= max ? label : `${chars.slice(0, max - 1).join('')}…`;
}

function deadLettersChart(input: HtmlReportInput): string {
  const heading = 'Dead letters by reason';
  const bars = deadLetterBars(input.deadLettersByReason);
  if (bars.length === 0)
    return figure(
      'dead-letters',
      heading,
      'Messages moved to the dead-letter queue, by reason.',
      emptyState('Nothing was dead-lettered.'),
      true,
    );
  const row = 30;
  const frame: Frame = { width: 960, height: 8 + bars.length * row + 8, left: 330, right: 70, top: 8, bottom: 8 };
  const max = Math.max(...bars.map((b) => b.count));
  const shapes = bars
    .map((b, i) => {
      const y = frame.top + i * row;
      const w = Math.max(2, (b.count / max) * plotWidth(frame));
      const name = escapeHtml(truncate(b.reason, 48));
      return (
        `<g class="reason" data-reason="${escapeHtml(b.reason)}" data-count="${b.count}"${b.otherReasons !== undefined ? ' data-other="true"' : ''}>` +
        `<title>${escapeHtml(b.reason)}: ${plural(b.count, 'message')}</title>` +
        `<text class="label${b.otherReasons !== undefined ? ' other' : ''}" x="${frame.left - 10}" y="${y + row / 2 + 4}" text-anchor="end">${name}</text>` +
        `<rect class="c-dead" x="${frame.left}" y="${y + 5}" width="${n1(w)}" height="${row - 10}"/>` +
        `<text class="value" x="${n1(frame.left + w + 6)}" y="${y + row / 2 + 4}">${count(b.count)}</text></g>`
      );
    })
    .join('');
  const total = bars.reduce((s, b) => s + b.count, 0);
  const description = `Bars of dead-lettered messages by reason, most first: ${bars.map((b) => `${b.reason}, ${count(b.count)}`).join('; ')}.`;
  const svg = `${svgOpen('dead-letters', frame, 'Dead-lettered messages by reason', description) + shapes}</svg>`;
  const lead = escapeHtml(
    `${plural(total, 'message')} in the dead-letter queue, for ${plural(Object.values(input.deadLettersByReason).filter((n) => n > 0).length, 'reason')}.`,
  );
  return figure(
    'dead-letters',
    heading,
    lead,
    svg +
      dataTable(
        'Data: dead letters by reason (every reason)',
        ['reason', 'messages'],
        deadLetterBars(input.deadLettersByReason, Number.POSITIVE_INFINITY).map((b) => [b.reason, count(b.count)]),
      ),
    true,
  );
}

// ---------------------------------------------------------------------------------------------
// The page.
// ---------------------------------------------------------------------------------------------

const iconPassed =
  '<svg class="icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><circle cx="12" cy="12" r="11"/><path d="M6.5 12.5l3.5 3.5 7.5-8"/></svg>';
const iconFailed =
  '<svg class="icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><circle cx="12" cy="12" r="11"/><path d="M8 8l8 8M16 8l-8 8"/></svg>';

function verdict(input: HtmlReportInput): string {
  const { ok, problems } = input.check;
  const shown = problems.slice(0, 50);
  const list =
    problems.length === 0
      ? ''
      : `<ul class="problems">${shown.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}${problems.length > shown.length ? `<li>… and ${count(problems.length - shown.length)} more</li>` : ''}</ul>`;
  const sentence = ok
    ? input.totals.messages === 0
      ? 'No message was sent, so none could be lost or applied twice.'
      : `Each of the ${plural(input.totals.messages, 'message')} was applied once, acknowledged as a duplicate, or dead-lettered with a reason.`
    : problems.length === 0
      ? 'The check failed without naming a problem.'
      : `${plural(problems.length, 'problem')}:`;
  return (
    `<section class="verdict ${ok ? 'passed' : 'failed'}" data-verdict="${ok ? 'passed' : 'failed'}" aria-labelledby="verdict-heading">` +
    `${ok ? iconPassed : iconFailed}<div><h2 id="verdict-heading">Exactly-once check: ${ok ? 'passed' : 'FAILED'}</h2>` +
    `<p>${escapeHtml(sentence)}</p>${list}</div></section>`
  );
}

function totals(input: HtmlReportInput): string {
  const t = input.totals;
  const tile = (key: string, cls: string, label: string, value: number | string, note: string) =>
    `<div class="total ${cls}" data-total="${key}"><dt>${escapeHtml(label)}</dt><dd><span class="number">${typeof value === 'number' ? count(value) : escapeHtml(value)}</span>` +
    `${note === '' ? '' : `<span class="note">${escapeHtml(note)}</span>`}</dd></div>`;
  const of = (n: number) => (t.messages > 0 ? `${share(n, t.messages)} of messages` : '');
  const tiles = [
    tile('messages', 'c-none', 'Messages', t.messages, `${plural(input.deliveries.length, 'delivery', 'deliveries')}`),
    tile('applied', outcomeClass.applied, 'Applied', t.applied, of(t.applied)),
    tile('duplicates', outcomeClass.duplicate, 'Duplicates', t.duplicates, 'acknowledged, not applied again'),
    tile('retried', outcomeClass.retried, 'Retried', t.retried, 'deliveries failed, then retried'),
    tile('deadLettered', outcomeClass['dead-lettered'], 'Dead-lettered', t.deadLettered, of(t.deadLettered)),
  ];
  if (input.outbox !== undefined) {
    const { written, published } = input.outbox;
    const pending = written > published ? ` · ${count(written - published)} not yet` : '';
    tiles.push(tile('outbox', 'c-outbox', 'Outbox', published, `published of ${count(written)} written${pending}`));
  }
  if (input.redeliveries !== undefined) {
    const { total, perMessage, byReason } = input.redeliveries;
    const [top] = Object.entries(byReason).sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
    const most = top === undefined ? '' : ` · most for ${top[0]} (${count(top[1])})`;
    tiles.push(tile('redeliveries', outcomeClass.retried, 'Redeliveries', total, `${round(perMessage, 3)} per message${most}`));
  }
  if (input.parking !== undefined) {
    const { parked, appliedFromPark, settledFromPark } = input.parking;
    tiles.push(
      tile(
        'parked',
        'c-none',
        'Parked',
        parked,
        `out of order · ${count(appliedFromPark)} applied, ${count(settledFromPark)} settled from the park`,
      ),
    );
  }
  if (input.endToEndMs !== undefined) {
    const { p50, p90, p99 } = input.endToEndMs;
    tiles.push(
      tile('endToEnd', 'c-latency', 'End to end (p50)', ms(p50), `per message, send to outcome · p90 ${ms(p90)} · p99 ${ms(p99)}`),
    );
  }
  return `<section aria-label="Totals"><dl class="totals">${tiles.join('')}</dl></section>`;
}

function mix(input: HtmlReportInput): string {
  // The share of each final outcome among all final outcomes, as one strip: the run at a glance.
  const parts = [
    ['applied', input.totals.applied],
    ['duplicate', input.totals.duplicates],
    ['dead-lettered', input.totals.deadLettered],
  ] as const;
  const whole = parts.reduce((s, [, n]) => s + n, 0);
  if (whole === 0) return '';
  const shown = parts.filter(([, n]) => n > 0);
  const segments = shown.map(([o, n]) => `<span class="${outcomeClass[o]}" style="flex-grow:${n}"></span>`).join('');
  const text = shown.map(([o, n]) => `${share(n, whole)} ${outcomeNames[o]}`).join(', ');
  const key = shown
    .map(
      ([o, n]) =>
        `<li><span class="swatch ${outcomeClass[o]}" aria-hidden="true"></span>${escapeHtml(`${share(n, whole)} ${outcomeNames[o]}`)}</li>`,
    )
    .join('');
  return (
    `<figure class="mix" aria-labelledby="mix-caption"><figcaption id="mix-caption" class="visually-hidden">${escapeHtml(`Final outcomes: ${text}`)}</figcaption>` +
    `<div class="strip" aria-hidden="true">${segments}</div><ul class="legend" aria-hidden="true"><li class="lead">final outcomes</li>${key}</ul></figure>`
  );
}

function header(input: HtmlReportInput): string {
  const started = new Date(Date.parse(input.startedAt));
  const when = `${started.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  const facts = [
    ['source', sourceNames[input.source]],
    ['started', when],
    ['duration', duration(input.durationMs)],
  ] as const;
  return (
    `<header><p class="kicker">Idempotent consumer · local run</p><h1>${escapeHtml(input.title)}</h1>` +
    `<dl class="facts">${facts.map(([k, v]) => `<div><dt>${k}</dt><dd>${escapeHtml(v)}</dd></div>`).join('')}</dl></header>`
  );
}

function notes(input: HtmlReportInput): string {
  const list = input.notes ?? [];
  if (list.length === 0) return '';
  return `<section class="notes" aria-label="Notes"><ul>${list.map((n) => `<li><b>Note:</b> ${escapeHtml(n)}</li>`).join('')}</ul></section>`;
}

const styles = `
:root{--bg:#f4f6f8;--card:#fff;--ink:#18202a;--muted:#4b5563;--line:#d6dbe1;--grid:#e7eaee;
--applied:#0f766e;--duplicate:#64748b;--retried:#c2570c;--dead:#b42318;--latency:#3158a8;--outbox:#6d28d9;
--ok-bg:#e6f4ec;--ok-ink:#14532d;--ok-line:#15803d;--bad-bg:#fdecec;--bad-ink:#7f1d1d;--bad-line:#b42318;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#111418;--card:#1b2027;--ink:#eef1f4;--muted:#b4bcc6;--line:#343b45;--grid:#2a3038;
--applied:#2cb5a5;--duplicate:#94a3b8;--retried:#f59e0b;--dead:#f87171;--latency:#7aa2f7;--outbox:#a78bfa;
--ok-bg:#12301f;--ok-ink:#bbf7d0;--ok-line:#22c55e;--bad-bg:#3a1414;--bad-ink:#fecaca;--bad-line:#f87171}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans","DejaVu Sans",sans-serif}
main{max-width:1200px;margin:0 auto;padding:28px 24px 40px}
header{display:flex;flex-wrap:wrap;align-items:flex-end;justify-content:space-between;gap:8px 24px;margin-bottom:18px}
.kicker{margin:0;color:var(--muted);font-size:13px;letter-spacing:.04em;text-transform:uppercase;width:100%}
h1{margin:0;font-size:28px;line-height:1.2;overflow-wrap:anywhere}
h2{margin:0;font-size:17px}
.facts{display:flex;flex-wrap:wrap;gap:6px 22px;margin:0}
.facts div{display:flex;gap:6px}.facts dt{color:var(--muted)}.facts dd{margin:0;font-weight:600}
.verdict{display:flex;gap:16px;align-items:flex-start;padding:16px 20px;border-radius:10px;border:1px solid;border-left-width:6px;margin-bottom:18px}
.verdict.passed{background:var(--ok-bg);color:var(--ok-ink);border-color:var(--ok-line)}
.verdict.failed{background:var(--bad-bg);color:var(--bad-ink);border-color:var(--bad-line)}
.verdict h2{font-size:21px}.verdict p{margin:2px 0 0}
.verdict .icon{flex:none;width:36px;height:36px;fill:none;stroke:currentColor;stroke-width:2.2;stroke-linecap:round;stroke-linejoin:round}
.problems{margin:8px 0 0;padding-left:20px;overflow-wrap:anywhere}
.notes ul{margin:0 0 18px;padding:10px 16px 10px 34px;background:var(--card);border:1px solid var(--line);border-radius:10px;overflow-wrap:anywhere}
.totals{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin:0 0 10px}
.total{background:var(--card);border:1px solid var(--line);border-top:5px solid var(--muted);border-radius:10px;padding:10px 14px}
.total.c-applied{border-top-color:var(--applied)}.total.c-duplicate{border-top-color:var(--duplicate)}.total.c-retried{border-top-color:var(--retried)}
.total.c-dead{border-top-color:var(--dead)}.total.c-outbox{border-top-color:var(--outbox)}.total.c-latency{border-top-color:var(--latency)}.total.c-none{border-top-color:var(--ink)}
.total dt{color:var(--muted);font-size:13px;font-weight:600}
.total dd{margin:0}.total .number{display:block;font-size:30px;font-weight:700;line-height:1.2;font-variant-numeric:tabular-nums}
.total .note{display:block;color:var(--muted);font-size:12.5px}
.mix{margin:0 0 20px}.mix .strip{display:flex;height:12px;border-radius:6px;overflow:hidden;background:var(--grid);margin-bottom:6px}
.mix .strip span{min-width:4px}.mix .legend{color:var(--muted)}.mix .lead{font-weight:600}
.strip .c-applied{background:var(--applied)}.strip .c-duplicate{background:var(--duplicate)}.strip .c-dead{background:var(--dead)}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:16px}
.card{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px 12px;min-width:0}
.card.wide{grid-column:1/-1}
figcaption p{margin:2px 0 6px;color:var(--muted)}
.stat{display:inline-block;margin-right:10px}.stat b{color:var(--ink)}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;list-style:none;margin:0 0 4px;padding:0;font-size:13.5px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
.swatch.c-applied{background:var(--applied)}.swatch.c-duplicate{background:var(--duplicate)}.swatch.c-retried{background:var(--retried)}.swatch.c-dead{background:var(--dead)}
svg{display:block;width:100%;height:auto;overflow:visible}
svg text{fill:var(--muted);font-size:12px;font-family:inherit}
svg .axis-title{font-size:12.5px}
svg .value{fill:var(--ink);font-weight:600;font-variant-numeric:tabular-nums}
svg .label{fill:var(--ink)}svg .label.other{font-style:italic;fill:var(--muted)}
svg .grid{stroke:var(--grid);stroke-width:1}svg .axis{stroke:var(--muted);stroke-width:1}
.c-applied{fill:var(--applied)}.c-duplicate{fill:var(--duplicate)}.c-retried{fill:var(--retried)}.c-dead{fill:var(--dead)}
.c-latency{fill:var(--latency)}.c-latency.overflow{fill:var(--muted)}
.marker line{stroke:var(--ink);stroke-width:1.2;stroke-dasharray:4 3}.marker text{fill:var(--ink);font-weight:600}
.empty{color:var(--muted);font-style:italic;padding:24px 0;text-align:center}
details{margin-top:6px;font-size:13.5px}summary{cursor:pointer;color:var(--muted)}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
th,td{padding:2px 10px;border-bottom:1px solid var(--grid);text-align:right}th[scope=row]{text-align:left;font-weight:500;overflow-wrap:anywhere}
thead th{text-align:right;color:var(--muted)}thead th:first-child{text-align:left}
footer{margin-top:22px;color:var(--muted);font-size:12.5px}
@media (max-width:520px){.charts{grid-template-columns:1fr}main{padding:16px 12px}}
`
  .trim()
  .replace(/\n/g, '');

/**
 * Renders the picture of a local run as one self-contained HTML page: inline CSS and inline
 * SVG, no script, no external resource (a Content-Security-Policy in the page forbids both),
 * readable from `file://` and without JavaScript. Every string from the input is escaped.
 * The charts draw binned data, so 10,000 deliveries make a page of a few dozen kilobytes.
 *
 * @returns the page, UTF-8 text beginning with `<!doctype html>`
 * @throws HtmlReportInputError when the input has a wrong shape or value (see `assertHtmlReportInput`)
 */
export function renderHtmlReport(input: HtmlReportInput): string {
  assertHtmlReportInput(input);
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    `<title>${escapeHtml(input.title)} · ${input.check.ok ? 'passed' : 'FAILED'}</title>`,
    `<style>${styles}</style></head><body><main>`,
    header(input),
    verdict(input),
    notes(input),
    totals(input),
    mix(input),
    '<section class="charts" aria-label="Charts">',
    outcomesOverTime(input),
    latencyDistribution(input),
    retriesChart(input),
    deadLettersChart(input),
    '</section>',
    `<footer>Processing times are per delivery; percentiles by the nearest-rank method. Each chart's data is in the table under it; the page needs no script and no network.</footer>`,
    '</main></body></html>',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Files and screenshots.
// ---------------------------------------------------------------------------------------------

/** A screenshot could not be taken: Chromium or `playwright-core` is missing, or the browser failed. */
export class HtmlReportScreenshotError extends LocalRuntimeError {}

/** The Chromium that {@link openHeadlessChromium} starts by default: `$CHROMIUM_PATH`, else Debian's `/usr/bin/chromium`. */
export function defaultChromiumPath(): string {
  return process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
}

/** The flags Chromium is started with: headless, no sandbox (root in containers), and no traffic of its own. */
export const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

/** A headless Chromium with a fresh profile: its context, and `close()` that stops it and deletes the profile. */
export interface HeadlessChromium {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Starts the system's Chromium headless, driven by `playwright-core` (never a downloaded
 * browser), with {@link chromiumArgs} and a fresh `--user-data-dir` in the temporary directory.
 *
 * @param options.executablePath the browser; `defaultChromiumPath` by default
 * @param options.viewport the page size in CSS pixels; 1280 × 900 by default
 * @throws HtmlReportScreenshotError when the browser is not there, `playwright-core` is not
 *   installed (it is a development dependency), or the browser does not start
 */
export async function openHeadlessChromium(
  options: { readonly executablePath?: string; readonly viewport?: { readonly width: number; readonly height: number } } = {},
): Promise<HeadlessChromium> {
  const executablePath = options.executablePath ?? defaultChromiumPath();
  if (!existsSync(executablePath)) {
    throw new HtmlReportScreenshotError(
      `Chromium is not at ${executablePath}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH.`,
    );
  }
  let chromium: typeof import('playwright-core').chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (error) {
    throw new HtmlReportScreenshotError('A screenshot needs the npm package playwright-core: npm install --save-dev playwright-core', {
      cause: error,
    });
  }
  const profile = await mkdtemp(join(tmpdir(), 'html-report-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath,
      headless: true,
      args: [...chromiumArgs],
      viewport: options.viewport ?? { width: 1280, height: 900 },
      timeout: 120_000,
    });
    return {
      context,
      close: async () => {
        try {
          await context.close();
        } finally {
          await rm(profile, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw new HtmlReportScreenshotError(
      `Chromium (${executablePath}) did not start: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/**
 * Takes a PNG of the whole page of an HTML file, rendered in headless Chromium
 * ({@link openHeadlessChromium}), 1280 CSS pixels wide.
 *
 * @throws HtmlReportScreenshotError as {@link openHeadlessChromium} does, or when the page does not load
 */
export async function screenshotHtmlFile(
  htmlPath: string,
  pngPath: string,
  options: { readonly executablePath?: string } = {},
): Promise<void> {
  const browser = await openHeadlessChromium(options);
  try {
    const page = await browser.context.newPage();
    await page.goto(pathToFileURL(resolve(htmlPath)).href, { waitUntil: 'load' });
    await page.screenshot({ path: pngPath, fullPage: true, animations: 'disabled' });
  } catch (error) {
    if (error instanceof HtmlReportScreenshotError) throw error;
    throw new HtmlReportScreenshotError(`The screenshot of ${htmlPath} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  } finally {
    await browser.close();
  }
}

/** Options of {@link writeHtmlReport}. */
export interface WriteHtmlReportOptions {
  /** Also write a PNG of the page, rendered in headless Chromium, at this path. */
  readonly screenshot?: string;
  /** The Chromium for the screenshot; `defaultChromiumPath` by default. */
  readonly chromiumPath?: string;
}

/**
 * Writes the page of `renderHtmlReport` to `path` (whole or not at all: written beside it,
 * then renamed), and a screenshot of it when asked.
 *
 * @returns the page's size, in bytes
 * @throws HtmlReportInputError when the input is not valid (nothing is written)
 * @throws HtmlReportScreenshotError when the screenshot fails (the page is written)
 * @throws the file system's error when the folder does not exist or cannot be written
 */
export async function writeHtmlReport(
  path: string,
  input: HtmlReportInput,
  options: WriteHtmlReportOptions = {},
): Promise<{ bytes: number }> {
  const html = renderHtmlReport(input);
  const partial = join(dirname(path), `.${process.pid}.${Date.now()}.html-report.partial`);
  try {
    await writeFile(partial, html, 'utf8');
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  if (options.screenshot !== undefined) {
    await screenshotHtmlFile(path, options.screenshot, options.chromiumPath !== undefined ? { executablePath: options.chromiumPath } : {});
  }
  return { bytes: Buffer.byteLength(html, 'utf8') };
}
