import { randomBytes } from 'node:crypto';

/** Random source: `next()` returns a float in [0, 1); `id()` a fresh unguessable identifier. */
export interface RandomSource {
  next(): number;
  id(): string;
}

export const cryptoRandom: RandomSource = {
  next: () => randomBytes(6).readUIntBE(0, 6) / 2 ** 48,
  id: () => randomBytes(16).toString('hex'),
};

/** Deterministic source for tests: cycles through the given values; ids count up. */
export function sequenceRandom(values: readonly number[]): RandomSource {
  let i = 0;
  let n = 0;
  return {
    next: () => {
      const v = values[i % values.length];
      i += 1;
      if (v === undefined || v < 0 || v >= 1) throw new RangeError('sequenceRandom values must be in [0, 1)');
      return v;
    },
    id: () => (n += 1).toString(16).padStart(32, '0'),
  };
}
