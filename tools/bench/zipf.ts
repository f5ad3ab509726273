/**
 * Seeded random numbers and a Zipf-distributed draw of keys, for the contention scenario: a few
 * keys are hot, most are cold. Deterministic for a seed, so a run's workload can be repeated.
 *
 * @module
 */

/**
 * A seeded pseudo-random generator (mulberry32): numbers in [0, 1), the same sequence for the
 * same seed.
 *
 * @param seed - any 32-bit integer
 */
export function seededRandom(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The probability of each rank under a Zipf law over `keys` keys: rank `k` (from 1) has weight
 * `1 / k^exponent`, normalized. Index 0 holds rank 1 (the hottest key).
 *
 * @throws RangeError when `keys` is not a positive integer or `exponent` is negative or not finite
 */
export function zipfProbabilities(keys: number, exponent: number): number[] {
  if (!Number.isSafeInteger(keys) || keys < 1) throw new RangeError(`keys must be a positive integer, not ${keys}`);
  if (!Number.isFinite(exponent) || exponent < 0) throw new RangeError(`exponent must be a finite number ≥ 0, not ${exponent}`);
  const weights = Array.from({ length: keys }, (_, i) => 1 / (i + 1) ** exponent);
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / total);
}

/**
 * A draw of ranks under a Zipf law (see {@link zipfProbabilities}) by inverting the cumulative
 * distribution (binary search): each call returns a rank from 0 (the hottest key) to `keys − 1`.
 *
 * @param random - numbers in [0, 1), e.g. {@link seededRandom}
 * @throws RangeError as {@link zipfProbabilities}
 */
export function zipfSampler(keys: number, exponent: number, random: () => number): () => number {
  const cumulative: number[] = [];
  let sum = 0;
  for (const p of zipfProbabilities(keys, exponent)) cumulative.push((sum += p));
  return () => {
    const u = random() * sum;
    let low = 0;
    let high = keys - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (cumulative[middle]! > u) high = middle;
      else low = middle + 1;
    }
    return low;
  };
}
