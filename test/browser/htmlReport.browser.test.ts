/**
 * The HTML report as a person sees it: rendered by Debian's Chromium (headless, driven by
 * playwright-core) from a file, checked for what is on screen. `REPORT_SCREENSHOT=path` keeps a
 * screenshot of the page at that path.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultChromiumPath, openHeadlessChromium, writeHtmlReport, type HeadlessChromium } from '../../packages/local/src/htmlReport.js';
import type { HtmlReportDelivery, HtmlReportInput } from '../../packages/local/src/htmlReportInput.js';

// The page's globals that this file's in-page functions use: declared here, in this module only,
// since the project compiles without the DOM library.
interface PageElement {
  readonly parentElement: PageElement | null;
  readonly textContent: string | null;
  getAttributeNames(): string[];
}
declare const document: {
  readonly scripts: { readonly length: number };
  querySelectorAll(selector: string): Iterable<PageElement>;
  getElementById(id: string): PageElement | null;
};
declare function getComputedStyle(element: PageElement): {
  readonly color: string;
  readonly fill: string;
  readonly backgroundColor: string;
};

/**
 * Without a Chromium the page cannot be looked at: the tests are skipped and say why, unless
 * `IC_REQUIRE_BROWSER=1` (CI sets it, having installed Debian's chromium), which makes it a failure.
 */
const chromiumPath = defaultChromiumPath();
const noChromium =
  existsSync(chromiumPath) || process.env.IC_REQUIRE_BROWSER === '1'
    ? undefined
    : `Chromium is not at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`;
if (noChromium !== undefined) process.stderr.write(`test/browser: skipped: ${noChromium}\n`);

const hostileReason = '<script>alert("dlq")</script> & more';

/**
 * A realistic run, the same each time (seeded): messages over 24 s, latencies around 11 ms with
 * a slow tail of 1 %, some retried once or twice, some duplicates, a few dead-lettered for four
 * reasons (one of them hostile markup).
 */
function realisticRun(messages: number, seed = 7): HtmlReportInput {
  let state = seed;
  const random = () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const latency = () => Math.exp(Math.log(11) + 0.45 * gaussian()) + (random() < 0.01 ? 150 + random() * 200 : 0);
  const reasons = ['ValidationError', 'PoisonMessage', 'MaxAttemptsExceeded', hostileReason];
  const durationMs = 24_000;
  const deliveries: HtmlReportDelivery[] = [];
  const deadLettersByReason: Record<string, number> = {};
  const totals = { messages, applied: 0, duplicates: 0, retried: 0, deadLettered: 0 };
  for (let i = 0; i < messages; i += 1) {
    const messageId = `msg-${i}`;
    let atMs = 400 + (i / messages) * (durationMs - 3000) + random() * 300;
    const r = random();
    const failures = r < 0.015 ? 2 : r < 0.05 ? 1 : 0;
    let attempt = 1;
    for (let f = 0; f < failures; f += 1) {
      deliveries.push({ messageId, outcome: 'retried', atMs, durationMs: latency(), attempt });
      totals.retried += 1;
      attempt += 1;
      atMs += 1000 + random() * 500;
    }
    const last = random();
    if (last < 0.01) {
      // Skewed, so that the reasons have different counts.
      const reason = reasons[Math.floor(random() * random() * reasons.length)] ?? 'Unknown';
      deliveries.push({ messageId, outcome: 'dead-lettered', atMs, durationMs: latency(), attempt, reason });
      deadLettersByReason[reason] = (deadLettersByReason[reason] ?? 0) + 1;
      totals.deadLettered += 1;
    } else if (last < 0.05) {
      deliveries.push({ messageId, outcome: 'duplicate', atMs, durationMs: latency() / 3, attempt });
      totals.duplicates += 1;
    } else {
      deliveries.push({ messageId, outcome: 'applied', atMs, durationMs: latency(), attempt });
      totals.applied += 1;
    }
  }
  return {
    title: 'Local run of samples/events.jsonl',
    source: 'sqs',
    startedAt: '2025-03-14T09:26:53.589Z',
    durationMs,
    totals,
    outbox: { written: totals.applied, published: totals.applied - 3 },
    deliveries,
    deadLettersByReason,
    check: { ok: true, problems: [] },
    notes: ["moved to the DLQ by the queue's redrive policy, without a reason: lines 88"],
  };
}

