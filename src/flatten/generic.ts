import type { Row } from '../table.ts';
import { rawScalar } from './convert.ts';
import { convertDatetime, isDatetimeObject } from './datetime.ts';

/**
 * Flatten a value nobody declared, under column name `name`, with the same rules as declared
 * fields: nested objects join with '__', datetime objects become <name> + <name>__timezone,
 * arrays (and empty objects) become JSON text, scalars stay scalars. `seen` collects the names.
 */
export function flattenGeneric(v: unknown, name: string, row: Row, seen: Set<string>): void {
  if (v === null || v === undefined || typeof v !== 'object') {
    row[name] = v === undefined ? null : rawScalar(v);
    seen.add(name);
    return;
  }
  if (Array.isArray(v)) {
    row[name] = JSON.stringify(v);
    seen.add(name);
    return;
  }
  if (isDatetimeObject(v)) {
    const d = convertDatetime(v);
    if (d.raw === undefined) {
      row[name] = d.instant;
      row[`${name}__timezone`] = d.timezone;
      seen.add(name);
      seen.add(`${name}__timezone`);
      return;
    }
  }
  let any = false;
  for (const k in v as Record<string, unknown>) {
    any = true;
    flattenGeneric((v as Record<string, unknown>)[k], `${name}__${k}`, row, seen);
  }
  if (!any) {
    row[name] = '{}';
    seen.add(name);
  }
}
