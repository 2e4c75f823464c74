import { Writable } from 'node:stream';
import { compileFlattener } from '../../src/flatten/index.ts';
import { resourceByName } from '../../src/resources/index.ts';
import type { Row, TableSchema } from '../../src/table.ts';
import { CTX, FIXTURES } from '../flatten/fixtures.ts';

/** A Writable collecting everything, with a tiny buffer so writers must honour backpressure. */
export function collector(highWaterMark = 16): { out: Writable; bytes: () => Buffer; drains: () => number } {
  const chunks: Buffer[] = [];
  let drains = 0;
  const out = new Writable({
    highWaterMark,
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk);
      setImmediate(cb); // asynchronous consumer: 'drain' really has to be awaited
    },
  });
  out.on('drain', () => drains++);
  return { out, bytes: () => Buffer.concat(chunks), drains: () => drains };
}

/** Flattened fixture rows of one table (schema + rows), drift included. */
export function fixtureTable(resource: string, table = resource): { schema: TableSchema; rows: Row[] } {
  const fl = compileFlattener(resourceByName(resource)!);
  const out = fl.flattenBatch(FIXTURES[resource], CTX);
  return { schema: fl.tables.find((t) => t.name === table)!, rows: out.get(table)! };
}
