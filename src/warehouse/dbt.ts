import { ConfigError } from '../errors.ts';
import { columnName, tableSchemas, type FieldSpec, type ResourceSpec } from '../resources/index.ts';
import type { ColumnDef, TableSchema } from '../table.ts';
import { DIALECTS, type DialectName } from './dialects.ts';
import { buildPlan, type TablePlan } from './plan.ts';
import type { SqlDialect } from './sql-dialect.ts';

/**
 * `school-export warehouse dbt`: a dbt sources file for the current-state tables, with every
 * column's type and description, `not_null` and `unique` tests on each table's key (within a
 * school), `relationships` tests from child tables to their parents, and freshness on
 * `_extracted_at`. The file is plain YAML written here (block style, every text quoted).
 */

export interface DbtOptions {
  dialect: DialectName;
  /** BigQuery dataset / Snowflake schema the tables live in (DuckDB: main). */
  dataset?: string;
  /** The source's name in `{{ source('<name>', ...) }}` (default school_export). */
  sourceName?: string;
  resources: ResourceSpec[];
  /** Warn when the newest `_extracted_at` is older than this many hours; error at twice (default 26). */
  freshnessHours?: number;
}

export interface DbtTest {
  kind: 'not_null' | 'unique' | 'relationships';
  table: string;
  /** The column or SQL expression tested. */
  column: string;
  to?: { table: string; field: string };
}

/** What the source file declares, before it is written as YAML (tests compile these). */
export interface DbtSources {
  version: 2;
  sources: Record<string, unknown>[];
  tests: DbtTest[];
}

const META_DESCRIPTIONS: Record<string, string> = {
  _school_id: 'The school the row belongs to. With the table key it identifies a row.',
  _region: 'The region code of the school (its data lives at that region’s domain).',
  _run_id: 'The export run that read this version of the row.',
  _extracted_at: 'When the export read this version of the row (UTC). Freshness is measured on it.',
  _extra: 'Fields the API sent that the resource does not declare (schema drift), as a JSON object; null when there were none.',
};

const TYPE_NOTES: Partial<Record<FieldSpec['type'], string>> = {
  string_or_integer: 'Text: the API sends a string or an integer; both are kept as text ("00012" stays "00012").',
  decimal_text: 'Decimal text exactly as sent (trailing zeros kept).',
  json: 'JSON text of the value as sent.',
  any_scalar: 'JSON text of a value of unspecified type: 5 and "5" stay distinct.',
};

const DERIVED: Record<string, string> = {
  'school_acl.id_count': 'Number of ids in `ids` (derived by the exporter).',
  'deletions.detected_by':
    '`api` for records read from /deletions; `snapshot` for deletions the exporter derived from full snapshots of tables without deletion records.',
  'deletions.table': 'The exported table holding the deleted row (null when the deletion type maps to no exported table).',
};

export function dbtSources(opts: DbtOptions): DbtSources {
  const name = opts.sourceName ?? 'school_export';
  for (const [what, v] of [
    ['--source-name', name],
    ['--dataset', opts.dataset],
  ] as const) {
    if (v !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(v)) throw new ConfigError(`${what} "${v}": letters, digits and _ only`);
  }
  const hours = opts.freshnessHours ?? 26;
  if (!Number.isInteger(hours) || hours < 1) throw new ConfigError(`--freshness-hours ${hours}: expected a whole number of hours from 1`);
  const warehouse = DIALECTS[opts.dialect];
  const d = warehouse.sql(opts.dataset === undefined ? {} : { dataset: opts.dataset });
  const schemas = opts.resources.flatMap((r) => tableSchemas(r).map((s) => ({ s, r })));
  const plan = buildPlan(schemas.map((x) => x.s));
  const byName = new Map(schemas.map((x) => [x.s.name, x]));
  const tests: DbtTest[] = [];
  const tables = plan.tables.map((t) => {
    const { s, r } = byName.get(t.name)!;
    const keyTests = keyTestsOf(t, s, d);
    tests.push(...keyTests);
    return {
      name: t.name,
      description: tableDescription(t, r),
      // Tables read incrementally keep a row's _extracted_at until the row changes: a quiet
      // table is not a stale one. Freshness is checked on the tables every run reads in full.
      ...(r.incremental ? { freshness: null } : {}),
      columns: t.columns.map((col) => ({
        name: col.name,
        description: columnDescription(col, t, r),
        data_type: d.finalType(col.type),
        ...(keyTests.some((k) => k.kind === 'not_null' && k.column === col.name) ? { data_tests: ['not_null'] } : {}),
      })),
      data_tests: keyTests
        .filter((k) => k.kind !== 'not_null')
        .map((k) =>
          k.kind === 'unique'
            ? { unique: { column_name: k.column } }
            : { relationships: { column_name: k.column, to: `source('${name}', '${k.to!.table}')`, field: k.to!.field } },
        ),
    };
  });
  const schema = opts.dataset ?? (opts.dialect === 'duckdb' ? 'main' : opts.dialect === 'bigquery' ? 'school_export' : undefined);
  return {
    version: 2,
    sources: [
      {
        name,
        description:
          'Current-state tables loaded by school-export (one row per school and key: the latest version, rows deleted upstream removed). ' +
          'Bookkeeping tables (_school_export_*, _raw_*) are not sources.',
        ...(schema ? { schema } : {}),
        loader: 'school-export',
        loaded_at_field: '_extracted_at',
        freshness: { warn_after: { count: hours, period: 'hour' }, error_after: { count: hours * 2, period: 'hour' } },
        tables,
      },
    ],
    tests,
  };
}

