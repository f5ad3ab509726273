import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputFileError, readInputFile } from '../../packages/local/src/inputFile.js';

describe('readInputFile', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'input-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const file = async (name: string, content: string | Buffer) => {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  };

  it('sends an object line as written and a string line as its content, with line numbers', async () => {
    const path = await file('ok.jsonl', '{"eventId":"e-1", "type":"Placed"}\n\n"not-json"\n[1,2]\n');
    expect(await readInputFile(path)).toEqual([
      { line: 1, body: '{"eventId":"e-1", "type":"Placed"}' },
      { line: 3, body: 'not-json' },
      { line: 4, body: '[1,2]' },
    ]);
  });

  it('accepts a body with an emoji, as SQS does', async () => {
    const path = await file('emoji.jsonl', '{"eventId":"e-1","note":"paid 🎉"}\n"☕ 🍩"\n');
    expect(await readInputFile(path)).toEqual([
      { line: 1, body: '{"eventId":"e-1","note":"paid 🎉"}' },
      { line: 2, body: '☕ 🍩' },
    ]);
  });

  it('accepts five valid 250 KB lines', async () => {
    const lines = Array.from({ length: 5 }, (_, i) => JSON.stringify({ eventId: `e-${i}`, padding: 'x'.repeat(250_000 - 40) }));
    const path = await file('large.jsonl', `${lines.join('\n')}\n`);

    const messages = await readInputFile(path);

    expect(messages.map((message) => message.line)).toEqual([1, 2, 3, 4, 5]);
    expect(messages.every((message) => Buffer.byteLength(message.body) > 249_000 && Buffer.byteLength(message.body) <= 250_000)).toBe(true);
  });

  it.each([
    ['a line that is not JSON', '{"a":1}\n{oops\n', /bad\.jsonl:2: the line is not JSON/],
    ['a number', '42\n', /:1: expected a JSON object/],
    ['a character SQS refuses', '"nul \\u0000 body"\n', /:1: the body has a character SQS refuses \(U\+0000;/],
    ['an empty body', '""\n', /:1: the body is empty, and SQS refuses an empty message body/],
    ['a lone surrogate', '"\\ud83c alone"\n', /:1: the body has a character SQS refuses \(U\+D83C;/],
    [
      'a body larger than the source queue takes',
      `${JSON.stringify('x'.repeat(262_145))}\n`,
      /:1: the body is 262145 bytes; the source queue takes at most 262144/,
    ],
    ['an empty file', '\n\n', /holds no messages/],
  ])('refuses %s, naming the file and line', async (_what, content, message) => {
    const path = await file('bad.jsonl', content);
    await expect(readInputFile(path)).rejects.toThrow(InputFileError);
    await expect(readInputFile(path)).rejects.toThrow(message);
  });

  it('refuses a file that is not UTF-8', async () => {
    const path = await file('latin1.jsonl', Buffer.from([0x22, 0xff, 0xfe, 0x22, 0x0a]));
    await expect(readInputFile(path)).rejects.toThrow(/not UTF-8/);
  });

  it('refuses a missing file and a directory', async () => {
    await expect(readInputFile(join(dir, 'missing.jsonl'))).rejects.toThrow(/no such file/);
    await expect(readInputFile(dir)).rejects.toThrow(/is a directory/);
  });
});
