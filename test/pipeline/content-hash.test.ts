import { describe, expect, it } from 'vitest';
import { canEncode, compileResource } from '../../src/encode/page-encoder.ts';
import { compileFlattener, meta, type FlattenContext } from '../../src/flatten/index.ts';
import { ContentHash } from '../../src/pipeline/content-hash.ts';
import { resourceByName } from '../../src/resources/index.ts';
import { CTX, FIXTURES } from '../flatten/fixtures.ts';

const FORMATS = ['ndjson', 'csv', 'parquet'] as const;
const LATER: FlattenContext = { ...CTX, runId: '20261123T011558.456Z-b7c1', extractedAt: '2026-11-23T01:15:58.456Z' };
const UNDER = { format: 'ndjson', format_options: { gzip: false }, personal_data: 'keep' };

function perRun(ctx: FlattenContext): { _run_id: string; _extracted_at: string } {
  const m = meta(ctx);
  return { _run_id: String(m._run_id), _extracted_at: String(m._extracted_at) };
}

/** The hash of records as the generated encoders write them (src/encode), in pages of `size`. */
function encodedDigest(resource: string, format: (typeof FORMATS)[number], ctx: FlattenContext, records: unknown[], under = UNDER): string {
  const spec = resourceByName(resource)!;
  const enc = compileResource(spec, format, {}).forTask(ctx);
  const schemas = new Map(enc.flattener.tables.map((t) => [t.name, t]));
  const h = new ContentHash(under, perRun(ctx));
  for (const { table, chunk } of enc.encode(records).tables) h.chunk(table, chunk, schemas.get(table)!);
  return h.digest();
}

/** The hash of the same records flattened (the reference path's rows). */
function rowsDigest(resource: string, ctx: FlattenContext, records: unknown[], under = UNDER): string {
  const h = new ContentHash(under, perRun(ctx));
  for (const [table, rows] of compileFlattener(resourceByName(resource)!).flattenBatch(records, ctx)) if (rows.length) h.rows(table, rows);
  return h.digest();
}

describe('content hash', () => {
  const encodable = Object.keys(FIXTURES).filter((r) => resourceByName(r) && FORMATS.every((f) => canEncode(resourceByName(r)!, f, {})));

  it('ignores _run_id and _extracted_at, whatever path wrote the rows, and sees any other change', () => {
    expect(encodable.length).toBeGreaterThan(2);
    for (const resource of Object.keys(FIXTURES)) {
      if (!resourceByName(resource)) continue;
      const records = FIXTURES[resource]!;
      const changed = structuredClone(records) as Record<string, unknown>[];
      changed[0]!.id = `${String(changed[0]!.id)}9`;
      const a = rowsDigest(resource, CTX, records);
      expect({ resource, later: rowsDigest(resource, LATER, records) }).toEqual({ resource, later: a });
      expect(rowsDigest(resource, LATER, changed)).not.toBe(a);
      if (!encodable.includes(resource)) continue;
      for (const format of FORMATS) {
        const e = encodedDigest(resource, format, CTX, records);
        expect({ resource, format, later: encodedDigest(resource, format, LATER, records) }).toEqual({ resource, format, later: e });
        expect(encodedDigest(resource, format, LATER, changed)).not.toBe(e);
      }
    }
  });

  it('differs under another format, format option or personal-data policy', () => {
    const records = FIXTURES.achievements!;
    const base = rowsDigest('achievements', CTX, records);
    expect(rowsDigest('achievements', CTX, records, { ...UNDER, format: 'csv' })).not.toBe(base);
    expect(rowsDigest('achievements', CTX, records, { ...UNDER, format_options: { gzip: true } })).not.toBe(base);
    expect(rowsDigest('achievements', CTX, records, { ...UNDER, personal_data: 'v1:person_id=pseudonymise:key=ab12' })).not.toBe(base);
    // settings are compared as values, not as the order their keys were built in
    expect(rowsDigest('achievements', CTX, records, { personal_data: 'keep', format_options: { gzip: false }, format: 'ndjson' })).toBe(
      base,
    );
  });

  it('a row holding the per-run values in its own data is never mistaken for the same content', () => {
    const records = structuredClone(FIXTURES.achievements!) as Record<string, unknown>[];
    const a = encodedDigest('achievements', 'ndjson', CTX, records);
    // the comment quotes this run's id: the next run (another id) hashes it as text, so the content differs
    records[0]!.comment = `see ${CTX.runId}`;
    const b = encodedDigest('achievements', 'ndjson', CTX, records);
    const c = encodedDigest('achievements', 'ndjson', LATER, records);
    expect(b).not.toBe(c);
    expect(b).not.toBe(a);
  });
});
