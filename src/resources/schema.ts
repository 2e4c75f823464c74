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
  // A datetime's zone name shares the class of its instant (a date of birth's zone is part of it).
  const personal = field.personal ? { personal: field.personal, ...(field.personalWhen ? { personalWhen: field.personalWhen } : {}) } : {};
  if (field.type === 'datetime') {
    return [
      { name, type: 'timestamp', nullable: field.nullable, ...personal },
      { name: `${name}__timezone`, type: 'string', nullable: field.nullable, ...personal },
    ];
  }
  return [{ name, type: COLUMN_TYPE[field.type], nullable: field.nullable, ...personal }];
}

function withMeta(name: string, columns: ColumnDef[], key: string[]): TableSchema {
  return { name, columns: [...columns, ...META_COLUMNS, EXTRA_COLUMN], key };
}

/** The same spec, the same schemas (specs are data, never changed): built once, not per task. */
const built = new WeakMap<ResourceSpec, TableSchema[]>();

/** The parent table and one table per child include, in that order. */
export function tableSchemas(spec: ResourceSpec): TableSchema[] {
  let schemas = built.get(spec);
  if (!schemas) built.set(spec, (schemas = buildSchemas(spec)));
  return schemas;
}

function buildSchemas(spec: ResourceSpec): TableSchema[] {
  const parent = withMeta(spec.name, spec.fields.flatMap(fieldColumns), spec.key);
  // The parent key holds the parent's id, so it is personal exactly when that id is (students' contacts).
  const parentId = spec.fields.find((x) => x.path === 'id')?.personal;
  const children = (spec.children ?? []).map((c) => {
    const own = c.columns.flatMap(fieldColumns).filter((col) => col.name !== c.parentKey);
    const hasId = own.some((col) => col.name === 'id');
    const link: ColumnDef = { name: c.parentKey, type: 'string', nullable: false, ...(parentId ? { personal: parentId } : {}) };
    return withMeta(c.table, [link, ...own], hasId ? [c.parentKey, 'id'] : [c.parentKey]);
  });
  return [parent, ...children];
}
