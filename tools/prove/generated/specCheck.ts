/**
 * Checks the shape of a generated workload read from a replay (a file a failing run wrote, or a
 * hand-edited one), so that a malformed one fails with a message naming the field instead of a
 * confusing run.
 *
 * @module
 */
import { poisonKinds } from '../poisonKinds.js';
import { intents, keyTypes, type GeneratedWorkloadSpec } from './spec.js';
import { badValueKinds } from './values.js';

/** A field of a replay's generated workload that is wrong: `path` and what it must be. */
export class GeneratedSpecError extends Error {
  constructor(
    readonly path: string,
    readonly expected: string,
  ) {
    super(`${path} must be ${expected}`);
    this.name = 'GeneratedSpecError';
  }
}

type Json = Record<string, unknown>;

/**
 * Checks `value` as a {@link GeneratedWorkloadSpec}.
 *
 * @param path - where it is in the schedule, for messages (e.g. `workload`)
 * @throws GeneratedSpecError naming the first field that is wrong
 */
export function checkGeneratedSpec(value: unknown, path: string): GeneratedWorkloadSpec {
  const fail = (at: string, expected: string): never => {
    throw new GeneratedSpecError(at, expected);
  };
  const object = (v: unknown, at: string): Json => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(at, 'an object');
    return v as Json;
  };
  const list = (v: unknown, at: string, max = 1000): unknown[] => {
    if (!Array.isArray(v) || v.length > max) fail(at, `a list of at most ${max}`);
    return v as unknown[];
  };
  const int = (v: unknown, at: string, min: number, max: number): number => {
    if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) fail(at, `an integer from ${min} to ${max}`);
    return v as number;
  };
  const string = (v: unknown, at: string): string => {
    if (typeof v !== 'string') fail(at, 'a string');
    return v as string;
  };
  const bool = (v: unknown, at: string) => {
    if (typeof v !== 'boolean') fail(at, 'true or false');
  };
  const oneOf = (v: unknown, at: string, choices: readonly unknown[]) => {
    if (!choices.includes(v)) fail(at, `one of ${choices.join(', ')}`);
  };
  const numberText = (v: unknown, at: string) => {
    if (typeof v !== 'string' || !/^-?\d+(\.\d+)?$/.test(v)) fail(at, 'a number as text');
  };
  const valueSpec = (v: unknown, at: string, depth = 0): void => {
    if (depth > 8) fail(at, 'nested at most 8 levels');
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) fail(at, 'a finite number');
      return;
    }
    if (Array.isArray(v)) {
      v.forEach((element, i) => valueSpec(element, `${at}[${i}]`, depth + 1));
      return;
    }
    const o = object(v, at);
    const tag = Object.keys(o).find((key) => key.startsWith('$'));
    switch (tag) {
      case '$m':
        for (const [name, element] of Object.entries(object(o.$m, `${at}.$m`))) valueSpec(element, `${at}.$m.${name}`, depth + 1);
        return;
      case '$big':
      case '$nv':
        if (typeof o[tag] !== 'string' || !/^-?\d+$/.test(o[tag] as string)) fail(`${at}.${tag}`, 'an integer as text');
        return;
      case '$buf':
      case '$u8':
        string(o[tag], `${at}.${tag}`);
        return;
      case '$ss':
      case '$bs':
        list(o[tag], `${at}.${tag}`).forEach((element, i) => string(element, `${at}.${tag}[${i}]`));
        return;
      case '$ns':
        list(o.$ns, `${at}.$ns`).forEach((element, i) => {
          if (typeof element !== 'number' || !Number.isFinite(element)) fail(`${at}.$ns[${i}]`, 'a finite number');
        });
        return;
      case '$nsBig':
        list(o.$nsBig, `${at}.$nsBig`).forEach((element, i) => numberText(element, `${at}.$nsBig[${i}]`));
        return;
      case '$rep':
        string(o.$rep, `${at}.$rep`);
        int(o.n, `${at}.n`, 0, 1_000_000);
        return;
      case '$bad':
        oneOf(o.$bad, `${at}.$bad`, badValueKinds);
        return;
      default:
        fail(at, 'a JSON scalar, a list, or a tagged value ($m, $big, $nv, $buf, $u8, $ss, $ns, $nsBig, $bs, $rep, $bad)');
    }
  };
  const condition = (v: unknown, at: string, depth = 0): void => {
    if (depth > 8) fail(at, 'nested at most 8 levels');
    const c = object(v, at);
    oneOf(c.c, `${at}.c`, [
      'exists',
      'notExists',
      'eq',
      'ne',
      'lt',
      'le',
      'gt',
      'ge',
      'beginsWith',
      'contains',
      'sizeGt',
      'type',
      'and',
      'or',
      'not',
    ]);
    if (c.c === 'and' || c.c === 'or') {
      condition(c.a, `${at}.a`, depth + 1);
      condition(c.b, `${at}.b`, depth + 1);
      return;
    }
    if (c.c === 'not') {
      condition(c.a, `${at}.a`, depth + 1);
      return;
    }
    string(c.attr, `${at}.attr`);
    if (c.c === 'eq' || c.c === 'ne') valueSpec(c.value, `${at}.value`);
    if (c.c === 'lt' || c.c === 'le' || c.c === 'gt' || c.c === 'ge') numberText(c.value, `${at}.value`);
    if (c.c === 'beginsWith') string(c.prefix, `${at}.prefix`);
    if (c.c === 'contains') string(c.value, `${at}.value`);
    if (c.c === 'sizeGt') int(c.n, `${at}.n`, 0, 1_000_000);
    if (c.c === 'type') oneOf(c.type, `${at}.type`, ['S', 'N', 'B', 'BOOL', 'NULL', 'L', 'M', 'SS', 'NS', 'BS']);
  };

  const spec = object(value, path);
  if (spec.kind !== 'generated') fail(`${path}.kind`, '"generated"');
  const tables = list(spec.tables, `${path}.tables`, 10);
  if (tables.length === 0) fail(`${path}.tables`, 'a list of 1 to 10 tables');
  const keyAttribute = (v: unknown, at: string) => {
    const k = object(v, at);
    if (typeof k.name !== 'string' || k.name === '') fail(`${at}.name`, 'a non-empty string');
    oneOf(k.type, `${at}.type`, keyTypes);
  };
  tables.forEach((t, i) => {
    const table = object(t, `${path}.tables[${i}]`);
    if (typeof table.name !== 'string' || !/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(table.name))
      fail(`${path}.tables[${i}].name`, '1 to 64 letters, digits or _, starting with a letter');
    keyAttribute(table.partitionKey, `${path}.tables[${i}].partitionKey`);
    if (table.sortKey !== undefined) keyAttribute(table.sortKey, `${path}.tables[${i}].sortKey`);
  });
  if (spec.versionAttribute !== undefined) string(spec.versionAttribute, `${path}.versionAttribute`);
  oneOf(spec.validation, `${path}.validation`, ['schema', 'parse']);
  const names = object(spec.names, `${path}.names`);
  for (const field of ['idField', 'groupField'] as const) if (names[field] !== null) string(names[field], `${path}.names.${field}`);
  for (const field of ['seq', 'log', 'counter'] as const) string(names[field], `${path}.names.${field}`);
  const items = list(spec.items, `${path}.items`);
  const keys = list(spec.keys, `${path}.keys`, 100);
  const keyValue = (v: unknown, at: string) => {
    const k = object(v, at);
    if ('S' in k) string(k.S, `${at}.S`);
    else if ('N' in k) {
      int(k.N, `${at}.N`, 0, 999_999);
      oneOf(k.style, `${at}.style`, ['int', 'neg', 'dec', 'big', 'nv']);
      if (k.alt !== undefined) bool(k.alt, `${at}.alt`);
    } else if ('B' in k) {
      string(k.B, `${at}.B`);
      oneOf(k.style, `${at}.style`, ['buffer', 'u8']);
      if (k.alt !== undefined) bool(k.alt, `${at}.alt`);
    } else fail(at, '{"S":…}, {"N":…,"style":…} or {"B":…,"style":…}');
  };
  items.forEach((it, i) => {
    const item = object(it, `${path}.items[${i}]`);
    int(item.table, `${path}.items[${i}].table`, 0, tables.length - 1);
    keyValue(item.partition, `${path}.items[${i}].partition`);
    if (item.sort !== undefined) keyValue(item.sort, `${path}.items[${i}].sort`);
    if (item.owner !== null) int(item.owner, `${path}.items[${i}].owner`, 0, keys.length - 1);
  });
  const itemIndex = (v: unknown, at: string) => int(v, at, 0, items.length - 1);
  list(spec.counters, `${path}.counters`).forEach((c, i) => itemIndex(c, `${path}.counters[${i}]`));
  const effects = list(spec.effects, `${path}.effects`, 20).map((e, i) => {
    const effect = object(e, `${path}.effects[${i}]`);
    bool(effect.flaky, `${path}.effects[${i}].flaky`);
    return string(effect.name, `${path}.effects[${i}].name`);
  });
  keys.forEach((k, ki) => {
    const at = `${path}.keys[${ki}]`;
    const key = object(k, at);
    bool(key.gated, `${at}.gated`);
    itemIndex(key.head, `${at}.head`);
    list(key.steps, `${at}.steps`, 100).forEach((st, si) => {
      const sat = `${at}.steps[${si}]`;
      const step = object(st, sat);
      oneOf(step.intent, `${sat}.intent`, intents);
      if (step.gate !== undefined) {
        const gate = object(step.gate, `${sat}.gate`);
        int(gate.prev, `${sat}.gate.prev`, -1, 1000);
        bool(gate.exact, `${sat}.gate.exact`);
      }
      list(step.reads, `${sat}.reads`, 100).forEach((r, i) => itemIndex(r, `${sat}.reads[${i}]`));
      list(step.writes, `${sat}.writes`, 200).forEach((w, i) => {
        const wat = `${sat}.writes[${i}]`;
        const write = object(w, wat);
        oneOf(write.kind, `${wat}.kind`, ['Put', 'Update', 'Delete', 'ConditionCheck']);
        itemIndex(write.item, `${wat}.item`);
        if (write.condition !== undefined) condition(write.condition, `${wat}.condition`);
        if (write.kind === 'ConditionCheck' && write.condition === undefined)
          fail(`${wat}.condition`, 'a condition (a ConditionCheck needs one)');
        if (write.kind === 'Put') {
          oneOf(write.carry, `${wat}.carry`, ['none', 'all', 'allButVersion']);
          list(write.attrs, `${wat}.attrs`).forEach((pair, j) => {
            const entry = list(pair, `${wat}.attrs[${j}]`, 2);
            string(entry[0], `${wat}.attrs[${j}][0]`);
            const expr = object(entry[1], `${wat}.attrs[${j}][1]`);
            if ('lit' in expr) valueSpec(expr.lit, `${wat}.attrs[${j}][1].lit`);
            else if ('plus' in expr) {
              const plus = object(expr.plus, `${wat}.attrs[${j}][1].plus`);
              string(plus.attr, `${wat}.attrs[${j}][1].plus.attr`);
              numberText(plus.by, `${wat}.attrs[${j}][1].plus.by`);
            } else if ('appendId' in expr) string(expr.appendId, `${wat}.attrs[${j}][1].appendId`);
            else if (expr.position !== true) fail(`${wat}.attrs[${j}][1]`, '{"lit":…}, {"plus":…}, {"appendId":…} or {"position":true}');
          });
        }
        if (write.kind === 'Update') {
          bool(write.lowerCase, `${wat}.lowerCase`);
          const actions = list(write.actions, `${wat}.actions`, 100);
          if (actions.length === 0) fail(`${wat}.actions`, 'a list of at least one action');
          actions.forEach((a, j) => {
            const aat = `${wat}.actions[${j}]`;
            const action = object(a, aat);
            oneOf(action.op, `${aat}.op`, [
              'set',
              'setPlus',
              'setMinus',
              'setIfNotExists',
              'setIfNotExistsPlus',
              'appendList',
              'add',
              'deleteFromSet',
              'remove',
              'setPosition',
              'appendId',
            ]);
            string(action.attr, `${aat}.attr`);
            if (['set', 'setIfNotExists', 'add', 'deleteFromSet'].includes(action.op as string)) valueSpec(action.value, `${aat}.value`);
            if (['setPlus', 'setMinus', 'setIfNotExistsPlus'].includes(action.op as string)) numberText(action.by, `${aat}.by`);
            if (action.op === 'setIfNotExistsPlus') numberText(action.start, `${aat}.start`);
            if (action.op === 'appendList') list(action.values, `${aat}.values`).forEach((v, n) => valueSpec(v, `${aat}.values[${n}]`));
          });
        }
      });
      list(step.outbox, `${sat}.outbox`, 200).forEach((m, i) => {
        const message = object(m, `${sat}.outbox[${i}]`);
        valueSpec(message.body, `${sat}.outbox[${i}].body`);
        if (message.bad !== undefined) oneOf(message.bad, `${sat}.outbox[${i}].bad`, ['bigint', 'nan', 'inf']);
        if (message.attributes !== undefined)
          for (const [name, v] of Object.entries(object(message.attributes, `${sat}.outbox[${i}].attributes`)))
            string(v, `${sat}.outbox[${i}].attributes.${name}`);
      });
      list(step.sideEffects, `${sat}.sideEffects`, 20).forEach((e, i) => {
        const effect = object(e, `${sat}.sideEffects[${i}]`);
        oneOf(effect.name, `${sat}.sideEffects[${i}].name`, effects);
        valueSpec(effect.input, `${sat}.sideEffects[${i}].input`);
      });
      if (step.throws !== undefined) {
        const t = object(step.throws, `${sat}.throws`);
        oneOf(t.kind, `${sat}.throws.kind`, ['nonRetryable', 'retryable', 'classified', 'unknown']);
        if (typeof t.name !== 'string' || t.name === '') fail(`${sat}.throws.name`, 'a non-empty string');
        if (t.reason !== undefined && (typeof t.reason !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(t.reason)))
          fail(`${sat}.throws.reason`, '1 to 64 of A-Z a-z 0-9 _ . -');
      }
      string(step.note, `${sat}.note`);
      int(step.copies, `${sat}.copies`, 0, 10);
      if (step.poison !== undefined) oneOf(step.poison, `${sat}.poison`, poisonKinds);
    });
  });
  list(spec.strayPoison, `${path}.strayPoison`, 10).forEach((p, i) => oneOf(p, `${path}.strayPoison[${i}]`, poisonKinds));
  if (spec.inboxHome !== undefined) {
    const at = `${path}.inboxHome`;
    const home = object(spec.inboxHome, at);
    const table = int(home.table, `${at}.table`, 0, tables.length - 1);
    const homes = list(home.items, `${at}.items`, 100);
    if (homes.length !== keys.length) fail(`${at}.items`, `a list of one item per key (${keys.length})`);
    homes.forEach((h, i) => {
      const item = itemIndex(h, `${at}.items[${i}]`);
      if ((items[item] as Json).table !== table) fail(`${at}.items[${i}]`, `an item of the home table (${table})`);
    });
    if (home.attribute !== undefined && (typeof home.attribute !== 'string' || home.attribute === ''))
      fail(`${at}.attribute`, 'a non-empty string');
    if (home.alt !== undefined) bool(home.alt, `${at}.alt`);
  }
  return value as GeneratedWorkloadSpec;
}
