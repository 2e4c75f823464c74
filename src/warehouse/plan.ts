import { ConfigError } from '../errors.ts';
import { PROPERTY_SCOPES } from '../resources/scopes.ts';
import { EXTRA_COLUMN, type ColumnDef, type TableSchema } from '../table.ts';

/**
 * The warehouse plan: what every dialect needs to know about a table to stage it and merge it
 * into a current-state table. It is derived once from the table schemas; renderers only turn it
 * into text, so the DuckDB loader (which runs the DuckDB rendering) proves the logic the
 * BigQuery and Snowflake renderings share.
 */
export interface TablePlan {
  name: string;
  /** Declared columns in output order, `_extra` appended when the schema does not declare it. */
  columns: ColumnDef[];
  /** Row identity within a school ([] = one row per school). */
  key: string[];
  /** Latest version first: updated_at when the table has it, then _extracted_at, then _run_id. */
  versionOrder: string[];
  /** Child tables keep only rows that came with their parent's current version (same _run_id). */
  parent?: { table: string; column: string };
  /** Rows are removed by deletion records of this table (top-level tables keyed by id). */
  appliesDeletions: boolean;
  /**
   * Columns a token without a property's scope could read as null (declared nullable data
   * columns), when the table has updated_at to tell a row's versions apart: in those of them
   * that are guarded by a property scope, a null never replaces a non-null value of the same
   * version (school, key, updated_at). Empty for child tables (they follow their parent's row).
   */
  maskable: string[];
  /**
   * Maskable columns known to be guarded whatever a manifest says: those PROPERTY_SCOPES
   * declares (and columns flattened from them). At load time, columns named by any task's
   * `scope_guarded` or `scope_masked` are guarded too (GUARDED_TABLE, MASKED_TABLE).
   */
  guarded: string[];
}

export interface Plan {
  tables: TablePlan[]; // parents before children
  /** The deletions table, when the schemas include it with the columns the merge needs. */
  deletions?: TablePlan;
}

/** Applied task keys: what this warehouse has loaded (see merge-sql.ts bookkeepingDdl). */
export const TASKS_TABLE = '_school_export_tasks';
export const SNAPSHOTS_TABLE = '_school_export_snapshots';
/** (run, school, table, column) of columns a run's token could not read (scope-masked nulls). */
export const MASKED_TABLE = '_school_export_masked';
/** (table, column) named by a task's `scope_guarded`: guarded like PROPERTY_SCOPES' columns. */
export const GUARDED_TABLE = '_school_export_guarded';
/** (school, table) with rows, snapshots or deletions applied since the last merge: what the merge recomputes. */
export const TOUCHED_TABLE = '_school_export_touched';
/**
 * (run, school, table) of pending tasks whose files of that table are never loaded, because a
 * later full read of the school's resource replaced them (supersede.ts): `warehouse load
 * --supersede` records them, a user INSERTs them for the static scripts.
 */
export const SUPERSEDED_TABLE = '_school_export_superseded';
/** Manifest documents `warehouse load` has read to the end (it skips them next time). */
export const MANIFESTS_TABLE = '_school_export_manifests';
/** What loaders before task keys recorded (run ids or part keys); `warehouse load` migrates it. */
export const LEGACY_RUNS_TABLE = '_school_export_runs';
/** The resource name under which a purge is recorded as an applied task. */
export const PURGE_RESOURCE = '_purge';
export const DELETIONS_TABLE = 'deletions';
export const rawName = (table: string): string => `_raw_${table}`;

const SAFE_NAME = /^[a-z_][a-z0-9_]{0,127}$/;
const DELETION_COLUMNS = ['id', 'table', 'deleted_at', 'restored_at', '_extracted_at', '_run_id'];

export function buildPlan(schemas: TableSchema[]): Plan {
  const byName = new Map<string, TableSchema>();
  for (const s of schemas) {
    // Names become identifiers in SQL text: refuse anything that would need escaping.
    for (const n of [s.name, ...s.columns.map((c) => c.name)]) {
      if (!SAFE_NAME.test(n)) throw new ConfigError(`table ${s.name}: "${n}" is not a safe SQL name (lower-case letters, digits, _)`);
    }
    for (const k of s.key) {
      if (!s.columns.some((c) => c.name === k)) throw new ConfigError(`table ${s.name}: key column ${k} is not a column`);
    }
    byName.set(s.name, s);
  }
  const deletionsSchema = byName.get(DELETIONS_TABLE);
  const hasDeletions = deletionsSchema !== undefined && DELETION_COLUMNS.every((c) => deletionsSchema.columns.some((d) => d.name === c));

  const plans = schemas.map((s): TablePlan => {
    const names = new Set(s.columns.map((c) => c.name));
    const parent = findParent(s, schemas);
    const maskable =
      !parent && names.has('updated_at') ? s.columns.filter((c) => c.nullable && !c.name.startsWith('_') && !s.key.includes(c.name)) : [];
    return {
      name: s.name,
      columns: names.has(EXTRA_COLUMN.name) ? s.columns : [...s.columns, EXTRA_COLUMN],
      key: s.key,
      versionOrder: [...(names.has('updated_at') ? ['updated_at'] : []), '_extracted_at', '_run_id'],
      ...(parent ? { parent } : {}),
      appliesDeletions: hasDeletions && s.name !== DELETIONS_TABLE && !parent && s.key.length === 1 && s.key[0] === 'id',
      maskable: maskable.map((c) => c.name),
      guarded: maskable.map((c) => c.name).filter((c) => isDeclaredGuarded(s.name, c)),
    };
  });
  // Children are merged after their parents' current state is known.
  plans.sort((a, b) => Number(a.parent !== undefined) - Number(b.parent !== undefined));
  const deletions = hasDeletions ? plans.find((p) => p.name === DELETIONS_TABLE) : undefined;
  return { tables: plans, ...(deletions ? { deletions } : {}) };
}

/** Whether PROPERTY_SCOPES guards the column (a property, or a column flattened from one: `<property>__...`). */
function isDeclaredGuarded(table: string, column: string): boolean {
  return (PROPERTY_SCOPES[table] ?? []).some((p) => column === p || column.startsWith(`${p}__`));
}

/**
 * A child table is keyed [<parent>_id, 'id'] (or [<parent>_id] when its rows have no id) and
 * named after its parent (`achievement_students` belongs to `achievements`): the table schema
 * carries no parent link, so it is derived here.
 */
function findParent(s: TableSchema, all: TableSchema[]): TablePlan['parent'] {
  const [first, second, ...rest] = s.key;
  if (first === undefined || !first.endsWith('_id') || rest.length > 0) return undefined;
  if (second !== undefined && second !== 'id') return undefined;
  const candidates = all.filter(
    (p) =>
      p.name !== s.name &&
      p.key.length === 1 &&
      p.key[0] === 'id' &&
      (s.name.startsWith(`${p.name}_`) || s.name.startsWith(`${p.name.replace(/s$/, '')}_`)),
  );
  candidates.sort((a, b) => b.name.length - a.name.length);
  const parent = candidates[0];
  return parent ? { table: parent.name, column: first } : undefined;
}
