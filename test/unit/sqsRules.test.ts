import { describe, expect, it } from 'vitest';
import {
  checkBatchEntries,
  checkMessage,
  checkMessageAttribute,
  checkMessageAttributes,
  checkSendBatchSize,
  checkVisibilityExtension,
  firstDisallowedCharacter,
  isSqsText,
  sqsMessageSize,
} from '../../packages/local/src/aws/sqsRules.js';
import { sqsQueryErrorHeader } from '../../packages/local/src/aws/strictSqs.js';

const text = (value: string) => ({ DataType: 'String', StringValue: value });

describe('SQS rules', () => {
  describe('character set of bodies and String values', () => {
    it.each([
      ['an emoji (U+1F389, above U+FFFF)', '{"note":"🎉"}'],
      ['tab, line feed and carriage return', 'a\tb\nc\rd'],
      ['the last BMP character SQS allows (U+FFFD)', '\uFFFD'],
      ['a private-use character (U+E000)', '\uE000'],
      ['the highest code point (U+10FFFF)', '\u{10FFFF}'],
    ])('accepts %s', (_what, value) => {
      expect(isSqsText(value)).toBe(true);
      expect(checkMessageBody(value)).toBeUndefined();
    });

    it.each([
      ['NUL', 'a\u0000b', 'U+0000'],
      ['a C0 control (U+001F)', '\u001F', 'U+001F'],
      ['U+FFFE', '\uFFFE', 'U+FFFE'],
      ['U+FFFF', '\uFFFF', 'U+FFFF'],
      ['a lone high surrogate', 'x\uD83Cy', 'U+D83C'],
    ])('refuses %s and names it', (_what, value, codePoint) => {
      expect(isSqsText(value)).toBe(false);
      expect(firstDisallowedCharacter(value)).toBe(codePoint);
      expect(checkMessageBody(value)).toMatchObject({ code: 'InvalidMessageContents' });
    });

    it('refuses an empty body as a missing parameter', () => {
      expect(checkMessageBody('')).toMatchObject({ code: 'MissingParameter' });
    });
  });

  describe('message attributes', () => {
    it('accepts the three data types, with custom labels', () => {
      expect(
        checkMessageAttributes({
          a: text('x'),
          'b.c-d_e': { DataType: 'Number.float', StringValue: '-1.5e10' },
          f: { DataType: 'Binary.gif', BinaryValue: Buffer.from([1, 2]).toString('base64') },
          g: { DataType: 'String', StringValue: '🎉' },
        }),
      ).toBeUndefined();
    });

    it('accepts 10 attributes and refuses 11 with AWS message', () => {
      const attributes = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, text('v')]));
      expect(checkMessageAttributes(attributes(10))).toBeUndefined();
      expect(checkMessageAttributes(attributes(11))).toEqual({
        code: 'InvalidParameterValue',
        queryCode: 'InvalidParameterValue',
        message: 'Number of message attributes [11] exceeds the allowed maximum [10].',
      });
    });

    it.each([
      ['AWS.trace', /reserved/],
      ['aws.trace', /reserved/],
      ['Amazon.x', /reserved/],
      ['AMAZON.x', /reserved/],
      ['.leading', /start or end with a period/],
      ['trailing.', /start or end with a period/],
      ['a..b', /successive periods/],
      ['with space', /only A-Z/],
      ['ünïcode', /only A-Z/],
      ['x'.repeat(257), /at most 256/],
    ])('refuses the name %j', (name, message) => {
      const problem = checkMessageAttribute(name, text('v'));
      expect(problem?.code).toBe('InvalidParameterValue');
      expect(problem?.message).toMatch(message);
    });

    it('accepts a name of 256 characters and names that merely contain AWS', () => {
      expect(checkMessageAttribute('x'.repeat(256), text('v'))).toBeUndefined();
      expect(checkMessageAttribute('myAWS.value', text('v'))).toBeUndefined();
      expect(checkMessageAttribute('AWSfoo', text('v'))).toBeUndefined();
    });

    it.each([
      ['an empty String value', text(''), /non-empty value of type 'String'/],
      ['a String type without StringValue', { DataType: 'String' }, /non-empty value/],
      ['an empty Binary value', { DataType: 'Binary', BinaryValue: '' }, /non-empty value of type 'Binary'/],
      ['a lower-case data type', { DataType: 'string', StringValue: 'v' }, /supported type prefixes/],
      ['an unknown data type', { DataType: 'Date', StringValue: 'v' }, /supported type prefixes/],
      ['a missing data type', { StringValue: 'v' }, /must have a data type/],
      ['NUL in a String value', text('a\u0000'), /invalid character \(U\+0000\)/],
      ['a Number that is not a number', { DataType: 'Number', StringValue: 'one' }, /to a number/],
      ['a Number with 39 digits', { DataType: 'Number', StringValue: '1'.repeat(39) }, /38 digits/],
      ['a Number above 10^126', { DataType: 'Number', StringValue: '1e127' }, /outside/],
    ])('refuses %s', (_what, attribute, message) => {
      const problem = checkMessageAttribute('name', attribute);
      expect(problem?.code).toBe('InvalidParameterValue');
      expect(problem?.message).toMatch(message);
    });

    it('accepts Numbers at the edges of the range and of the precision', () => {
      for (const value of ['1'.repeat(38), '1e126', '1e-128', '0.000', '-0012.3400', '.5']) {
        expect(checkMessageAttribute('n', { DataType: 'Number', StringValue: value }), value).toBeUndefined();
      }
    });
  });

  describe('size', () => {
    it('counts the body, each attribute name, data type and value, and binary values decoded', () => {
      const attributes = {
        name: text('héllo'), // 4 + 6 + 6
        bin: { DataType: 'Binary', BinaryValue: Buffer.alloc(30).toString('base64') }, // 3 + 6 + 30 (40 in base64)
      };
      expect(sqsMessageSize('🎉ab', attributes)).toBe(6 + 16 + 39);
    });

    it('accepts a message of exactly MaximumMessageSize bytes and refuses one byte more, attributes included', () => {
      const attributes = { k: text('v') }; // 1 + 6 + 1 = 8 bytes
      expect(checkMessage('x'.repeat(1_024 - 8), attributes, 1_024)).toBeUndefined();
      expect(checkMessage('x'.repeat(1_024 - 7), attributes, 1_024)).toEqual({
        code: 'InvalidParameterValue',
        queryCode: 'InvalidParameterValue',
        message: 'One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.',
      });
    });

    it('accepts a batch of exactly 1 MiB and refuses one byte more', () => {
      const entries = (extra: number) =>
        Array.from({ length: 4 }, (_, i) => ({ MessageBody: 'x'.repeat(262_144 + (i === 0 ? extra : 0)) }));
      expect(checkSendBatchSize(entries(0))).toBeUndefined();
      expect(checkSendBatchSize(entries(1))).toMatchObject({
        code: 'BatchRequestTooLong',
        queryCode: 'AWS.SimpleQueueService.BatchRequestTooLong',
      });
    });
  });

  describe('batch entries', () => {
    it.each([
      ['no entries', [], 'EmptyBatchRequest'],
      ['11 entries', Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}` })), 'TooManyEntriesInBatchRequest'],
      ['a repeated id', [{ Id: 'a' }, { Id: 'a' }], 'BatchEntryIdsNotDistinct'],
      ['an id with a dot', [{ Id: 'a.b' }], 'InvalidBatchEntryId'],
      ['an id of 81 characters', [{ Id: 'x'.repeat(81) }], 'InvalidBatchEntryId'],
    ])('refuses %s', (_what, entries, code) => {
      expect(checkBatchEntries(entries)?.code).toBe(code);
    });

    it('accepts 10 distinct ids of up to 80 characters', () => {
      expect(checkBatchEntries(Array.from({ length: 10 }, (_, i) => ({ Id: `${i}-${'x'.repeat(70)}` })))).toBeUndefined();
    });
  });

  describe('the 12-hour visibility limit', () => {
    it('allows a timeout up to 12 hours after the receive and refuses one second more', () => {
      const elevenHours = 11 * 3600;
      expect(checkVisibilityExtension(3_600, elevenHours)).toBeUndefined();
      expect(checkVisibilityExtension(3_601, elevenHours)?.message).toMatch(/beyond the limit \[43200 seconds\]/);
    });

    it('refuses a timeout outside 0..43200 whatever the time since the receive', () => {
      expect(checkVisibilityExtension(43_201, 0)?.message).toMatch(/Must be between 0 and 43200/);
      expect(checkVisibilityExtension(-1, 0)?.code).toBe('InvalidParameterValue');
    });
  });
});

function checkMessageBody(value: string) {
  return checkMessage(value, undefined, 1_048_576);
}

describe('sqsQueryErrorHeader', () => {
  it.each([
    ['AWS.SimpleQueueService.MissingParameter;Sender', 'MissingParameter;Sender'],
    ['AWS.SimpleQueueService.InvalidParameterValue;Sender', 'InvalidParameterValue;Sender'],
    ['AWS.SimpleQueueService.QueueNameExists;Sender', 'QueueAlreadyExists;Sender'],
    ['AWS.SimpleQueueService.NonExistentQueue;Sender', 'AWS.SimpleQueueService.NonExistentQueue;Sender'],
    ['BatchRequestTooLong;Sender', 'AWS.SimpleQueueService.BatchRequestTooLong;Sender'],
    ['AWS.SimpleQueueService.InternalError;Receiver', 'InternalError;Receiver'],
  ])('sends %s as SQS does: %s', (fauxqs, sqs) => {
    expect(sqsQueryErrorHeader(fauxqs)).toBe(sqs);
  });
});
