import type { Argv, CommandModule } from 'yargs';
import { readPipelineFile } from '../config/resolve.ts';
import { ConfigError } from '../errors.ts';
import { selectResources, tableSchemas, type ResourceSpec } from '../resources/index.ts';
import type { TableSchema } from '../table.ts';
import { compactManifests, warehouseDbt, warehouseLoad, warehouseSql } from '../warehouse/commands.ts';
import { DIALECT_NAMES, type DialectName } from '../warehouse/dialects.ts';
import { integerFlag, integerOption } from './common.ts';

interface WarehouseArgs {
  dest: string;
  into?: string;
  dialect?: DialectName;
  dataset?: string;
  'require-pseudonymised'?: boolean;
  supersede?: string[];
  'snowflake-stage'?: string;
  'snowflake-integration'?: string;
  'source-name'?: string;
  'freshness-hours'?: number;
  'manifests-from'?: string;
  after?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  pipeline?: string;
}

/** The built-in resources plus the pipeline file's custom resources, if one is named. */
function resourcesFor(pipeline: string | undefined): ResourceSpec[] | undefined {
  if (!pipeline) return undefined;
  const cfg = readPipelineFile(pipeline);
  return selectResources(undefined, cfg.custom_resources ?? []);
}

function tablesFor(pipeline: string | undefined): TableSchema[] | undefined {
  return resourcesFor(pipeline)?.flatMap((r) => tableSchemas(r));
}

const s3 = (a: WarehouseArgs) =>
  a['s3-endpoint'] || a['s3-region']
    ? { ...(a['s3-endpoint'] ? { endpoint: a['s3-endpoint'] } : {}), ...(a['s3-region'] ? { region: a['s3-region'] } : {}) }
    : undefined;

const common = (y: Argv) =>
  y
    .option('dest', { type: 'string', demandOption: true, describe: 'the export: DIR or s3://bucket/prefix (gs:// for sql)' })
    .option('pipeline', { type: 'string', describe: 'pipeline file whose custom_resources add tables' })
    .option('require-pseudonymised', {
      type: 'boolean',
      describe: 'refuse to load runs whose manifest does not record person ids as pseudonymised (personal_data policy)',
    });

