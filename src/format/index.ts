/**
 * Format registry, the one place format names come from: FORMATS lists every format, FormatName
 * and FORMAT_NAMES (config validation, the CLI's choices) derive from it. Adding a format is one
 * file exporting a `Format` with a literal name, plus one line here.
 */
import { ConfigError } from '../errors.ts';
import { csv } from './csv.ts';
import { ndjson } from './ndjson.ts';
import { parquetFormat } from './parquet.ts';
import type { Format } from './types.ts';

export const FORMATS = [ndjson, csv, parquetFormat] as const;

export type FormatName = (typeof FORMATS)[number]['name'];
export const FORMAT_NAMES: readonly FormatName[] = FORMATS.map((f) => f.name);

export function formatByName(name: string): Format {
  const f = FORMATS.find((x) => x.name === name);
  if (!f) throw new ConfigError(`unknown format ${JSON.stringify(name)}: use one of ${FORMAT_NAMES.join(', ')}`);
  return f;
}

export type { Format, FormatOptions, FormatWriter } from './types.ts';
export { ndjsonSerializer } from './ndjson.ts';
export { csvEncoder, csvText } from './csv.ts';
export {
  isoToMicros,
  isoMicros,
  DEFAULT_ROW_GROUP_ROWS,
  DEFAULT_ROW_GROUP_BYTES,
  PARQUET_WRITERS,
  type ParquetWriterName,
} from './parquet.ts';
