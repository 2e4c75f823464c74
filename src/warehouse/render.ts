import type { TableSchema } from '../table.ts';
import { DIALECTS, type DialectName } from './dialects.ts';
import { buildPlan } from './plan.ts';
import type { ScriptOptions } from './sql-dialect.ts';

export interface RenderOptions extends ScriptOptions {
  dialect: DialectName;
  tables: TableSchema[];
}

/** The statements, without terminators: tests parse them one by one. */
export function renderSqlStatements(opts: RenderOptions): string[] {
  return DIALECTS[opts.dialect].script(buildPlan(opts.tables), opts);
}

/**
 * The static load script: rendered once, run after every export (any order, any shard, killed
 * runs included). It reads the manifests in the warehouse and applies the tasks not applied yet.
 */
export function renderSql(opts: RenderOptions): string {
  const header = [
    `-- school-export: ${opts.dialect} load of ${opts.location}${opts.dataset ? ` into ${opts.dataset}` : ''}`,
    '-- Static: run it unchanged after every export. It applies each committed task not applied yet (see docs/warehouse.md).',
    ...(opts.requirePseudonymised ? ['-- Refuses tasks of runs whose manifest does not record person ids as pseudonymised.'] : []),
  ];
  return [...header, ...renderSqlStatements(opts).map((s) => `${s};\n`)].join('\n');
}
