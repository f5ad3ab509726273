import { describe, expect, it } from 'vitest';
import { homeView, isStub } from '../../../packages/idempotent-consumer/src/inbox/homeMarks.js';

const home = { table: 'accounts', attribute: '_inbox', stubAttribute: '_inboxStub', stubAttributes: ['_version', 'pk'] };
const mark = { 'c#k': { h: 'h', m: 'm', x: 9_999_999_999 } };

describe('homeMarks: what decide sees of a home item', () => {
  it('a stub holds only its key, version, marks and flag: absent to decide', () => {
    const stub = { pk: 'a', _version: 'v1', _inbox: mark, _inboxStub: true };
    expect(isStub(stub, home)).toBe(true);
    expect(homeView(stub, home)).toBeUndefined();
  });

  it('a flagged item that another writer gave attributes (an UpdateItem on a stub) is an item, its marks and flag hidden', () => {
    const updated = { pk: 'a', _version: 'v1', _inbox: mark, _inboxStub: true, balance: 100 };
    expect(isStub(updated, home)).toBe(false);
    expect(homeView(updated, home)).toEqual({ pk: 'a', _version: 'v1', balance: 100 });
  });

  it('without the list of a stub’s own attributes, the flag alone decides', () => {
    const { stubAttributes: _, ...flagOnly } = home;
    expect(isStub({ pk: 'a', _inboxStub: true, balance: 1 }, flagOnly)).toBe(true);
    expect(isStub({ pk: 'a', balance: 1 }, flagOnly)).toBe(false);
  });
});
