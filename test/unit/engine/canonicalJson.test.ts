import { describe, expect, it } from 'vitest';
import { canonicalJson, payloadHash } from '../../../packages/idempotent-consumer/src/engine/canonicalJson.js';

// Values that `JSON.parse` never returns, but a decoded Kafka value (Avro, Protobuf) or a
// `parsedBody` may hold: the canonical form writes them as `JSON.stringify` does.
describe('canonicalJson of values JSON.parse never returns', () => {
  it('writes an undefined array member as null, as JSON.stringify does', () => {
    expect(canonicalJson([1, undefined, 3])).toBe('[1,null,3]');
    expect(canonicalJson([1, undefined, 3])).toBe(JSON.stringify([1, undefined, 3]));
  });

  it('leaves out an object key whose value is undefined', () => {
    expect(canonicalJson({ b: 1, a: undefined, c: { d: undefined } })).toBe('{"b":1,"c":{}}');
    expect(payloadHash({ b: 1, a: undefined })).toBe(payloadHash({ b: 1 }));
  });

  it('writes a top-level value JSON has no text for as null', () => {
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson(() => 1)).toBe('null');
  });

  it('sorts keys by UTF-16 code units, equal keys impossible', () => {
    expect(canonicalJson({ b: 1, B: 2, a: [{ z: 1, y: 2 }] })).toBe('{"B":2,"a":[{"y":2,"z":1}],"b":1}');
  });
});
