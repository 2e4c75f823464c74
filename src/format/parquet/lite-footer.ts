import thrift from 'parquetjs-lite/gen-nodejs/parquet_types.js';
import util from 'parquetjs-lite/lib/util.js';

/**
 * parquetjs-lite writes only the legacy converted_type of a column. Readers differ on what a bare
 * TIMESTAMP_MICROS means (DuckDB reads it as a naive TIMESTAMP, which a load into TIMESTAMPTZ
 * then shifts by the session time zone). We add the modern logical type to the footer:
 * TIMESTAMP(isAdjustedToUTC=true, MICROS) for instants and STRING for text, keeping the
 * converted types for old readers. The footer is decoded, amended and re-encoded; the data pages
 * and every offset before it are untouched.
 */
const MAGIC = 'PAR1';
const CONVERTED_TIMESTAMP_MICROS = thrift.ConvertedType.TIMESTAMP_MICROS;
const CONVERTED_UTF8 = thrift.ConvertedType.UTF8;

export function withLogicalTypes(footer: Buffer): Buffer {
  const len = footer.readUInt32LE(footer.length - 8);
  if (footer.toString('latin1', footer.length - 4) !== MAGIC || len !== footer.length - 8) return footer;
  const meta = new thrift.FileMetaData();
  util.decodeThrift(meta, footer.subarray(0, len));
  for (const el of meta.schema) {
    if (el.converted_type === CONVERTED_TIMESTAMP_MICROS) {
      el.logicalType = new thrift.LogicalType({
        TIMESTAMP: new thrift.TimestampType({ isAdjustedToUTC: true, unit: new thrift.TimeUnit({ MICROS: new thrift.MicroSeconds() }) }),
      });
    } else if (el.converted_type === CONVERTED_UTF8) {
      el.logicalType = new thrift.LogicalType({ STRING: new thrift.StringType() });
    }
  }
  const body = util.serializeThrift(meta);
  const out = Buffer.alloc(body.length + 8);
  body.copy(out);
  out.writeUInt32LE(body.length, body.length);
  out.write(MAGIC, body.length + 4, 'latin1');
  return out;
}
