import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { mersenne } from 'pure-rand/generator/mersenne';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';

/** Largest accepted seed (the generator takes 32 bits). */
export const MAX_SEED = 0xffff_ffff;

/**
 * A seeded random source (pure-rand's Mersenne Twister): the same seed gives the same sequence of
 * draws on every machine, so generated files and proxy drop decisions can be repeated.
 */
export class Rng {
  private readonly generator: RandomGenerator;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
      throw new Error(`seed must be an integer from 0 to ${MAX_SEED}`);
    }
    this.generator = mersenne(seed);
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return uniformInt(this.generator, min, max);
  }

  /** True with probability `p` (resolution 1e-6). */
  chance(p: number): boolean {
    return this.int(0, 999_999) < Math.round(p * 1_000_000);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)];
  }

  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** `k` distinct integers from [0, n), ascending. */
  sample(k: number, n: number): number[] {
    return this.shuffle(Array.from({ length: n }, (_, i) => i))
      .slice(0, k)
      .sort((a, b) => a - b);
  }

  /** A random UUID in version-4 form (seeded, so not for security). */
  uuid(): string {
    const hex = Array.from({ length: 32 }, () => this.int(0, 15).toString(16));
    hex[12] = '4';
    hex[16] = ((this.int(0, 3) & 0x3) | 0x8).toString(16);
    const h = hex.join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}
