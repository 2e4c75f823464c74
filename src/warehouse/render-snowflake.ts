import { ConfigError } from '../errors.ts';
import type { ColumnType } from '../table.ts';
import {
  T,
  applyStatements,
  checkStatements,
  manifestStatements,
  pendingStatements,
  setupStatements,
  stageName,
  stageTableStatements,
  stagedCountStatements,
  type NightlyParts,
} from './nightly.ts';
import type { Plan, TablePlan } from './plan.ts';
import { sqlString, type ScriptOptions, type SqlDialect, type WarehouseDialect } from './sql-dialect.ts';

/**
 * Snowflake: an external stage on the export; the manifests read from it as JSON; the pending
 * files of each table copied by COPY INTO ... FILES (built by dynamic SQL in a Snowflake
 * Scripting block) by column name with Parquet logical types (without USE_LOGICAL_TYPE,
 * TIMESTAMP_MICROS loads in the wrong unit); then one transaction applies them. FORCE = TRUE:
 * which files load is decided by the task keys, not by COPY's 64-day load history.
 */
const FILE_FORMAT = 'FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE)';
// COPY INTO accepts at most 1,000 names in FILES.
const FILES_PER_COPY = 1000;
const JSON_FORMAT = 'school_export_json';

const SNOWFLAKE_TYPES: Record<ColumnType, string> = {
  string: 'VARCHAR',
  integer: 'NUMBER(38,0)',
  double: 'FLOAT',
  boolean: 'BOOLEAN',
  // TIMESTAMP_TZ keeps the instant whatever the session time zone; the source zone name is in
  // the <field>__timezone column.
  timestamp: 'TIMESTAMP_TZ',
  json: 'VARIANT',
};

// Snowflake reserved words that appear as our column names or could: quoted (upper case, so
// they still match unquoted references and CASE_INSENSITIVE column matching).
const SNOWFLAKE_RESERVED = new Set(
  'account all alter and any as between by case cast check column connect connection constraint create cross current current_date current_time current_timestamp current_user database delete distinct drop else exists false following for from full grant group gscluster having ilike in increment inner insert intersect into is issue join lateral left like localtime localtimestamp minus natural not null of on or order organization qualify regexp revoke right rlike row rows sample schema select set some start table tablesample then to trigger true try_cast union unique update using values view when whenever where with'.split(
    ' ',
  ),
);

export interface SnowflakeSql extends SqlDialect {
  /** Exceptions the script's checks raise: declared at the top of its block. */
  readonly exceptions: string[];
}

export function snowflakeSql(schema?: string): SnowflakeSql {
  const ident = (n: string): string => (SNOWFLAKE_RESERVED.has(n) ? `"${n.toUpperCase()}"` : n);
  const table = (n: string): string => (schema ? `${schema}.${ident(n)}` : ident(n));
  const path = (e: string, p: string[]): string => `${e}${p.map((k) => `[${sqlString(k)}]`).join('')}`;
  const exceptions: string[] = [];
  return {
    name: 'snowflake',
    exceptions,
    ident,
    str: sqlString,
    table,
    temp: table,
    // Staged JSON stays text: PARSE_JSON in the merge fails loudly on bad JSON instead of
    // loading a JSON string into a VARIANT.
    rawType: (t) => (t === 'json' ? 'VARCHAR' : SNOWFLAKE_TYPES[t]),
    finalType: (t) => SNOWFLAKE_TYPES[t],
    finalValue: (e, t) => (t === 'json' ? `PARSE_JSON(${e})` : e),
    descNullsLast: 'DESC NULLS LAST', // Snowflake puts NULLs first in DESC by default
    rawNotNull: true,
    now: 'CURRENT_TIMESTAMP()',
    // Clustering pays on the tables that grow with a school's history (items keyed by id); the
    // one-row-per-school tables stay in one micro-partition anyway. Staged history is rewritten
    // every load, so it is not clustered.
    tableOptions: (t: TablePlan, kind) =>
      kind === 'final' && t.key.includes('id') ? `CLUSTER BY (${['_school_id', ...t.key].map(ident).join(', ')})` : '',
    json: {
      str: (e, p) => `${path(e, p)}::VARCHAR`,
      int: (e, p) => `${path(e, p)}::NUMBER`,
      arrayLength: (e, p) => `ARRAY_SIZE(${path(e, p)})`,
      each: (e, p, alias) => ({ from: `, LATERAL FLATTEN(input => ${path(e, p)}) AS ${alias}`, value: `${alias}.value` }),
    },
    fullMatch: (e, pattern) => `REGEXP_LIKE(${e}, ${sqlString(pattern)})`,
    stringAgg: (e, sep) => `LISTAGG(${e}, ${sqlString(sep)})`,
    // Snowflake puts IGNORE NULLS after the call
    firstNonNull: (e, over) => `FIRST_VALUE(${e}) IGNORE NULLS OVER (${over})`,
    contains: (h, n) => `CONTAINS(${h}, ${n})`,
    createTemp: (name, select) => `CREATE OR REPLACE TEMPORARY TABLE ${table(name)} AS ${select}`,
    // Snowflake Scripting raises declared exceptions, whose messages are fixed text.
    failIf: (query, _message, staticMessage) => {
      const name = `school_export_check_${exceptions.length + 1}`;
      exceptions.push(`${name} EXCEPTION (${-20001 - exceptions.length}, ${sqlString(staticMessage)})`);
      return `SELECT COUNT(*) INTO :check_rows FROM (${query}) AS q;\n  IF (check_rows > 0) THEN\n    RAISE ${name};\n  END IF`;
    },
    beginTransaction: 'BEGIN TRANSACTION',
    commit: 'COMMIT',
  };
}

