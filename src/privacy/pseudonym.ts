/**
 * Pseudonyms that keep joins working: p_ + base32 (RFC 4648 alphabet, lower case, no padding) of
 * the first 120 bits of HMAC-SHA256(key, UTF-8 of the value). The same value gives the same
 * pseudonym in every run, table, shard and format while the key stays the same; without the key
 * nobody can compute one from an id, nor go back.
 *
 * Collision bound: for n distinct values the chance that any two share a pseudonym is at most
 * n²/2^121: about 4·10^-19 for a billion people, 4·10^-13 for a trillion ids.
 *
 * The prefix and the lower-case alphabet make a pseudonym impossible to mistake for a service id
 * (those are `A` + digits) and let a second pass recognise one: pseudonymising a pseudonym
 * returns it unchanged, so a row transformed twice still joins.
 */
import { createHmac } from 'node:crypto';
import { inspect } from 'node:util';

export const PSEUDONYM_PREFIX = 'p_';
const MAC_BYTES = 15; // 120 bits: 24 base32 characters
export const PSEUDONYM_RE = /^p_[a-z2-7]{24}$/;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/** Keys shorter than this are refused: a guessable key lets anyone recompute pseudonyms from known ids. */
export const MIN_KEY_BYTES = 32;

function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >>> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31];
  return out;
}

/**
 * The secret key, read once at configuration time. It never prints: JSON, util.inspect and
 * template strings show only its fingerprint `id` (recorded in manifests so a loader can tell
 * data pseudonymised with different keys apart; it reveals nothing about the key).
 */
export class PseudonymiseKey {
  readonly #bytes: Uint8Array;
  /** 16 hex digits of HMAC-SHA256(key, a fixed label): a fingerprint, not the key. */
  readonly id: string;

  constructor(bytes: Uint8Array) {
    this.#bytes = Uint8Array.from(bytes);
    this.id = createHmac('sha256', this.#bytes).update('\u0000school-export key fingerprint v1').digest('hex').slice(0, 16);
  }

  /** The key material, for an HMAC (or to hand to a worker thread). Never log it. */
  material(): Uint8Array {
    return this.#bytes;
  }

  toJSON(): { key_id: string } {
    return { key_id: this.id };
  }

  toString(): string {
    return `[pseudonymise key ${this.id}]`;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}

export type Pseudonymise = (value: string) => string;

/**
 * value -> pseudonym. Ids repeat (one student in many achievements), so results are memoised;
 * the memo is dropped when it reaches `memo` entries, which bounds memory on huge exports.
 */
export function createPseudonymiser(key: PseudonymiseKey, memo = 65_536): Pseudonymise {
  const material = key.material();
  const seen = new Map<string, string>();
  return (value) => {
    let p = seen.get(value);
    if (p !== undefined) return p;
    if (PSEUDONYM_RE.test(value)) return value;
    p = PSEUDONYM_PREFIX + base32(createHmac('sha256', material).update(value, 'utf8').digest().subarray(0, MAC_BYTES));
    if (seen.size >= memo) seen.clear();
    seen.set(value, p);
    return p;
  };
}
