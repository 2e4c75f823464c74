import type { RowKey } from './client.ts';

/**
 * The identity of an API record from a resource's declared key fields (`resources/*.ts` `key`),
 * for `paginate({ rowKey })`. undefined when a key field is absent or null: such a row is never
 * taken for a repeat. Composite keys join their parts as JSON, so ["a","b"] ≠ ["a,b"].
 */
export function rowKeyOf(fields: readonly string[]): RowKey | undefined {
  if (fields.length === 0) return undefined;
  if (fields.length === 1) {
    const f = fields[0]!;
    return (row) => {
      const v = (row as Record<string, unknown> | null)?.[f];
      return v === undefined || v === null ? undefined : String(v);
    };
  }
  return (row) => {
    const r = row as Record<string, unknown> | null;
    const parts: unknown[] = [];
    for (const f of fields) {
      const v = r?.[f];
      if (v === undefined || v === null) return undefined;
      parts.push(v);
    }
    return JSON.stringify(parts);
  };
}
