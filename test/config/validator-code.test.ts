import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT, SCHEMA_PATH } from '../../src/config/schema.ts';
import { AJV_OPTIONS, schemaDigest, validatorModule } from '../../src/config/validator-code.ts';

describe('the generated pipeline validator (bin/prepare.js writes it into dist/)', () => {
  it('accepts and refuses exactly what ajv compiling the schema at run time does, with the same errors', () => {
    const text = readFileSync(SCHEMA_PATH, 'utf8');
    // inside the package, as in dist/: the generated code requires ajv's runtime helpers
    mkdirSync(join(PACKAGE_ROOT, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(PACKAGE_ROOT, '.tmp', 'validator-'));
    try {
      writeFileSync(join(dir, 'v.cjs'), validatorModule(text));
      const generated = createRequire(import.meta.url)(join(dir, 'v.cjs')) as ((x: unknown) => boolean) & {
        errors?: unknown;
        schemaSha256: string;
      };
      expect(generated.schemaSha256).toBe(schemaDigest(text));
      const ajv = new Ajv(AJV_OPTIONS);
      ajv.addKeyword('x-expected');
      const compiled = ajv.compile(JSON.parse(text) as object);
      const cases: unknown[] = [
        {},
        { format: 'parquet', dest: './out', per_page: 500 },
        { format: 'xml' },
        { per_page: 'abc' },
        { per_page: 0 },
        { concurrency: 3.5 },
        { unknown_key: true },
        { custom_resources: [{ name: 'students' }] },
        { custom_resources: [{ name: 'Bad Name', path: '/x' }] },
        { domains: { 'api.x': 42 } },
        { schools: 'A1' },
        { personal_data: { person_id: 'scramble' } },
      ];
      for (const c of cases) {
        expect(generated(c), JSON.stringify(c)).toBe(compiled(c));
        expect(generated.errors ?? null, JSON.stringify(c)).toEqual(compiled.errors ?? null);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
