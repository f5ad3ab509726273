/**
 * Exact decimal numbers as DynamoDB keeps them (up to 38 significant digits): canonical text,
 * comparison and addition, so that the reference model adds `0.25 + 0.5` or `2^70 + 1` exactly
 * as DynamoDB does, never in floating point.
 *
 * @module
 */

/** A decimal as `mantissa × 10^-scale`. */
interface Scaled {
  readonly mantissa: bigint;
  readonly scale: number;
}

/**
 * Parses number text as JavaScript, `BigInt` or a DynamoDB `N` writes it (`-12`, `1.50`,
 * `1e+21`, `2.5E-3`).
 *
 * @throws Error for text that is not a finite decimal number
 */
function parse(text: string): Scaled {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (match === null || (match[2] === '' && (match[3] ?? '') === '')) throw new Error(`not a decimal number: ${JSON.stringify(text)}`);
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  let digits = `${whole}${fraction}`.replace(/^0+(?=\d)/, '');
  let scale = fraction.length - Number(exponent);
  if (scale < 0) {
    digits = `${digits}${'0'.repeat(-scale)}`;
    scale = 0;
  }
  const mantissa = BigInt(digits === '' ? '0' : digits);
  return { mantissa: sign === '-' ? -mantissa : mantissa, scale };
}

function format({ mantissa, scale }: Scaled): string {
  if (mantissa === 0n) return '0';
  const negative = mantissa < 0n;
  let digits = (negative ? -mantissa : mantissa).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    const whole = digits.slice(0, digits.length - scale);
    const fraction = digits.slice(digits.length - scale).replace(/0+$/, '');
    digits = fraction === '' ? whole : `${whole}.${fraction}`;
  }
  return negative ? `-${digits}` : digits;
}

function align(a: Scaled, b: Scaled): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [a.mantissa * 10n ** BigInt(scale - a.scale), b.mantissa * 10n ** BigInt(scale - b.scale), scale];
}

/**
 * The canonical text of a number (no exponent, no leading or trailing zeros, `-0` as `0`), as
 * DynamoDB returns an `N` it stored.
 *
 * @param value - a JavaScript number, a `BigInt`, or number text
 * @throws Error for `NaN`, infinities or text that is not a number
 */
export function canonicalNumber(value: number | bigint | string): string {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  return format(parse(String(value)));
}

/** `a + b`, exactly, as canonical text. */
export function addNumbers(a: string, b: string): string {
  const [x, y, scale] = align(parse(a), parse(b));
  return format({ mantissa: x + y, scale });
}

/** `a − b`, exactly, as canonical text. */
export function subtractNumbers(a: string, b: string): string {
  const [x, y, scale] = align(parse(a), parse(b));
  return format({ mantissa: x - y, scale });
}

/** −1, 0 or 1 as `a` is less than, equal to or greater than `b`. */
export function compareNumbers(a: string, b: string): -1 | 0 | 1 {
  const [x, y] = align(parse(a), parse(b));
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Significant digits of a number (what DynamoDB's 38-digit precision and its size rule count). */
export function significantDigits(a: string): number {
  const digits = canonicalNumber(a).replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.max(1, digits.length);
}