const run = realisticRun(2000);
const en = new Intl.NumberFormat('en-US');

let dir: string;
let browser: HeadlessChromium;
let page: Page;
const consoleErrors: string[] = [];
const requests: string[] = [];

/** Opens a report file in a fresh page that records console errors and every request. */
async function open(path: string): Promise<Page> {
  const opened = await browser.context.newPage();
  opened.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') consoleErrors.push(`${message.type()}: ${message.text()}`);
  });
  opened.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
  await opened.goto(pathToFileURL(path).href, { waitUntil: 'load' });
  return opened;
}

beforeAll(async () => {
  if (noChromium !== undefined) return;
  dir = await mkdtemp(join(tmpdir(), 'html-report-browser-'));
  browser = await openHeadlessChromium();
  browser.context.on('request', (request) => requests.push(request.url()));
  // Anything but the file itself is refused (and recorded above): the page must need nothing else.
  await browser.context.route(
    (url) => url.protocol !== 'file:',
    (route) => route.abort('blockedbyclient'),
  );
  const path = join(dir, 'run.html');
  await writeHtmlReport(path, run);
  page = await open(path);
});

afterAll(async () => {
  await browser?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

// Skipped, with the reason printed, when /usr/bin/chromium is missing (CI sets IC_REQUIRE_BROWSER=1, which fails instead).
/* skipped: when /usr/bin/chromium is missing (the reason is printed; CI fails instead) */ describe.skipIf(noChromium !== undefined)(
  noChromium === undefined ? 'the HTML report in Chromium' : `the HTML report in Chromium (skipped: ${noChromium})`,
  () => {
    it('says the verdict first, in words', async () => {
      const verdict = page.locator('[data-verdict]');
      await expect(verdict.getAttribute('data-verdict')).resolves.toBe('passed');
      expect(await page.getByRole('heading', { level: 2, name: /Exactly-once check/ }).innerText()).toBe('Exactly-once check: passed');
      expect(await verdict.innerText()).toContain(`Each of the ${en.format(run.totals.messages)} messages was applied once`);
      expect(await page.title()).toBe('Local run of samples/events.jsonl · passed');
    });

    it('shows the totals and the outbox', async () => {
      const shown = async (key: string) => page.locator(`[data-total="${key}"] .number`).innerText();
      expect(await shown('messages')).toBe(en.format(run.totals.messages));
      expect(await shown('applied')).toBe(en.format(run.totals.applied));
      expect(await shown('duplicates')).toBe(en.format(run.totals.duplicates));
      expect(await shown('retried')).toBe(en.format(run.totals.retried));
      expect(await shown('deadLettered')).toBe(en.format(run.totals.deadLettered));
      expect(await shown('outbox')).toBe(en.format(run.outbox?.published ?? -1));
      expect(await page.locator('[data-total="outbox"] .note').innerText()).toContain('3 not yet');
    });

    it('draws outcomes over time: one stacked bar per second with deliveries, taller for more', async () => {
      const chart = page.locator('[data-chart="outcomes-over-time"]');
      const seconds = new Set(run.deliveries.map((d) => Math.floor(d.atMs / 1000)));
      await expect(chart.locator('g.bar').count()).resolves.toBe(seconds.size);
      for (const outcome of ['applied', 'duplicate', 'retried', 'dead-lettered'] as const) {
        const drawn = await chart
          .locator(`rect[data-outcome="${outcome}"]`)
          .evaluateAll((rects) => rects.reduce((sum, r) => sum + Number(r.getAttribute('data-count')), 0));
        expect(drawn, outcome).toBe(run.deliveries.filter((d) => d.outcome === outcome).length);
      }
      const bars = await chart
        .locator('g.bar')
        .evaluateAll((groups) =>
          groups.map((g) => ({ total: Number(g.getAttribute('data-total')), height: g.getBoundingClientRect().height })),
        );
      const byTotal = [...bars].sort((a, b) => a.total - b.total);
      for (let i = 1; i < byTotal.length; i += 1) {
        const [lower, higher] = [byTotal[i - 1]!, byTotal[i]!];
        if (higher.total > lower.total) expect(higher.height).toBeGreaterThan(lower.height);
      }
      await expect(chart.locator('.legend li').allInnerTexts()).resolves.toEqual(['applied', 'duplicate', 'retried', 'dead-lettered']);
    });

    it('draws the latency histogram with every delivery, and p50 ≤ p90 ≤ p99 marked in order', async () => {
      const chart = page.locator('[data-chart="latency"]');
      const counted = await chart
        .locator('rect[data-count]')
        .evaluateAll((rects) => rects.reduce((sum, r) => sum + Number(r.getAttribute('data-count')), 0));
      expect(counted).toBe(run.deliveries.length);
      const sorted = run.deliveries.map((d) => d.durationMs).sort((a, b) => a - b);
      const nearestRank = (p: number) => sorted[Math.ceil((p / 100) * sorted.length) - 1];
      const markers = await chart.locator('g.marker').evaluateAll((groups) =>
        groups.map((g) => ({
          name: g.getAttribute('data-percentile'),
          value: Number(g.getAttribute('data-value')),
          label: g.querySelector('text')?.textContent ?? '',
          x: g.querySelector('line')?.getBoundingClientRect().x ?? Number.NaN,
        })),
      );
      expect(markers.map((m) => m.name)).toEqual(['p50', 'p90', 'p99']);
      expect(markers.map((m) => m.value)).toEqual([nearestRank(50), nearestRank(90), nearestRank(99)]);
      expect(markers.map((m) => m.label)).toEqual([
        expect.stringMatching(/^p50 \d+ ms$/),
        expect.stringMatching(/^p90 \d+ ms$/),
        expect.stringMatching(/^p99 \d+ ms$/),
      ]);
      expect(markers[0]!.x).toBeLessThan(markers[1]!.x);
      expect(markers[1]!.x).toBeLessThan(markers[2]!.x);
      expect(await chart.locator('figcaption').innerText()).toMatch(/p50 \d+ ms\s+p90 \d+ ms\s+p99 \d+ ms\s+max \d+ ms/);
    });

    it('draws retries per message: one bar per number of retries, labelled with its count', async () => {
      const retries = new Map<string, number>();
      for (const d of run.deliveries) retries.set(d.messageId, (retries.get(d.messageId) ?? 0) + (d.outcome === 'retried' ? 1 : 0));
      const expected = [0, 1, 2].map((n) => [...retries.values()].filter((r) => r === n).length);
      const chart = page.locator('[data-chart="retries"]');
      const bars = await chart.locator('rect[data-retries]').evaluateAll((rects) =>
        rects.map((r) => ({
          retries: r.getAttribute('data-retries'),
          count: Number(r.getAttribute('data-count')),
          height: r.getBoundingClientRect().height,
        })),
      );
      expect(bars.map((b) => [b.retries, b.count])).toEqual([
        ['0', expected[0]],
        ['1', expected[1]],
        ['2', expected[2]],
      ]);
      expect(bars[0]!.height).toBeGreaterThan(bars[1]!.height);
      expect(bars[1]!.height).toBeGreaterThan(bars[2]!.height);
      await expect(chart.locator('text.value').allTextContents()).resolves.toEqual(expected.map((n) => en.format(n)));
    });

    it('draws dead letters by reason: each reason named, most first, longer bars for more', async () => {
      const expected = Object.entries(run.deadLettersByReason).sort(([a, n], [b, m]) => m - n || (a < b ? -1 : 1));
      expect(expected.length).toBe(4);
      const chart = page.locator('[data-chart="dead-letters"]');
      const bars = await chart.locator('g.reason').evaluateAll((groups) =>
        groups.map((g) => ({
          label: g.querySelector('text.label')?.textContent ?? '',
          value: g.querySelector('text.value')?.textContent ?? '',
          width: g.querySelector('rect')?.getBoundingClientRect().width ?? Number.NaN,
        })),
      );
      expect(bars.map((b) => b.label)).toEqual(expected.map(([reason]) => reason));
      expect(bars.map((b) => b.value)).toEqual(expected.map(([, n]) => String(n)));
      for (let i = 1; i < bars.length; i += 1) {
        const [more, fewer] = [expected[i - 1]![1], expected[i]![1]];
        if (more > fewer) expect(bars[i - 1]!.width).toBeGreaterThan(bars[i]!.width);
        else expect(bars[i - 1]!.width).toBeCloseTo(bars[i]!.width, 1);
      }
    });

    it('shows user data as text: the hostile reason is visible, not run', async () => {
      await expect(page.locator('[data-chart="dead-letters"]').getByText(hostileReason, { exact: true }).count()).resolves.toBeGreaterThan(
        0,
      );
      const scripts = await page.evaluate(() => ({
        scripts: document.scripts.length,
        handlers: [...document.querySelectorAll('*')].flatMap((e) => e.getAttributeNames()).filter((n) => n.startsWith('on')).length,
      }));
      expect(scripts).toEqual({ scripts: 0, handlers: 0 });
    });

    it('gives every chart a title, a text description and its data as a table', async () => {
      const charts = await page
        .locator('svg[role="img"]')
        .evaluateAll((svgs) =>
          svgs.map((svg) =>
            (svg.getAttribute('aria-labelledby') ?? '')
              .split(' ')
              .map((id: string) => document.getElementById(id)?.textContent?.trim() ?? ''),
          ),
        );
      expect(charts).toHaveLength(4);
      for (const [title, description] of charts) {
        expect(title?.length).toBeGreaterThan(10);
        expect(description?.length).toBeGreaterThan(40);
      }
      const tables = await page.locator('figure[data-chart]').evaluateAll((figures) =>
        figures.map((f) => ({
          chart: f.getAttribute('data-chart'),
          heading: f.querySelector('h2')?.textContent,
          rows: f.querySelectorAll('details table tbody tr').length,
        })),
      );
      expect(tables.map((t) => t.chart)).toEqual(['outcomes-over-time', 'latency', 'retries', 'dead-letters']);
      expect(tables.map((t) => t.heading)).toEqual([
        'Outcomes over time',
        'Latency distribution',
        'Retries per message',
        'Dead letters by reason',
      ]);
      for (const t of tables) expect(t.rows, t.chart ?? '').toBeGreaterThan(0);
      expect(await page.locator('html').getAttribute('lang')).toBe('en');
    });

    for (const colorScheme of ['light', 'dark'] as const) {
      it(`keeps text at 4.5:1 contrast and chart marks at 3:1 (${colorScheme} scheme)`, async () => {
        await page.emulateMedia({ colorScheme });
        const contrasts = await page.evaluate(() => {
          const rgb = (css: string): number[] => (css.match(/[\d.]+/g) ?? []).map(Number);
          const luminance = ([r, g, b]: readonly number[]) =>
            [r, g, b]
              .map((c) => ((c ?? 0) / 255 <= 0.03928 ? (c ?? 0) / 255 / 12.92 : (((c ?? 0) / 255 + 0.055) / 1.055) ** 2.4))
              .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i]!, 0);
          const background = (element: PageElement): number[] => {
            for (let e: PageElement | null = element; e !== null; e = e.parentElement) {
              const color = rgb(getComputedStyle(e).backgroundColor);
              if (color.length === 3 || (color[3] ?? 0) > 0) return color;
            }
            return [255, 255, 255];
          };
          const ratio = (a: readonly number[], b: readonly number[]) => {
            const [l1, l2] = [luminance(a), luminance(b)].sort((x, y) => y - x);
            return (l1! + 0.05) / (l2! + 0.05);
          };
          const measure = (selector: string, property: 'color' | 'fill') => {
            const elements = [...document.querySelectorAll(selector)];
            if (elements.length === 0) return { selector, ratio: Number.NaN };
            return { selector, ratio: Math.min(...elements.map((e) => ratio(rgb(getComputedStyle(e)[property]), background(e)))) };
          };
          const text = [
            'h1',
            '.kicker',
            '.facts dt',
            '.facts dd',
            '.verdict h2',
            '.verdict p',
            '.notes li',
            '.total dt',
            '.total .number',
            '.total .note',
            '.mix .legend li',
            'figcaption h2',
            'figcaption p',
            '.legend li',
            'summary',
            'footer',
          ].map((s) => measure(s, 'color'));
          const svgText = ['svg text.tick', 'svg text.axis-title', 'svg text.value', 'svg text.label', '.marker text'].map((s) =>
            measure(s, 'fill'),
          );
          const marks = ['rect.c-applied', 'rect.c-duplicate', 'rect.c-retried', 'rect.c-dead', 'rect.c-latency'].map((s) =>
            measure(s, 'fill'),
          );
          return { text: [...text, ...svgText], marks };
        });
        for (const { selector, ratio } of contrasts.text) expect(ratio, selector).toBeGreaterThanOrEqual(4.5);
        for (const { selector, ratio } of contrasts.marks) expect(ratio, selector).toBeGreaterThanOrEqual(3);
        await page.emulateMedia({ colorScheme: null });
      });
    }

    it('shows a failed check with its problems, and a large run with a bounded number of shapes', async () => {
      const large = realisticRun(10_000, 11);
      const path = join(dir, 'large-failed.html');
      await writeHtmlReport(path, {
        ...large,
        check: { ok: false, problems: ['2 message(s) have no final outcome (lost): lines 17, 342', 'applied more than once: <k-42>'] },
      });
      const failed = await open(path);
      try {
        expect(await failed.getByRole('heading', { level: 2, name: /Exactly-once check/ }).innerText()).toBe('Exactly-once check: FAILED');
        await expect(failed.locator('.verdict .problems li').allInnerTexts()).resolves.toEqual([
          '2 message(s) have no final outcome (lost): lines 17, 342',
          'applied more than once: <k-42>',
        ]);
        const shapes = await failed.evaluate(() => [...document.querySelectorAll('rect, g')].length);
        expect(shapes).toBeGreaterThan(50);
        expect(shapes).toBeLessThan(600);
        const drawn = await failed
          .locator('[data-chart="outcomes-over-time"] rect')
          .evaluateAll((rects) => rects.reduce((s, r) => s + Number(r.getAttribute('data-count')), 0));
        expect(drawn).toBe(large.deliveries.length);
      } finally {
        await failed.close();
      }
    });

    it('needed nothing but its own file, and logged no error', async () => {
      expect(requests.filter((url) => !url.startsWith('file://'))).toEqual([]);
      expect(requests.length).toBeGreaterThanOrEqual(2);
      await expect(page.evaluate(() => performance.getEntriesByType('resource').length)).resolves.toBe(0);
      expect(consoleErrors).toEqual([]);
    });
  },
);

// Skipped, with the reason printed, when /usr/bin/chromium is missing (CI sets IC_REQUIRE_BROWSER=1, which fails instead).
/* skipped: when /usr/bin/chromium is missing (the reason is printed; CI fails instead) */ describe.skipIf(noChromium !== undefined)(
  noChromium === undefined ? 'writeHtmlReport with a screenshot' : `writeHtmlReport with a screenshot (skipped: ${noChromium})`,
  () => {
    it('writes a PNG of the whole page, 1280 pixels wide (kept at $REPORT_SCREENSHOT when set)', async () => {
      const png =
        process.env.REPORT_SCREENSHOT !== undefined && process.env.REPORT_SCREENSHOT !== ''
          ? resolve(process.env.REPORT_SCREENSHOT)
          : join(dir, 'run.png');
      await writeHtmlReport(join(dir, 'shot.html'), run, { screenshot: png });
      const image = await readFile(png);
      expect(image.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      expect(image.readUInt32BE(16)).toBe(1280);
      expect(image.readUInt32BE(20)).toBeGreaterThan(1200);
    });
  },
);