export const warehouseCommand: CommandModule<object, WarehouseArgs> = {
  command: 'warehouse <action>',
  describe: 'load an export into DuckDB, or print the BigQuery / Snowflake load script',
  builder: (y: Argv) =>
    y
      .command({
        command: 'load',
        describe: 'build current-state tables in a DuckDB file from the manifest-listed files (applies each task once)',
        builder: (yy: Argv) =>
          common(yy)
            .option('into', { type: 'string', demandOption: true, describe: 'duckdb:PATH' })
            .option('supersede', {
              type: 'string',
              array: true,
              describe:
                "RUN/SCHOOL/TABLE (repeatable, or comma-separated): leave that pending task's TABLE files out for good, once a later full read of the school exists (docs/warehouse.md)",
            })
            .option('s3-endpoint', { type: 'string', describe: 'S3-compatible endpoint URL' })
            .option('s3-region', { type: 'string' }),
        handler: async (a) => {
          const args = a as unknown as WarehouseArgs;
          const res = await warehouseLoad({
            dest: args.dest,
            into: args.into!,
            s3: s3(args),
            tables: tablesFor(args.pipeline),
            requirePseudonymised: args['require-pseudonymised'] ?? false,
            ...(args.supersede ? { supersede: args.supersede.map(String) } : {}),
            onProgress: (msg) => process.stderr.write(msg + '\n'),
          });
          process.stderr.write(
            `applied ${res.appliedTasks} task(s) of ${res.appliedRuns.length} run(s)${res.appliedRuns.length ? ': ' + res.appliedRuns.join(', ') : ''}\n`,
          );
          for (const [t, n] of Object.entries(res.tables))
            process.stderr.write(`  ${t.padEnd(26)} ${n.toLocaleString('en').padStart(12)} rows\n`);
          if (!process.stdout.isTTY) process.stdout.write(JSON.stringify(res) + '\n');
        },
      })
      .command({
        command: 'sql',
        describe: 'print the static load script for a warehouse: render it once, run it after every export',
        builder: (yy: Argv) =>
          common(yy)
            .option('dialect', { choices: DIALECT_NAMES, demandOption: true })
            .option('dataset', { type: 'string', describe: 'BigQuery dataset / Snowflake schema name' })
            .option('snowflake-stage', { type: 'string', describe: 'Snowflake stage name (default school_export_stage)' })
            .option('snowflake-integration', {
              type: 'string',
              describe: 'Snowflake storage integration for the stage (default school_export_integration)',
            })
            // Gone with the static script; kept so an old crontab fails with a line saying why.
            .option('manifests-from', { type: 'string', hidden: true })
            .option('after', { type: 'string', hidden: true }),
        handler: (a) => {
          const args = a as unknown as WarehouseArgs;
          for (const gone of ['manifests-from', 'after'] as const) {
            if (args[gone] !== undefined) {
              throw new ConfigError(
                `--${gone} is no longer needed: the script is static and reads the manifests in the warehouse; render it once without it (docs/warehouse.md)`,
              );
            }
          }
          const sql = warehouseSql({
            dialect: args.dialect!,
            location: args.dest,
            ...(args.dataset ? { dataset: args.dataset } : {}),
            ...(args['require-pseudonymised'] ? { requirePseudonymised: true } : {}),
            ...(args['snowflake-stage'] ? { stage: args['snowflake-stage'] } : {}),
            ...(args['snowflake-integration'] ? { storageIntegration: args['snowflake-integration'] } : {}),
            tables: tablesFor(args.pipeline),
          });
          process.stdout.write(sql.endsWith('\n') ? sql : sql + '\n');
        },
      })
      .command({
        command: 'manifests',
        describe: 'rewrite manifests of older exports (indented over several lines) on one line each, as warehouses read them',
        builder: (yy: Argv) =>
          yy
            .option('dest', { type: 'string', demandOption: true, describe: 'the export: DIR or s3://bucket/prefix' })
            .option('s3-endpoint', { type: 'string', describe: 'S3-compatible endpoint URL' })
            .option('s3-region', { type: 'string' }),
        handler: async (a) => {
          const args = a as unknown as WarehouseArgs;
          const n = await compactManifests({ dest: args.dest, s3: s3(args) });
          process.stderr.write(`rewrote ${n} manifest(s) on one line\n`);
        },
      })
      .command({
        command: 'dbt',
        describe: 'print a dbt sources file for the current-state tables: columns, types, key and relationship tests, freshness',
        builder: (yy: Argv) =>
          yy
            .option('dialect', { choices: DIALECT_NAMES, demandOption: true })
            .option('dataset', { type: 'string', describe: 'BigQuery dataset / Snowflake schema the tables are in (DuckDB: main)' })
            .option('source-name', { type: 'string', describe: "the source's name in {{ source() }} (default school_export)" })
            .option('freshness-hours', integerOption('warn when the newest _extracted_at is older (default 26); error at twice'))
            .option('pipeline', { type: 'string', describe: 'pipeline file whose custom_resources add tables' }),
        handler: (a) => {
          const args = a as unknown as WarehouseArgs;
          const resources = resourcesFor(args.pipeline);
          process.stdout.write(
            warehouseDbt({
              dialect: args.dialect!,
              ...(args.dataset ? { dataset: args.dataset } : {}),
              ...(args['source-name'] ? { sourceName: args['source-name'] } : {}),
              ...(args['freshness-hours'] !== undefined
                ? { freshnessHours: integerFlag('freshness-hours', args['freshness-hours'], 1) }
                : {}),
              ...(resources ? { resources } : {}),
            }),
          );
        },
      })
      .demandCommand(1, 'name an action: load, sql, dbt or manifests') as unknown as Argv<WarehouseArgs>,
  handler: () => {},
};
