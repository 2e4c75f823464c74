import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { kindOf, mergeFiles, shapeOf } from '../../src/compact/merge.ts';
import { runTime } from '../../src/compact/compact.ts';
import { tempDir } from '../integration/helpers.ts';

/** The text merges byte for byte (the Parquet merge runs against real exports in test/integration/compact.test.ts). */
describe('compact merges', () => {
  const tmp = tempDir('compact-merge-');
  afterAll(() => tmp.cleanup());
  const noDuck = () => Promise.reject(new Error('not needed for text formats'));

  async function merged(
    kind: Parameters<typeof mergeFiles>[0],
    contents: (string | Buffer)[],
  ): Promise<{ bytes: Buffer; rows: number | undefined }> {
    const paths = contents.map((c, i) => {
      const p = join(tmp.dir, `${kind}-${i}-${Math.random().toString(16).slice(2)}.${kind}`);
      writeFileSync(p, c);
      return p;
    });
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const rows = await mergeFiles(kind, paths, out, noDuck);
    return { bytes: Buffer.concat(chunks), rows };
  }

  it('NDJSON: the lines of each file in order; a file without its last newline gets one', async () => {
    const r = await merged('ndjson', ['{"a":1}\n{"a":2}\n', '{"a":3}', '{"a":"é\\n"}\n']);
    expect(r.bytes.toString('utf8')).toBe('{"a":1}\n{"a":2}\n{"a":3}\n{"a":"é\\n"}\n');
    expect(r.rows).toBe(4);
  });

  it('NDJSON gzipped: gunzipped, merged, gzipped again', async () => {
    const r = await merged('ndjson.gz', [gzipSync('{"a":1}\n'), gzipSync('{"a":2}\n{"a":3}\n')]);
    expect(gunzipSync(r.bytes).toString('utf8')).toBe('{"a":1}\n{"a":2}\n{"a":3}\n');
    expect(r.rows).toBe(3);
  });

  it('CSV: one header, records (line breaks inside quotes included) as they are', async () => {
    const head = 'id,comment,_extra\r\n';
    const r = await merged('csv', [head + 'A1,"two\r\nlines",\r\n', head + 'A2,"",\r\n', head]);
    expect(r.bytes.toString('utf8')).toBe(head + 'A1,"two\r\nlines",\r\nA2,"",\r\n');
    expect(r.rows).toBeUndefined();
  });

  it('CSV files are merged only with files of the same header (shapeOf)', async () => {
    const a = join(tmp.dir, 'a.csv');
    const b = join(tmp.dir, 'b.csv');
    writeFileSync(a, 'id,x,_extra\r\nA1,1,\r\n');
    writeFileSync(b, 'id,x,y,_extra\r\nA1,1,2,\r\n');
    expect(await shapeOf(a, 'csv', noDuck)).not.toBe(await shapeOf(b, 'csv', noDuck));
  });

  it('kinds and run times', () => {
    expect(['x/1-0001.ndjson', 'x/1-0001.ndjson.gz', 'x/1-0001.csv', 'x/1-0001.parquet', 'x/1-0001.json'].map(kindOf)).toEqual([
      'ndjson',
      'ndjson.gz',
      'csv',
      'parquet',
      undefined,
    ]);
    expect(runTime('20261122T011558.123Z-3f9a')).toBe(Date.parse('2026-11-22T01:15:58.123Z'));
    expect(runTime('20261126T145624.949Z-compact-235b-s0of2')).toBe(Date.parse('2026-11-26T14:56:24.949Z'));
    expect(runTime('nonsense')).toBeUndefined();
  });
});
