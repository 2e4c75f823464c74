import { describe, expect, it } from 'vitest';
import { compileFlattener } from '../../src/flatten/index.ts';
import { ndjsonSerializer } from '../../src/format/ndjson.ts';
import { RESOURCES } from '../../src/resources/index.ts';
import { CTX, FIXTURES } from './fixtures.ts';

/**
 * Golden files: every table of every built-in resource, flattened from the fixtures and written
 * as NDJSON. A change in any column name, type rule or timezone conversion shows up as a diff
 * of test/flatten/golden/<table>.ndjson, to be reviewed like code.
 */
describe('golden flattening', () => {
  for (const spec of RESOURCES) {
    it(`${spec.name}`, async () => {
      const records = FIXTURES[spec.name];
      expect(records, `a fixture for ${spec.name}`).toBeDefined();
      const fl = compileFlattener(spec);
      const out = fl.flattenBatch(records, CTX);
      for (const schema of fl.tables) {
        const line = ndjsonSerializer(schema);
        const rows = out.get(schema.name)!;
        expect(rows.length, `${schema.name} has rows`).toBeGreaterThan(0);
        const text = rows.map(line).join('\n') + '\n';
        await expect(text).toMatchFileSnapshot(`golden/${schema.name}.ndjson`);
      }
      const drift = Object.fromEntries([...fl.drift()].map(([t, s]) => [t, [...s].sort()]));
      await expect(JSON.stringify(drift, null, 2) + '\n').toMatchFileSnapshot(`golden/${spec.name}.drift.json`);
    });
  }
});
