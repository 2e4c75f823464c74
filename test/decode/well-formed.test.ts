import { describe, expect, it } from 'vitest';
import { parseBufferedPage } from '../../src/decode/index.ts';
import { isClean, mayHoldLoneSurrogates, replaceLoneSurrogates } from '../../src/decode/well-formed.ts';

const scope = { table: 'achievements', includes: new Map([['students', 'achievement_students']]) };

describe('lone surrogates in parsed records', () => {
  it('are replaced by U+FFFD in values and keys at any depth, counted per table (include items in their child table)', () => {
    const records = JSON.parse(
      '[{"id":"1","comment":"cut \\ud83d here \\udc00\\ud800","ok":"\\ud83d\\ude00","x":{"\\udfff key":["\\ud800"]},' +
        '"students":{"data":[{"id":"s","surname":"\\udc00","contacts":{"data":[{"n":"\\ud801"}]}}]}}]',
    ) as Record<string, unknown>[];
    const counts = new Map<string, number>();
    expect(replaceLoneSurrogates(records, scope, counts)).toBe(true);
    expect(Object.fromEntries(counts)).toEqual({ achievements: 5, achievement_students: 2 });
    const r = records[0]!;
    expect(r.comment).toBe('cut \ufffd here \ufffd\ufffd');
    expect(r.ok).toBe('😀'); // a pair is not lone
    expect(r.x).toEqual({ '\ufffd key': ['\ufffd'] });
    expect(JSON.stringify(records)).not.toMatch(/\\ud[89a-f]/i);
    expect(Object.keys(r)).toEqual(['id', 'comment', 'ok', 'x', 'students']); // order kept
  });

  it('leaves well-formed records alone, and pages whose bytes hold no surrogate escape are never walked', () => {
    const counts = new Map<string, number>();
    expect(replaceLoneSurrogates([{ a: 'é 😀 王' }], scope, counts)).toBe(false);
    expect(counts.size).toBe(0);
    expect(mayHoldLoneSurrogates(Buffer.from('{"data":[{"a":"😀 \\u00e9"}]}'))).toBe(false);
    expect(mayHoldLoneSurrogates(Buffer.from('{"data":[{"a":"\\uD83D"}]}'))).toBe(true);
    const clean = parseBufferedPage(Buffer.from('{"data":[{"a":"\\u00e9"}]}'));
    expect(isClean(clean.rows)).toBe(true);
    const escaped = parseBufferedPage(Buffer.from('{"data":[{"a":"\\ud83d\\ude00 and \\ud83d"}]}'));
    expect(isClean(escaped.rows)).toBe(false);
    expect(replaceLoneSurrogates(escaped.rows, scope, counts)).toBe(true);
    expect(escaped.rows).toEqual([{ a: '😀 and \ufffd' }]);
    expect(isClean(escaped.rows)).toBe(true);
  });
});
