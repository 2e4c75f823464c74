import type { Argv, CommandModule } from 'yargs';
import { readPipelineFile } from '../config/resolve.ts';
import { selectResources } from '../resources/index.ts';
import { tableSchemas } from '../resources/index.ts';
import type { TableSchema } from '../table.ts';
import { warehouseLoad, warehouseSql } from '../warehouse/commands.ts';

interface WarehouseArgs {
  dest: string;
  into?: string;
  dialect?: 'bigquery' | 'snowflake' | 'duckdb';
  dataset?: string;
  'manifests-from'?: string;
  after?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  pipeline?: string;
}

/** Tables of the built-in resources plus the pipeline file's custom resources, if one is named. */
function tablesFor(pipeline: string | undefined): TableSchema[] | undefined {
  if (!pipeline) return undefined;
  const cfg = readPipelineFile(pipeline);
  return selectResources(undefined, cfg.custom_resources ?? []).flatMap((r) => tableSchemas(r));
}

const s3 = (a: WarehouseArgs) =>
  a['s3-endpoint'] || a['s3-region']
    ? { ...(a['s3-endpoint'] ? { endpoint: a['s3-endpoint'] } : {}), ...(a['s3-region'] ? { region: a['s3-region'] } : {}) }
    : undefined;

const common = (y: Argv) =>
  y
    .option('dest', { type: 'string', demandOption: true, describe: 'the export: DIR or s3://bucket/prefix (gs:// for sql)' })
    .option('s3-endpoint', { type: 'string', describe: 'S3-compatible endpoint URL' })
    .option('s3-region', { type: 'string' })
    .option('pipeline', { type: 'string', describe: 'pipeline file whose custom_resources add tables' });

export const warehouseCommand: CommandModule<object, WarehouseArgs> = {
  command: 'warehouse <action>',
  describe: 'load an export into DuckDB, or print BigQuery / Snowflake load + merge SQL',
  builder: (y: Argv) =>
    y
      .command({
        command: 'load',
        describe: 'build current-state tables in a DuckDB file from the manifest-listed files (applies only new runs)',
        builder: (yy: Argv) => common(yy).option('into', { type: 'string', demandOption: true, describe: 'duckdb:PATH' }),
        handler: async (a) => {
          const args = a as unknown as WarehouseArgs;
          const res = await warehouseLoad({
            dest: args.dest,
            into: args.into!,
            s3: s3(args),
            tables: tablesFor(args.pipeline),
            onProgress: (msg) => process.stderr.write(msg + '\n'),
          });
          process.stderr.write(
            `applied ${res.appliedRuns.length} run(s)${res.appliedRuns.length ? ': ' + res.appliedRuns.join(', ') : ''}\n`,
          );
          for (const [t, n] of Object.entries(res.tables))
            process.stderr.write(`  ${t.padEnd(26)} ${n.toLocaleString('en').padStart(12)} rows\n`);
          if (!process.stdout.isTTY) process.stdout.write(JSON.stringify(res) + '\n');
        },
      })
      .command({
        command: 'sql',
        describe: 'print DDL, load and MERGE statements for a warehouse dialect',
        builder: (yy: Argv) =>
          common(yy)
            .option('dialect', { choices: ['bigquery', 'snowflake', 'duckdb'] as const, demandOption: true })
            .option('dataset', { type: 'string', describe: 'BigQuery dataset / Snowflake schema name' })
            .option('manifests-from', { type: 'string', describe: 'where to read manifests when --dest is not readable here (gs://)' })
            .option('after', { type: 'string', describe: 'only runs after this run_id' }),
        handler: async (a) => {
          const args = a as unknown as WarehouseArgs;
          const sql = await warehouseSql({
            dialect: args.dialect!,
            dest: args.dest,
            dataset: args.dataset,
            manifestsFrom: args['manifests-from'],
            after: args.after,
            s3: s3(args),
            tables: tablesFor(args.pipeline),
          });
          process.stdout.write(sql.endsWith('\n') ? sql : sql + '\n');
        },
      })
      .demandCommand(1, 'name an action: load or sql') as unknown as Argv<WarehouseArgs>,
  handler: () => {},
};
