/**
 * Format registry: formatByName('ndjson' | 'csv' | 'parquet') -> Format; FORMATS lists them.
 * A Format opens a FormatWriter over a Node Writable given by the sink (see types.ts).
 */
import { ConfigError } from '../errors.ts';
import { csv } from './csv.ts';
import { ndjson } from './ndjson.ts';
import { parquetFormat } from './parquet.ts';
import type { Format } from './types.ts';

export const FORMATS: readonly Format[] = [ndjson, csv, parquetFormat];

export function formatByName(name: string): Format {
  const f = FORMATS.find((x) => x.name === name);
  if (!f) throw new ConfigError(`unknown format ${JSON.stringify(name)}: use one of ${FORMATS.map((x) => x.name).join(', ')}`);
  return f;
}

export type { Format, FormatOptions, FormatWriter } from './types.ts';
export { ndjsonSerializer } from './ndjson.ts';
export { csvEncoder, csvText } from './csv.ts';
export { isoToMicros, DEFAULT_ROW_GROUP_ROWS } from './parquet.ts';
