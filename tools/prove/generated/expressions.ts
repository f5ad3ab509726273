/**
 * The generated consumers' update actions and conditions, each rendered two ways from one spec:
 * as the DynamoDB expression the consumer sends (`UpdateExpression` / `ConditionExpression` with
 * `ExpressionAttributeNames` and `ExpressionAttributeValues`), and as its in-memory effect on an
 * item in canonical form, which the reference model applies. Both come from the same
 * {@link UpdateAction} or {@link ConditionSpec}, so the two cannot drift; `test/prove/` checks the
 * in-memory side against DynamoDB Local.
 *
 * Semantics (DynamoDB's, as DynamoDB Local answers): a comparison with a missing attribute or a
 * value of another type is false, except `<>`, which is then true; `size()` counts a string's UTF-16
 * code units, a binary's bytes and a collection's elements; an update of a missing item creates it
 * (with its key), even when it only removes; `#a + :n` on a missing attribute, an `ADD` or `DELETE`
 * of another type, and `list_append` to a non-list are refused (`InvalidUpdate`).
 *
 * @module
 */
import { addNumbers, compareNumbers, subtractNumbers } from './decimal.js';
import type { ConditionSpec, UpdateAction } from './spec.js';
import { type Av, type AvItem, marshallValue, nativeNumber, own, printAv, toNative, type ValueSpec } from './values.js';

/** An expression with its placeholders (values native, as the document client takes them). */
export interface RenderedExpression {
  readonly expression: string;
  readonly names: Record<string, string>;
  readonly values: Record<string, unknown>;
}

/** DynamoDB would refuse the update (a `ValidationException`): the reason. */
export class InvalidUpdate extends Error {
  override readonly name = 'InvalidUpdate';
}

/** Allocates `#n0…` and `:v0…` placeholders for one write. */
export class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  readonly #byName = new Map<string, string>();
  #next = 0;

  /** The placeholder of an attribute name (one per name). */
  name(attribute: string): string {
    let placeholder = this.#byName.get(attribute);
    if (placeholder === undefined) {
      placeholder = `#n${this.#byName.size}`;
      this.#byName.set(attribute, placeholder);
      this.names[placeholder] = attribute;
    }
    return placeholder;
  }

  /** A new placeholder for a native value. */
  value(native: unknown): string {
    const placeholder = `:v${(this.#next += 1)}`;
    this.values[placeholder] = native;
    return placeholder;
  }
}

/** The native value of a number in canonical text (a `BigInt` beyond 2^53). */
function numberNative(text: string): number | bigint {
  return nativeNumber(text);
}

/**
 * Renders update actions as one `UpdateExpression` (clauses grouped by keyword; lower-case
 * keywords with `lowerCase`, which DynamoDB accepts too).
 *
 * @param context - this event's id and position (for `appendId` and `setPosition`)
 */
export function renderUpdate(
  actions: readonly UpdateAction[],
  p: Placeholders,
  context: { readonly id: string; readonly position: number },
  lowerCase: boolean,
): string {
  const set: string[] = [];
  const add: string[] = [];
  const remove: string[] = [];
  const del: string[] = [];
  for (const action of actions) {
    const a = p.name(action.attr);
    switch (action.op) {
      case 'set':
        set.push(`${a} = ${p.value(toNative(action.value))}`);
        break;
      case 'setPlus':
        set.push(`${a} = ${a} + ${p.value(numberNative(action.by))}`);
        break;
      case 'setMinus':
        set.push(`${a} = ${a} - ${p.value(numberNative(action.by))}`);
        break;
      case 'setIfNotExists':
        set.push(`${a} = if_not_exists(${a}, ${p.value(toNative(action.value))})`);
        break;
      case 'setIfNotExistsPlus':
        set.push(`${a} = if_not_exists(${a}, ${p.value(numberNative(action.start))}) + ${p.value(numberNative(action.by))}`);
        break;
      case 'appendList':
        set.push(`${a} = list_append(if_not_exists(${a}, ${p.value([])}), ${p.value(action.values.map((v) => toNative(v)))})`);
        break;
      case 'appendId':
        set.push(`${a} = list_append(if_not_exists(${a}, ${p.value([])}), ${p.value([context.id])})`);
        break;
      case 'setPosition':
        set.push(`${a} = ${p.value(context.position)}`);
        break;
      case 'add':
        add.push(`${a} ${p.value(toNative(action.value))}`);
        break;
      case 'deleteFromSet':
        del.push(`${a} ${p.value(toNative(action.value))}`);
        break;
      case 'remove':
        remove.push(a);
        break;
    }
  }
  const word = (upper: string) => (lowerCase ? upper.toLowerCase() : upper);
  const clauses: string[] = [];
  if (set.length > 0) clauses.push(`${word('SET')} ${set.join(', ')}`);
  if (remove.length > 0) clauses.push(`${word('REMOVE')} ${remove.join(', ')}`);
  if (add.length > 0) clauses.push(`${word('ADD')} ${add.join(', ')}`);
  if (del.length > 0) clauses.push(`${word('DELETE')} ${del.join(', ')}`);
  return clauses.join(' ');
}

