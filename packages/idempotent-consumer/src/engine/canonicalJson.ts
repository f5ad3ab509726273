import { createHash } from 'node:crypto';

/**
 * The canonical JSON of a parsed JSON value: object keys sorted (by UTF-16 code units), no white
 * space, array order kept, strings and numbers as `JSON.stringify` writes them. Two bodies that
 * differ only in key order or white space have the same canonical form.
 *
 * Iterative, not recursive: a valid message with a deeply nested field (10,000 levels) is hashed
 * like any other instead of overflowing the stack (case C18).
 *
 * @param value - a value as `JSON.parse` returns it (no `undefined`, functions or cycles)
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  /** Work left, last first: a value to write, or literal text. */
  const stack: ({ readonly value: unknown } | string)[] = [{ value }];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (typeof next === 'string') {
      out.push(next);
      continue;
    }
    const current = next.value;
    if (Array.isArray(current)) {
      out.push('[');
      stack.push(']');
      for (let i = current.length - 1; i >= 0; i -= 1) {
        stack.push({ value: current[i] === undefined ? null : current[i] });
        if (i > 0) stack.push(',');
      }
    } else if (current !== null && typeof current === 'object') {
      const keys = Object.keys(current)
        .filter((key) => (current as Record<string, unknown>)[key] !== undefined)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      out.push('{');
      stack.push('}');
      for (let i = keys.length - 1; i >= 0; i -= 1) {
        const key = keys[i]!;
        stack.push({ value: (current as Record<string, unknown>)[key] });
        stack.push(`${JSON.stringify(key)}:`);
        if (i > 0) stack.push(',');
      }
    } else {
      out.push(JSON.stringify(current) ?? 'null');
    }
  }
  return out.join('');
}

/** SHA-256 (hex) of a parsed JSON value's {@link canonicalJson}: the payload hash an inbox row keeps. */
export function payloadHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}
