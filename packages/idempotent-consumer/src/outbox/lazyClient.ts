import { startOnce } from '../startOnce.js';

/**
 * An AWS SDK client made at its first use, once: the one given (an instance, or a function that
 * gives one), else `create()`. A failure to make it is not remembered, so the next use tries again.
 */
export function lazyClient<Client>(
  given: Client | (() => Client | Promise<Client>) | undefined,
  create: () => Promise<Client>,
): () => Promise<Client> {
  return startOnce(() => {
    if (given === undefined) return create();
    return typeof given === 'function' ? (given as () => Client | Promise<Client>)() : given;
  });
}
