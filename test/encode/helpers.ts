import { Writable } from 'node:stream';
import { compileFlattener, type FlattenContext } from '../../src/flatten/index.ts';
import { formatByName, type FormatOptions } from '../../src/format/index.ts';
import { compileResource } from '../../src/encode/page-encoder.ts';
import type { EncoderKind } from '../../src/encode/record-code.ts';
import type { ResourceSpec } from '../../src/resources/types.ts';

function sink(): { out: Writable; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  return {
    out: new Writable({
      write(c: Buffer, _e, cb) {
        chunks.push(c);
        cb();
      },
    }),
    bytes: () => Buffer.concat(chunks),
  };
}

export interface Written {
  files: Record<string, Buffer>;
  drift: Record<string, string[]>;
}

const driftOf = (m: Map<string, Set<string>>) => Object.fromEntries([...m].map(([t, s]) => [t, [...s].sort()]));

/** The reference path: flatten each page, then the format writer's write(rows). */
export async function viaRows(
  spec: ResourceSpec,
  format: EncoderKind,
  opts: FormatOptions,
  ctx: FlattenContext,
  pages: unknown[][],
): Promise<Written> {
  const fl = compileFlattener(spec);
  const outs = new Map(fl.tables.map((t) => [t.name, sink()]));
  const writers = new Map(fl.tables.map((t) => [t.name, formatByName(format).open(t, outs.get(t.name)!.out, opts)]));
  for (const p of pages) for (const [t, rows] of fl.flattenBatch(p, ctx)) if (rows.length) await writers.get(t)!.write(rows);
  for (const w of writers.values()) await w.finish();
  return { files: Object.fromEntries([...outs].map(([t, s]) => [t, s.bytes()])), drift: driftOf(fl.drift()) };
}

/** The fast path: the page encoder, then the format writer's writeEncoded(chunk). */
export async function viaEncoder(
  spec: ResourceSpec,
  format: EncoderKind,
  opts: FormatOptions,
  ctx: FlattenContext,
  pages: unknown[][],
): Promise<Written> {
  const enc = compileResource(spec, format, opts).forTask(ctx);
  const tables = enc.flattener.tables;
  const outs = new Map(tables.map((t) => [t.name, sink()]));
  const writers = new Map(tables.map((t) => [t.name, formatByName(format).open(t, outs.get(t.name)!.out, opts)]));
  for (const p of pages) for (const { table, chunk } of enc.encode(p).tables) await writers.get(table)!.writeEncoded!(chunk);
  for (const w of writers.values()) await w.finish();
  return { files: Object.fromEntries([...outs].map(([t, s]) => [t, s.bytes()])), drift: driftOf(enc.drift()) };
}
