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
