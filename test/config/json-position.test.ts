import { describe, expect, it } from 'vitest';
import { jsonErrorLocation, jsonErrorOffset } from '../../src/config/json-position.ts';

describe('jsonErrorOffset: where JSON text stops being JSON', () => {
  it('agrees with JSON.parse on what is valid', () => {
    const texts = [
      '{}',
      '[]',
      ' {"a": [1, -2.5e3, true, false, null, "x\\"y\\u00e9\\n"], "b": {"c": {}}} ',
      '"s"',
      '0',
      '{"a":1,}',
      '[1,]',
      '{"a" 1}',
      '01',
      '1.',
      '"\\x"',
      '"\\u12g4"',
      '{"a":1}}',
      "{'a':1}",
      '[tru]',
      '"a\tb"',
      '',
      '{"a":',
    ];
    for (const t of texts) {
      let valid = true;
      try {
        JSON.parse(t);
      } catch {
        valid = false;
      }
      expect(jsonErrorOffset(t) === undefined, JSON.stringify(t)).toBe(valid);
    }
  });

  it('points at the first offending character, as line and column', () => {
    expect(jsonErrorOffset('{"a":1,}')).toBe(7);
    expect(jsonErrorOffset('{"a":')).toBe(5);
    expect(jsonErrorLocation('{\n  "dest": "./x",\n  "format": csv\n}')).toEqual({ line: 3, column: 13 });
    expect(jsonErrorLocation('{"a": 1}')).toBeUndefined();
  });
});