const numberOf = (value: Av | undefined): string | undefined => (value !== undefined && 'N' in value ? value.N : undefined);

/** The set type of a value, if it is one. */
function setOf(value: Av): { readonly type: 'SS' | 'NS' | 'BS'; readonly elements: readonly string[] } | undefined {
  if ('SS' in value) return { type: 'SS', elements: value.SS };
  if ('NS' in value) return { type: 'NS', elements: value.NS };
  if ('BS' in value) return { type: 'BS', elements: value.BS };
  return undefined;
}

function makeSet(type: 'SS' | 'NS' | 'BS', elements: readonly string[]): Av {
  const sorted = [...new Set(elements)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  return { [type]: sorted } as unknown as Av;
}

/**
 * Applies update actions to an item as DynamoDB does (all actions see the item as it was
 * before the update).
 *
 * @param before - the item, or `undefined` when absent (the update creates it with `key`)
 * @throws InvalidUpdate when DynamoDB would refuse the update
 * @throws Error when the document client cannot marshall a value (the caller classifies it)
 */
export function applyUpdate(
  before: AvItem | undefined,
  key: AvItem,
  actions: readonly UpdateAction[],
  context: { readonly id: string; readonly position: number },
): AvItem {
  const old: AvItem = before ?? key;
  const next: Record<string, Av> = { ...old };
  for (const action of actions) {
    const current = own(old, action.attr);
    switch (action.op) {
      case 'set':
        next[action.attr] = marshallValue(toNative(action.value));
        break;
      case 'setPlus':
      case 'setMinus': {
        const n = numberOf(current);
        if (current === undefined)
          throw new InvalidUpdate('The provided expression refers to an attribute that does not exist in the item');
        if (n === undefined) throw new InvalidUpdate('An operand in the update expression has an incorrect data type');
        next[action.attr] = { N: action.op === 'setPlus' ? addNumbers(n, action.by) : subtractNumbers(n, action.by) };
        break;
      }
      case 'setIfNotExists':
        next[action.attr] = current ?? marshallValue(toNative(action.value));
        break;
      case 'setIfNotExistsPlus': {
        const base = current === undefined ? action.start : numberOf(current);
        if (base === undefined) throw new InvalidUpdate('An operand in the update expression has an incorrect data type');
        next[action.attr] = { N: addNumbers(base, action.by) };
        break;
      }
      case 'appendList':
      case 'appendId': {
        if (current !== undefined && !('L' in current)) throw new InvalidUpdate('list_append: an operand is not a list');
        const added = action.op === 'appendId' ? [{ S: context.id } as Av] : action.values.map((v) => marshallValue(toNative(v)));
        next[action.attr] = { L: [...(current !== undefined && 'L' in current ? current.L : []), ...added] };
        break;
      }
      case 'setPosition':
        next[action.attr] = { N: String(context.position) };
        break;
      case 'add': {
        const value = marshallValue(toNative(action.value));
        if ('N' in value) {
          if (current === undefined) next[action.attr] = value;
          else if ('N' in current) next[action.attr] = { N: addNumbers(current.N, value.N) };
          else throw new InvalidUpdate('Incorrect operand type for operator or function; operator: ADD');
          break;
        }
        const added = setOf(value);
        if (added === undefined) throw new InvalidUpdate('Incorrect operand type for operator or function; operator: ADD');
        const existing = current === undefined ? undefined : setOf(current);
        if (current !== undefined && (existing === undefined || existing.type !== added.type))
          throw new InvalidUpdate('Type mismatch for ADD');
        next[action.attr] = makeSet(added.type, [...(existing?.elements ?? []), ...added.elements]);
        break;
      }
      case 'deleteFromSet': {
        const removed = setOf(marshallValue(toNative(action.value)));
        if (removed === undefined) throw new InvalidUpdate('Incorrect operand type for operator or function; operator: DELETE');
        if (current === undefined) break;
        const existing = setOf(current);
        if (existing === undefined || existing.type !== removed.type) throw new InvalidUpdate('Type mismatch for DELETE');
        const left = existing.elements.filter((element) => !removed.elements.includes(element));
        if (left.length === 0) delete next[action.attr];
        else next[action.attr] = makeSet(existing.type, left);
        break;
      }
      case 'remove':
        delete next[action.attr];
        break;
    }
  }
  return next;
}

/** Renders a condition as a `ConditionExpression`. */
export function renderCondition(condition: ConditionSpec, p: Placeholders): string {
  switch (condition.c) {
    case 'exists':
      return `attribute_exists(${p.name(condition.attr)})`;
    case 'notExists':
      return `attribute_not_exists(${p.name(condition.attr)})`;
    case 'eq':
      return `${p.name(condition.attr)} = ${p.value(toNative(condition.value))}`;
    case 'ne':
      return `${p.name(condition.attr)} <> ${p.value(toNative(condition.value))}`;
    case 'lt':
    case 'le':
    case 'gt':
    case 'ge': {
      const operator = { lt: '<', le: '<=', gt: '>', ge: '>=' }[condition.c];
      return `${p.name(condition.attr)} ${operator} ${p.value(numberNative(condition.value))}`;
    }
    case 'beginsWith':
      return `begins_with(${p.name(condition.attr)}, ${p.value(condition.prefix)})`;
    case 'contains':
      return `contains(${p.name(condition.attr)}, ${p.value(condition.value)})`;
    case 'sizeGt':
      return `size(${p.name(condition.attr)}) > ${p.value(condition.n)}`;
    case 'type':
      return `attribute_type(${p.name(condition.attr)}, ${p.value(condition.type)})`;
    case 'and':
    case 'or':
      return `(${renderCondition(condition.a, p)}) ${condition.c.toUpperCase()} (${renderCondition(condition.b, p)})`;
    case 'not':
      return `NOT (${renderCondition(condition.a, p)})`;
  }
}

/** The DynamoDB type of a canonical value. */
export function typeOf(value: Av): string {
  return Object.keys(value)[0]!;
}

/** Whether two canonical values are equal as DynamoDB's `=` compares them. */
function equal(a: Av, b: Av): boolean {
  return printAv(a) === printAv(b);
}

/**
 * Evaluates a condition on an item (`undefined`: absent) as DynamoDB does.
 *
 * @throws Error when the condition's value cannot be marshalled
 */
export function evaluateCondition(condition: ConditionSpec, item: AvItem | undefined): boolean {
  const attr = 'attr' in condition ? own(item, condition.attr) : undefined;
  switch (condition.c) {
    case 'exists':
      return attr !== undefined;
    case 'notExists':
      return attr === undefined;
    case 'eq':
      return attr !== undefined && equal(attr, marshallValue(toNative(condition.value)));
    case 'ne':
      return !(attr !== undefined && equal(attr, marshallValue(toNative(condition.value))));
    case 'lt':
    case 'le':
    case 'gt':
    case 'ge': {
      const n = numberOf(attr);
      if (n === undefined) return false;
      const order = compareNumbers(n, condition.value);
      return { lt: order < 0, le: order <= 0, gt: order > 0, ge: order >= 0 }[condition.c];
    }
    case 'beginsWith':
      return attr !== undefined && 'S' in attr && attr.S.startsWith(condition.prefix);
    case 'contains':
      if (attr === undefined) return false;
      if ('S' in attr) return attr.S.includes(condition.value);
      if ('SS' in attr) return attr.SS.includes(condition.value);
      if ('L' in attr) return attr.L.some((element) => 'S' in element && element.S === condition.value);
      return false;
    case 'sizeGt': {
      if (attr === undefined) return false;
      const size =
        'S' in attr
          ? attr.S.length
          : 'B' in attr
            ? Buffer.from(attr.B, 'base64').length
            : 'L' in attr
              ? attr.L.length
              : 'M' in attr
                ? Object.keys(attr.M).length
                : 'SS' in attr
                  ? attr.SS.length
                  : 'NS' in attr
                    ? attr.NS.length
                    : 'BS' in attr
                      ? attr.BS.length
                      : undefined;
      return size !== undefined && size > condition.n;
    }
    case 'type':
      return attr !== undefined && typeOf(attr) === condition.type;
    case 'and':
      return evaluateCondition(condition.a, item) && evaluateCondition(condition.b, item);
    case 'or':
      return evaluateCondition(condition.a, item) || evaluateCondition(condition.b, item);
    case 'not':
      return !evaluateCondition(condition.a, item);
  }
}

/** The attributes a condition names. */
export function conditionAttributes(condition: ConditionSpec): string[] {
  if (condition.c === 'and' || condition.c === 'or') return [...conditionAttributes(condition.a), ...conditionAttributes(condition.b)];
  if (condition.c === 'not') return conditionAttributes(condition.a);
  return [(condition as { readonly attr: string }).attr];
}

/** A value spec of a number in canonical text: a JSON number when it is exact as one, else `{ $big }`. */
export function numberSpec(text: string): ValueSpec {
  const native = nativeNumber(text);
  return typeof native === 'bigint' ? { $big: native.toString() } : native;
}
