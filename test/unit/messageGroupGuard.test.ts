import { describe, expect, it } from 'vitest';
import { MessageGroupGuard } from '../../packages/local/src/messageGroupGuard.js';

describe('MessageGroupGuard', () => {
  it('refuses a group that is held and grants another one', () => {
    // Arrange
    const guard = new MessageGroupGuard();
    guard.tryAcquire(['O-1']);

    // Act
    const sameGroup = guard.tryAcquire(['O-1']);
    const otherGroup = guard.tryAcquire(['O-2']);

    // Assert
    expect(sameGroup).toBe(false);
    expect(otherGroup).toBe(true);
    expect([...guard.heldGroups].sort()).toEqual(['O-1', 'O-2']);
  });

  it('takes several groups all or nothing', () => {
    const guard = new MessageGroupGuard();
    guard.tryAcquire(['O-1']);

    const taken = guard.tryAcquire(['O-2', 'O-1']);

    expect(taken).toBe(false);
    expect(guard.heldGroups.has('O-2')).toBe(false);
  });

  it('makes a second batch of a group wait until the first releases it', async () => {
    const guard = new MessageGroupGuard();
    const events: string[] = [];
    await guard.acquire(['O-1']);
    events.push('first acquired');

    const second = guard.acquire(['O-1']).then(() => events.push('second acquired'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    events.push('first released');
    guard.release(['O-1']);
    await second;

    expect(events).toEqual(['first acquired', 'first released', 'second acquired']);
    expect(guard.heldGroups.has('O-1')).toBe(true);
  });

  it('does not make a batch of another group wait', async () => {
    const guard = new MessageGroupGuard();
    await guard.acquire(['O-1']);

    const acquiredInTime = await Promise.race([
      guard.acquire(['O-2']).then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 50)),
    ]);

    expect(acquiredInTime).toBe(true);
  });

  it('rejects the release of a group it does not hold', () => {
    const guard = new MessageGroupGuard();

    expect(() => guard.release(['O-1'])).toThrow(/not held: O-1/);
  });
});
