import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.ts';

/** The README's table of error codes is the one users read: it names every code there is, and no other. */
describe('error codes', () => {
  it('the README lists exactly the codes src/errors.ts declares', () => {
    const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
    const table = [...readme.matchAll(/^\| `(E_[A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(table.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });
});
