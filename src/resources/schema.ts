import { EXTRA_COLUMN, META_COLUMNS, type ColumnDef, type TableSchema } from '../table.ts';
import type { FieldSpec, FieldType, ResourceSpec } from './types.ts';

/** Column name of a dotted path: nested objects join with '__'. */
export function columnName(path: string): string {
  return path.split('.').join('__');
}

const COLUMN_TYPE: Record<Exclude<FieldType, 'datetime'>, ColumnDef['type']> = {
  string: 'string',
  integer: 'integer',
  double: 'double',
  boolean: 'boolean',
  string_or_integer: 'string',
  decimal_text: 'string',
  json: 'json',
  any_scalar: 'string',
};

/** The column(s) one declared field becomes; a datetime becomes the instant and its zone name. */
export function fieldColumns(field: FieldSpec): ColumnDef[] {
  const name = columnName(field.path);
  if (field.type === 'datetime') {
    return [
      { name, type: 'timestamp', nullable: field.nullable },
      { name: `${name}__timezone`, type: 'string', nullable: field.nullable },
    ];
  }
  return [{ name, type: COLUMN_TYPE[field.type], nullable: field.nullable }];
}

function withMeta(name: string, columns: ColumnDef[], key: string[]): TableSchema {
  return { name, columns: [...columns, ...META_COLUMNS, EXTRA_COLUMN], key };
}

/** The parent table and one table per child include, in that order. */
export function tableSchemas(spec: ResourceSpec): TableSchema[] {
  const parent = withMeta(spec.name, spec.fields.flatMap(fieldColumns), spec.key);
  const children = (spec.children ?? []).map((c) => {
    const own = c.columns.flatMap(fieldColumns).filter((col) => col.name !== c.parentKey);
    const hasId = own.some((col) => col.name === 'id');
    return withMeta(c.table, [{ name: c.parentKey, type: 'string', nullable: false }, ...own], hasId ? [c.parentKey, 'id'] : [c.parentKey]);
  });
  return [parent, ...children];
}