function checkNames(opts: ScriptOptions): void {
  for (const [what, v] of Object.entries({ schema: opts.dataset, stage: opts.stage, storageIntegration: opts.storageIntegration })) {
    if (v !== undefined && !/^[A-Za-z_][A-Za-z0-9_$]{0,254}$/.test(v))
      throw new ConfigError(`Snowflake ${what} "${v}": letters, digits, _ and $ only`);
  }
}

function script(plan: Plan, opts: ScriptOptions): string[] {
  const url = opts.location.replace(/^gs:\/\//, 'gcs://').replace(/\/+$/, '') + '/';
  if (!/^(s3|gcs|azure):\/\/[A-Za-z0-9._-]+\/([A-Za-z0-9_=.\-/]*)$/.test(url)) {
    throw new ConfigError(
      `Snowflake stages read s3://, gs:// or azure:// locations (letters, digits, _ = . - / in the prefix), got ${opts.location}`,
    );
  }
  checkNames(opts);
  const schema = opts.dataset;
  const d = snowflakeSql(schema);
  const parts: NightlyParts = { plan, d, requirePseudonymised: opts.requirePseudonymised ?? false };
  const c = (n: string): string => d.ident(n);
  const q = (n: string): string => (schema ? `${schema}.${n}` : n);
  const stage = q(opts.stage ?? 'school_export_stage');
  const integration = opts.storageIntegration ?? 'school_export_integration';
  const docs =
    `SELECT REGEXP_SUBSTR(METADATA$FILENAME, '_manifests/[^/]+(/[^/]+)?$') AS ${c('manifest')}, $1 AS ${c('doc')} ` +
    `FROM @${stage}/_manifests/ (FILE_FORMAT => ${sqlString(q(JSON_FORMAT))}, PATTERN => '.*[.]json')`;
  const staged = (t: { name: string }): string => d.temp(stageName(t.name));
  const copy = plan.tables.flatMap((t) => {
    const cursor = `c_${t.name}`;
    return [
      `LET ${cursor} CURSOR FOR SELECT ${d.stringAgg(`'''' || SUBSTR(${c('path')}, ${t.name.length + 2}) || ''''`, ', ')} AS files ` +
        `FROM (SELECT ${c('path')}, FLOOR((ROW_NUMBER() OVER (ORDER BY ${c('path')}) - 1) / ${FILES_PER_COPY}) AS chunk ` +
        `FROM (SELECT DISTINCT ${c('path')} FROM ${d.temp(T.pendingFiles)} WHERE ${c('table_name')} = ${d.str(t.name)})) GROUP BY chunk`,
      `FOR f IN ${cursor} DO\n` +
        `    stmt := 'COPY INTO ${staged(t)} FROM @${stage}/${t.name}/ FILES = (' || f.files || ') ${FILE_FORMAT} ` +
        `MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = ABORT_STATEMENT FORCE = TRUE';\n` +
        '    EXECUTE IMMEDIATE stmt;\n' +
        '  END FOR',
    ];
  });
  const body = [
    ...manifestStatements(parts, docs),
    ...pendingStatements(parts),
    ...checkStatements(parts),
    ...stageTableStatements(parts),
    ...copy,
    ...stagedCountStatements(parts, staged),
    d.beginTransaction,
    ...applyStatements(parts, staged),
    d.commit,
  ];
  const block = [
    'EXECUTE IMMEDIATE $$',
    'DECLARE',
    '  stmt VARCHAR;',
    '  check_rows INTEGER;',
    ...d.exceptions.map((e) => `  ${e};`),
    'BEGIN',
    ...body.map((s) => `  ${s};`),
    "  RETURN 'school-export: load applied';",
    'EXCEPTION',
    '  WHEN OTHER THEN',
    '    ROLLBACK;',
    '    RAISE;',
    'END;',
    '$$',
  ].join('\n');
  return [
    ...(schema ? [`CREATE SCHEMA IF NOT EXISTS ${schema}`] : []),
    `CREATE STAGE IF NOT EXISTS ${stage} URL = ${sqlString(url)} STORAGE_INTEGRATION = ${integration} ${FILE_FORMAT}`,
    `CREATE FILE FORMAT IF NOT EXISTS ${q(JSON_FORMAT)} TYPE = JSON`,
    ...setupStatements(parts),
    block,
  ];
}

export const snowflake: WarehouseDialect = {
  name: 'snowflake',
  location: 's3:// | gs:// | azure:// location of the export',
  sql: (o) => snowflakeSql(o.dataset),
  script,
};
