import type { ArchiveResult } from './archive.js';
import type { DecisionsResult } from './dryRunDecisions.js';
import { formatDuration } from './duration.js';
import type { ListResult } from './list.js';
import type { RedriveItem, RedriveResult } from './redrive.js';
import { parseSqsQueueArn } from './queueUrl.js';
import type { ReplayResult } from './replay.js';
import type { ShowResult } from './show.js';

/**
 * Formats rows as a plain-text table: columns padded to their widest cell, cells longer than
 * `maxWidth` characters cut with `…`.
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[], maxWidth = 60): string {
  const cut = (cell: string): string => {
    const flat = cell.replace(/\s+/g, ' ');
    return flat.length > maxWidth ? `${flat.slice(0, maxWidth - 1)}…` : flat;
  };
  const cells = [headers.map(cut), ...rows.map((row) => row.map(cut))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}

/** `list` as text: one table per reason, largest group first. */
export function formatList(result: ListResult): string {
  const lines = [
    `Dead-letter queue ${result.queueUrl} (${result.fifo ? 'FIFO' : 'standard'}): ${result.listed} message(s) listed, ` +
      `${result.seen} seen, about ${result.approximateNumberOfMessages} in the queue. None was consumed.`,
  ];
  for (const group of result.groups) {
    const movedByPolicy = group.messages.every((m) => !m.deadLettered);
    lines.push('', `${group.reason} (${group.count})${movedByPolicy ? ': moved by the redrive policy, no reason given' : ''}`);
    const rows = group.messages.map((m) => [
      m.messageId,
      m.errorType !== undefined ? `${m.errorType}: ${m.errorMessage ?? ''}` : '-',
      m.kafka !== undefined ? `${shortSource(m.source)} ${m.kafka}` : shortSource(m.source),
      m.ageSeconds !== undefined ? formatDuration(m.ageSeconds * 1000) : '-',
      m.attempts !== undefined ? String(m.attempts) : '-',
      m.attributes === undefined ? '(unreadable)' : attributeList(m.attributes),
    ]);
    lines.push(indent(formatTable(['MESSAGE ID', 'ERROR', 'SOURCE', 'AGE', 'ATTEMPTS', 'ATTRIBUTES'], rows)));
  }
  if (result.groups.length === 0) lines.push('', 'No messages.');
  return withWarnings(lines, result.warnings);
}

/** `show` as text: the dead-letter fields, the attributes, then the body as it is. */
export function formatShow(result: ShowResult): string {
  const m = result.message;
  const d = m.deadLetter;
  const field = (name: string, value: unknown): string[] =>
    value === undefined ? [] : [[name, typeof value === 'string' ? value : JSON.stringify(value)]].map(([k, v]) => `  ${k}: ${v}`);
  const lines = [
    `Message ${m.messageId} in ${result.queueUrl}`,
    ...field('failureReason', d.failureReason ?? 'none (moved by the redrive policy)'),
    ...field('errorType', d.errorType),
    ...field('errorMessage', d.errorMessage),
    ...field('failedAt', d.failedAt),
    ...field('attempts', d.attempts),
    ...field('source', d.source),
    ...field('originalMessageId', d.originalMessageId),
    ...field('messageGroupId', d.messageGroupId),
    ...field('coordinates', d.coordinates),
    ...field('bodyEncoding', d.bodyEncoding),
    ...field('problem', d.problem),
    '',
    'System attributes',
    indent(
      formatTable(
        ['NAME', 'VALUE'],
        Object.entries(m.systemAttributes).map(([k, v]) => [k, v]),
        1000,
      ),
    ),
    '',
    'Message attributes',
    indent(formatTable(['NAME', 'TYPE', 'VALUE'], attributeRows(m.messageAttributes), 1000)),
  ];
  if (d.producerAttributes !== undefined) {
    lines.push(
      '',
      "Producer's attributes (restored by a redrive)",
      Object.keys(d.producerAttributes).length > 0
        ? indent(formatTable(['NAME', 'TYPE', 'VALUE'], attributeRows(d.producerAttributes), 1000))
        : '  (none)',
    );
  }
  const o = m.offloaded;
  if (o === undefined) {
    lines.push('', `Body (${Buffer.byteLength(m.body, 'utf8')} bytes${m.md5OfBody !== undefined ? `, MD5 ${m.md5OfBody}` : ''}):`, m.body);
  } else if (o.body !== undefined) {
    lines.push('', `Body (offloaded to ${o.location}, ${o.bytes} bytes, SHA-256 checked):`, o.body);
  } else {
    lines.push(
      '',
      `Body: offloaded to ${o.location} (${o.bytes} bytes), and cannot be read: ${o.error ?? 'unknown error'}`,
      `Pointer in the queue: ${m.body}`,
    );
  }
  return lines.join('\n');
}

