/**
 * `retry.parkOutOfOrder` (docs/parking.md): its way from the settings through the Lambda
 * environment to the handler's runtime configuration, off unless set, and a bad value refused.
 */
import { describe, expect, it } from 'vitest';
import { EnvironmentError, readRuntimeConfig } from '../../packages/idempotent-consumer/src/config/runtimeConfig.js';
import { environmentVariables, lambdaEnvironment, withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { settingsProblems } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';

const resources = { inboxTable: 'Inbox', idempotencyTable: 'Idem', deadLetterQueueUrl: 'http://127.0.0.1:1/0/dlq' };

describe('retry.parkOutOfOrder', () => {
  it('is off by default: no variable, and the handler does not park', () => {
    const environment = lambdaEnvironment(withOverrides(), resources);
    expect(environment).not.toHaveProperty(environmentVariables.parkOutOfOrder);
    expect(readRuntimeConfig(environment, []).parkOutOfOrder).toBe(false);
  });

  it('reaches the handler as PARK_OUT_OF_ORDER=true when on, on a standard queue and (ignored there) on a FIFO one', () => {
    for (const fifo of [false, true]) {
      const settings = withOverrides({ queue: { fifo }, retry: { parkOutOfOrder: true } });
      expect(settingsProblems(settings)).toEqual([]);
      const environment = lambdaEnvironment(settings, resources);
      expect(environment[environmentVariables.parkOutOfOrder]).toBe('true');
      expect(readRuntimeConfig(environment, []).parkOutOfOrder).toBe(true);
    }
  });

  it('refuses a value that is not a boolean, in the settings and in the environment', () => {
    expect(settingsProblems(withOverrides({ retry: { parkOutOfOrder: 'yes' as unknown as boolean } }))).toEqual([
      'retry parkOutOfOrder must be true or false, got "yes"',
    ]);
    const environment = { ...lambdaEnvironment(withOverrides(), resources), [environmentVariables.parkOutOfOrder]: 'on' };
    expect(() => readRuntimeConfig(environment, [])).toThrow(EnvironmentError);
    expect(() => readRuntimeConfig(environment, [])).toThrow(/PARK_OUT_OF_ORDER must be "true" or "false" \(or unset\), got "on"/);
  });
});
