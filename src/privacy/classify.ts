/**
 * The class of any column of a table: declared columns carry theirs (src/resources), a
 * `<col>__timezone` or `<col>__raw` companion follows its column, anything else is classified by
 * the name rules. Used by the compiled policy and by the data map (docs/personal-data.md).
 */
import type { ColumnDef, TableSchema } from '../table.ts';
import { classifyName, companionOf, type NameClass } from './name-rules.ts';

export interface ColumnClass {
  cls: NameClass | undefined;
  /** The class applies only to rows whose `column` holds one of `in`. */
  when?: { column: string; in: readonly string[] };
  how: 'declared' | 'companion' | 'name rule';
}

export function classifyColumn(schema: TableSchema, name: string, declared?: ReadonlyMap<string, ColumnDef>): ColumnClass {
  const col = declared ? declared.get(name) : schema.columns.find((c) => c.name === name);
  if (col) {
    return col.personal && col.personalWhen
      ? { cls: col.personal, when: col.personalWhen, how: 'declared' }
      : { cls: col.personal, how: 'declared' };
  }
  const companion = companionOf(name);
  if (companion) return { ...classifyColumn(schema, companion.base, declared), how: 'companion' };
  return { cls: classifyName(schema.name, name), how: 'name rule' };
}