/** `redrive` as text. */
export function formatRedrive(result: RedriveResult): string {
  const lines: string[] = [];
  if (result.fallbackReason !== undefined) lines.push(`No message move task: ${result.fallbackReason}.`);
  if (result.method === 'move-task') {
    const task = result.moveTask;
    const destination = task?.destinationArn ?? 'the queue each message came from';
    if (result.dryRun) {
      lines.push(
        `Dry run: would start a message move task for about ${result.approximateNumberOfMessages ?? '?'} message(s) to ${destination}. Nothing changed.`,
      );
    } else if (result.cancelled) {
      lines.push('Cancelled: nothing changed.');
    } else if (task !== undefined) {
      lines.push(
        `Message move task ${task.taskHandle ?? ''} ${task.status}: ${task.approximateNumberOfMessagesMoved ?? 0} of ` +
          `~${task.approximateNumberOfMessagesToMove ?? result.approximateNumberOfMessages ?? '?'} message(s) moved to ${destination}.`,
      );
      lines.push("SQS moved each message as it is: the consumer's ic.* attributes stay on it, and a body offloaded to S3 stays a pointer.");
    }
    if (result.nothingMoved !== undefined) lines.push(`${capitalize(result.nothingMoved)}.`);
    return lines.join('\n');
  }
  if (result.dryRun) {
    const movable = result.selected.filter((item) => item.target !== undefined);
    lines.push(
      `Dry run: would redrive ${movable.length} message(s) by receive → send → delete` +
        `${movable.length < result.selected.length ? `, and leave ${result.selected.length - movable.length} that cannot go anywhere` : ''}. Nothing changed.`,
    );
    if (result.selected.length > 0) lines.push(indent(itemTable(result.selected)));
    if (result.nothingMoved !== undefined) lines.push(`${capitalize(result.nothingMoved)}.`);
    return withWarnings(lines, [...result.warnings, ...arrivalWarning(result.arrivedDuringRun)]);
  }
  if (result.cancelled) return 'Cancelled: nothing changed.';
  if (result.selected.length > 0)
    lines.push(
      `Redriven by receive → send → delete: ${result.moved.length} moved, ${result.skipped.length} left in the DLQ, ${result.failed.length} failed.`,
    );
  if (result.moved.length > 0) lines.push('', 'Moved', indent(itemTable(result.moved)));
  if (result.skipped.length > 0) lines.push('', 'Left in the dead-letter queue', indent(itemTable(result.skipped)));
  if (result.failed.length > 0) {
    lines.push('', 'Failed (still in the dead-letter queue; the redrive stopped here)', indent(itemTable(result.failed)));
  }
  if (result.notDeleted.length > 0) {
    lines.push(
      '',
      "Sent but not deleted from the dead-letter queue (a duplicate; the consumer's inbox makes it harmless)",
      indent(itemTable(result.notDeleted)),
    );
  }
  const warnings = [...result.warnings, ...arrivalWarning(result.arrivedDuringRun)];
  if (result.interrupted) warnings.push('interrupted: every message not moved is still in the dead-letter queue');
  if (result.nothingMoved !== undefined) lines.push(`${capitalize(result.nothingMoved)}.`);
  return withWarnings(lines, warnings);
}

/** `redrive --dry-run --handler` and `replay --dry-run --handler` as text: the counts, then each group with its messages. */
export function formatDecisions(result: DecisionsResult): string {
  const c = result.counts;
  const consumer = result.consumer;
  const lines = [
    `Dry run with ${consumer.handler} (consumer ${consumer.consumerName}, inbox ${consumer.inboxTable}, ` +
      `inbox window ${formatDuration(consumer.inboxTtlSeconds * 1000)}): if ${result.command === 'replay' ? `${result.from} were replayed and` : 'they were'} ` +
      `redriven now, ${result.decided} message(s) would: ${c['would-apply']} apply, ${c.duplicate} be duplicates, ` +
      `${c['outside-window']} apply again outside the inbox window, ${c['would-fail']} fail. ` +
      `State read at ${result.decidedAt}; nothing written, no side effect run.`,
  ];
  const titles: Record<string, string> = {
    'would-apply': 'Would apply',
    duplicate: 'Duplicate',
    'outside-window': 'Outside the inbox window: would apply again',
    'would-fail': 'Would fail',
  };
  for (const group of result.groups) {
    const title =
      group.outcome === 'would-apply' || group.outcome === 'outside-window'
        ? titles[group.outcome]
        : `${titles[group.outcome]}: ${group.reason}`;
    lines.push('', `${title} (${group.count})`);
    const rows = group.messages.map((m) => [
      m.line !== undefined ? `line ${m.line}` : m.messageId,
      m.idempotencyKey ?? '-',
      m.deadLetterReason,
      m.detail,
    ]);
    lines.push(indent(formatTable(['MESSAGE', 'IDEMPOTENCY KEY', 'DLQ REASON', 'WHAT IT WOULD DO'], rows, 400)));
  }
  const warnings = [...result.warnings];
  if (result.interrupted) warnings.push('interrupted: not every message was decided');
  if (result.nothingMoved !== undefined) lines.push(`${capitalize(result.nothingMoved)}.`);
  return withWarnings(lines, warnings);
}

