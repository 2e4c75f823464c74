/**
 * Deterministic integer hashing: every generated value is a pure function of (seed, school,
 * resource, row index, field), so a row can be produced on demand without storing it and the
 * same seed always yields the same bytes.
 */
const TWO_32 = 4294967296;

function mix(h: number, v: number): number {
  h = Math.imul(h ^ v, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Hash of a number that may exceed 32 bits (row indexes go up to 1e10). */
export function hashInt(h: number, v: number): number {
  return mix(mix(h, v >>> 0), Math.floor(v / TWO_32) >>> 0);
}

/** Seed for one stream of values (per school and resource); computed once, not per row. */
export function streamSeed(seed: number, school: number, kind: number): number {
  return hashInt(hashInt(hashInt(0x5eed, seed), school), kind);
}

/** The value of field `field` of row `i` in a stream. */
export function rnd(stream: number, i: number, field: number): number {
  return mix(hashInt(stream, i), field + 0x9e37);
}

export function pick<T>(list: readonly T[], h: number): T {
  return list[h % list.length];
}

/** Short hex digest of a string, for fake tokens. */
export function hexOf(text: string, seed: number): string {
  let h = hashInt(0x70c3, seed);
  for (let k = 0; k < text.length; k++) h = mix(h, text.charCodeAt(k));
  const h2 = mix(h, 0xabc);
  return h.toString(16).padStart(8, '0') + h2.toString(16).padStart(8, '0');
}
