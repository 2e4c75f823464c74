import { createHmac } from 'node:crypto';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createPseudonymiser, PseudonymiseKey, PSEUDONYM_RE } from '../../src/privacy/pseudonym.ts';

const key = (s: string) => new PseudonymiseKey(Buffer.from(s.padEnd(32, '.')));
const K1 = key('first key');
const K2 = key('second key');

describe('pseudonyms', () => {
  it('are p_ + 24 lower-case base32 characters of HMAC-SHA256(key, value) truncated to 120 bits', () => {
    const p = createPseudonymiser(K1)('A1000130000000054');
    expect(p).toMatch(PSEUDONYM_RE);
    // an independent base32 of the same MAC
    const mac = createHmac('sha256', Buffer.from('first key'.padEnd(32, '.')))
      .update('A1000130000000054')
      .digest()
      .subarray(0, 15);
    let bits = '';
    for (const b of mac) bits += b.toString(2).padStart(8, '0');
    const expected = bits
      .match(/.{5}/g)!
      .map((g) => 'abcdefghijklmnopqrstuvwxyz234567'[parseInt(g, 2)])
      .join('');
    expect(p).toBe(`p_${expected}`);
  });

  it('give the same output for the same input and key, in any pseudonymiser, and differ across keys', () => {
    const a = createPseudonymiser(K1);
    const b = createPseudonymiser(key('first key'));
    expect(a('A1')).toBe(b('A1'));
    expect(a('A1')).not.toBe(a('A2'));
    expect(createPseudonymiser(K2)('A1')).not.toBe(a('A1'));
    // memo eviction does not change results
    const small = createPseudonymiser(K1, 2);
    for (const v of ['x', 'y', 'z', 'x', 'A1']) expect(small(v)).toBe(a(v));
  });

  it('leave a pseudonym unchanged, so a row transformed twice still joins', () => {
    const p = createPseudonymiser(K1);
    expect(p(p('A1'))).toBe(p('A1'));
  });

  it('do not collide on 20,000 distinct ids (the bound is n²/2^121)', () => {
    const p = createPseudonymiser(K1);
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(p(`A${i}`));
    expect(seen.size).toBe(20_000);
  });

  it('never print the key: JSON, inspect and strings show only its fingerprint', () => {
    const secret = 'super secret pseudonymisation key material!';
    const k = new PseudonymiseKey(Buffer.from(secret));
    expect(k.id).toMatch(/^[0-9a-f]{16}$/);
    for (const text of [JSON.stringify({ k }), inspect({ k }, { depth: 5, showHidden: true }), `${k}`, String(k)]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(Buffer.from(secret).toString('hex').slice(0, 16));
      expect(text).toContain(k.id);
    }
    expect(new PseudonymiseKey(Buffer.from(secret)).id).toBe(k.id);
    expect(key('other').id).not.toBe(k.id);
  });
});
