import { describe, expect, it } from 'vitest';
import { TextBytes } from '../../src/format/text-bytes.ts';

describe('TextBytes', () => {
  it('holds exactly the UTF-8 of the appended text, across growth, for any characters', () => {
    const pieces = ['plain,', 'é àccents', '王 CJK', '🏆 emoji 🌟🎉', 'lone \ud800 surrogate', '"quoted"\r\n', ''];
    const b = new TextBytes(1); // smallest start: every append may grow it
    let all = '';
    for (let i = 0; i < 2000; i++) {
      const s = pieces[i % pieces.length]! + i;
      b.append(s);
      all += s;
    }
    const out = b.take();
    expect(out.equals(Buffer.from(all, 'utf8'))).toBe(true);
    expect(b.length).toBe(out.length);
  });

  it('is empty when nothing was appended', () => {
    expect(new TextBytes().take().length).toBe(0);
  });
});
