import { describe, expect, it } from 'vitest';
import { SharedStrings } from '../../src/pipeline/shared-strings.ts';

describe('SharedStrings', () => {
  it('makes each text once and hands the same one out after, within its bound', () => {
    const made: string[] = [];
    const s = new SharedStrings(2);
    const make = (k: string) => {
      made.push(k);
      return `text of ${k}`;
    };
    expect(s.of('a', make)).toBe('text of a');
    expect(s.of('a', make)).toBe('text of a');
    expect(s.of('b', make)).toBe('text of b');
    expect(made).toEqual(['a', 'b']);
    // full: it starts again (memory stays bounded), which only costs sharing
    expect(s.of('c', make)).toBe('text of c');
    expect(s.of('a', make)).toBe('text of a');
    expect(made).toEqual(['a', 'b', 'c', 'a']);
    expect(s.of('x')).toBe('x');
  });
});
