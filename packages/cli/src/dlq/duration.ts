import { UsageError } from './errors.js';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/**
 * Parses a duration such as `90s`, `30m`, `2h`, `7d`, `1w` or `1h30m` (units: `s` seconds,
 * `m` minutes, `h` hours, `d` days, `w` weeks; whole numbers only).
 *
 * @returns the duration in milliseconds
 * @throws UsageError when `text` is not such a duration
 * @example parseDuration('2h') // 7_200_000
 */
export function parseDuration(text: string, flag = '--older-than'): number {
  const trimmed = text.trim();
  if (!/^(\d+[smhdw])+$/.test(trimmed)) {
    throw new UsageError(`${flag} takes a duration such as 30m, 2h, 7d or 1h30m (units s, m, h, d, w), not "${text}"`);
  }
  let total = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+)([smhdw])/g)) {
    total += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  }
  return total;
}

/**
 * Formats a duration for a table: `45s`, `12m`, `3h05m`, `2d04h`.
 *
 * @param ms - the duration in milliseconds; negative values (clock skew) print as `0s`
 */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h${String(minutes % 60).padStart(2, '0')}m`;
  const days = Math.floor(hours / 24);
  return `${days}d${String(hours % 24).padStart(2, '0')}h`;
}
