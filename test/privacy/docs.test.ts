import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinTables, renderPersonalDataDoc } from '../../src/privacy/docs.ts';

const DOC = resolve(import.meta.dirname, '../../docs/personal-data.md');

describe('docs/personal-data.md', () => {
  it('is what the declarations generate (run `npm run docs:personal-data` after changing them)', () => {
    expect(readFileSync(DOC, 'utf8')).toBe(renderPersonalDataDoc());
  });

  it('says, for every built-in table, what is personal in it', () => {
    const text = renderPersonalDataDoc();
    for (const t of builtinTables()) {
      expect(text).toContain(`### ${t.name}\n`);
      for (const c of t.columns.filter((c) => c.personal)) expect(text).toContain(`| \`${c.name}\` | \`${c.personal}\``);
    }
  });
});