/** not_null on every key column; unique on the key within a school; children relate to their parent. */
function keyTestsOf(t: TablePlan, s: TableSchema, d: SqlDialect): DbtTest[] {
  const types = new Map(s.columns.map((c) => [c.name, c.type]));
  const text = (col: string): string => (types.get(col) === 'string' ? col : `CAST(${col} AS ${d.finalType('string')})`);
  const key = ['_school_id', ...t.key];
  const out: DbtTest[] = key.map((col) => ({ kind: 'not_null', table: t.name, column: col }));
  out.push({ kind: 'unique', table: t.name, column: key.length === 1 ? key[0]! : key.map(text).join(" || '|' || ") });
  if (t.parent) {
    out.push({
      kind: 'relationships',
      table: t.name,
      column: `_school_id || '|' || ${text(t.parent.column)}`,
      to: { table: t.parent.table, field: "_school_id || '|' || id" },
    });
  }
  return out;
}

function tableDescription(t: TablePlan, r: ResourceSpec): string {
  const key = t.key.length ? `(_school_id, ${t.key.join(', ')})` : '_school_id';
  if (t.parent) {
    const include = r.children?.find((c) => c.table === t.name)?.include ?? t.name;
    return `The \`${include}\` of each ${t.parent.table} row: one row per ${key}, as of the parent's current version.`;
  }
  const how = r.incremental
    ? 'read incrementally (rows changed since the last run), in full on first runs and snapshots'
    : 'read in full every run';
  return `Current state of ${r.path.replace('{school_id}', '{id}')}: one row per ${key}, the latest version; ${how}.`;
}

function columnDescription(col: ColumnDef, t: TablePlan, r: ResourceSpec): string {
  const meta = META_DESCRIPTIONS[col.name];
  if (meta) return meta;
  const derived = DERIVED[`${t.name}.${col.name}`];
  if (derived) return derived;
  if (t.parent && col.name === t.parent.column) return `The id of the ${t.parent.table} row this row belongs to.`;
  const fields = t.parent ? (r.children?.find((c) => c.table === t.name)?.columns ?? []) : r.fields;
  const zone = col.name.endsWith('__timezone') ? fields.find((f) => `${columnName(f.path)}__timezone` === col.name) : undefined;
  if (zone) return `IANA time zone name the API gave for \`${columnName(zone.path)}\`.`;
  const field = fields.find((f) => columnName(f.path) === col.name);
  const scope = col.nullable ? ' Null when the API sent none, or when the token lacked the property’s scope.' : '';
  const what = field ? `API property \`${field.path}\`` : `\`${col.name}\``;
  const role = t.key.includes(col.name) ? ': the row’s key within its school' : '';
  if (field?.type === 'datetime')
    return `${what}${role}: a UTC instant (microseconds); the school’s zone is in \`${col.name}__timezone\`.${scope}`;
  const note = field ? TYPE_NOTES[field.type] : undefined;
  return `${what}${role}.${note ? ` ${note}` : ''}${scope}`;
}

/** Writes the sources as YAML: block mappings and sequences, every text double-quoted. */
export function toYaml(value: unknown, indent = ''): string {
  const scalar = (v: unknown): string => (v === null ? 'null' : typeof v === 'string' ? JSON.stringify(v) : String(v));
  const isBlock = (v: unknown): boolean =>
    v !== null && typeof v === 'object' && (Array.isArray(v) ? v.length > 0 : Object.keys(v as object).length > 0);
  if (Array.isArray(value)) {
    return value
      .map((item) => {
        if (!isBlock(item)) return `${indent}- ${scalar(item)}\n`;
        const inner = toYaml(item, `${indent}  `);
        return `${indent}- ${inner.slice(indent.length + 2)}`;
      })
      .join('');
  }
  return Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => {
      if (Array.isArray(v) && v.length === 0) return `${indent}${k}: []\n`;
      if (isBlock(v)) return `${indent}${k}:\n${toYaml(v, `${indent}  `)}`;
      return `${indent}${k}: ${scalar(v)}\n`;
    })
    .join('');
}

export function renderDbtSources(opts: DbtOptions): string {
  const { version, sources } = dbtSources(opts);
  return (
    `# dbt sources for the tables school-export loads (school-export warehouse dbt --dialect ${opts.dialect}).\n` +
    '# Regenerate it when resources change; see docs/warehouse.md.\n' +
    toYaml({ version, sources })
  );
}