/** `archive` as text. */
export function formatArchive(result: ArchiveResult): string {
  const lines: string[] = [];
  if (result.dryRun) {
    lines.push(`Dry run: would archive ${result.archived} message(s) to ${result.file}. Nothing written, nothing deleted.`);
  } else {
    lines.push(`Archived ${result.archived} message(s) to ${result.file}; deleted ${result.deleted} from ${result.queueUrl}.`);
    if (result.cancelled) lines.push('Deletion cancelled: the file is written, every message is still in the queue.');
  }
  for (const failure of result.notArchived) lines.push(`  not archived (still in the queue): ${failure.messageId}: ${failure.error}`);
  for (const failure of result.notDeleted) lines.push(`  not deleted (still in the queue): ${failure.messageId}: ${failure.error}`);
  return withWarnings(lines, [...result.warnings, ...arrivalWarning(result.arrivedDuringRun)]);
}

/** `replay` as text. */
export function formatReplay(result: ReplayResult): string {
  const lines: string[] = [];
  if (result.dryRun) {
    lines.push(`Dry run: ${result.file} is readable; would send ${result.toSend} message(s) to ${result.queueUrl}. Nothing sent.`);
  } else {
    lines.push(`Sent ${result.sent} of ${result.toSend} message(s) from ${result.file} to ${result.queueUrl}.`);
  }
  for (const problem of result.invalid) lines.push(`  skipped ${result.file}:${problem.line}: ${problem.message}`);
  if (result.failed !== undefined) lines.push(`  ${result.file}:${result.failed.line}: send failed: ${result.failed.error}`);
  if (result.resumeFromLine !== undefined) lines.push(`Resume with --from-line ${result.resumeFromLine}.`);
  if (result.trailer.status !== 'complete') {
    lines.push(
      `warning: ${result.file} has no valid final trailer (${result.trailer.status}); it was replayed because of --no-trailer-check`,
    );
  }
  if (result.nothingMoved !== undefined) lines.push(`${capitalize(result.nothingMoved)}.`);
  return lines.join('\n');
}

function itemTable(items: readonly RedriveItem[]): string {
  return formatTable(
    ['MESSAGE ID', 'REASON', 'TO / WHY NOT'],
    items.map((item) => [
      // A Kafka dead letter is named by its original coordinates too: <topic>-<partition>@<offset>.
      item.coordinates !== undefined
        ? `${item.messageId} (${item.coordinates.topic}-${item.coordinates.partition}@${item.coordinates.offset})`
        : item.messageId,
      item.reason,
      [item.target, item.detail].filter((s) => s !== undefined).join(' — '),
    ]),
    120,
  );
}

function attributeRows(attributes: Readonly<Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>>): string[][] {
  return Object.entries(attributes).map(([name, a]) => [name, a.DataType, a.StringValue ?? `(base64) ${a.BinaryValue ?? ''}`]);
}

function attributeList(attributes: Readonly<Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>>): string {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return '-';
  return entries.map(([name, a]) => `${name}=${a.StringValue ?? `(base64)${a.BinaryValue ?? ''}`}`).join(', ');
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function shortSource(source: string | undefined): string {
  if (source === undefined) return '-';
  const arn = parseSqsQueueArn(source);
  return arn !== undefined ? arn.name : source;
}

function arrivalWarning(count: number): string[] {
  return count > 0 ? [`${count} message(s) entered the queue after the command started and were left for a later run`] : [];
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

function withWarnings(lines: string[], warnings: readonly string[]): string {
  return [...lines, ...warnings.map((w) => `warning: ${w}`)].join('\n');
}
