import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../errors.ts';
import { commaList, integerOption, optionalIntegerFlag, s3WriteSettings, withS3WriteOptions, type S3WriteArgs } from './common.ts';

/** `school-export compact`: merges small files per partition (docs/compaction.md). Arguments and output only. */
interface CompactArgs extends S3WriteArgs {
  pipeline?: string;
  dest: string;
  'older-than'?: string | number;
  schools?: string;
  tables?: string;
  'small-file-bytes'?: number;
}

const mb = (n: number): string => `${(n / 1e6).toFixed(n < 1e7 ? 2 : 0)} MB`;

/** Where the command writes: progress and the summary to `err`, the result as JSON to `out` when it is not a terminal. */
export interface CompactIo {
  err: { write(s: string): unknown };
  out: { write(s: string): unknown; isTTY?: boolean };
}

export async function compactCommandRun(a: CompactArgs, io: CompactIo = { err: process.stderr, out: process.stdout }): Promise<number> {
  const [{ resolveRunConfig, readPipelineFile }, { selectResources, tableSchemas }, { compactDestination }] = await Promise.all([
    import('../config/resolve.ts'),
    import('../resources/index.ts'),
    import('../compact/run.ts'),
  ]);
  const olderThan = a['older-than'] === undefined ? undefined : Number(a['older-than']);
  if (olderThan !== undefined && (String(a['older-than']).trim() === '' || !Number.isFinite(olderThan) || olderThan < 0)) {
    throw new ConfigError(`--older-than ${String(a['older-than'])}: expected a number of days, 0 or more`, 'E_USAGE');
  }
  const cfg = resolveRunConfig(a.pipeline, {
    dest: a.dest,
    ...s3WriteSettings(a),
  });
  const custom = a.pipeline ? (readPipelineFile(a.pipeline).custom_resources ?? []) : [];
  const knownTables = selectResources(undefined, custom).flatMap((r) => tableSchemas(r).map((t) => t.name));
  const small = optionalIntegerFlag('small-file-bytes', a['small-file-bytes'], 1);
  const schools = commaList(a.schools);
  const tables = commaList(a.tables);
  const progressEvery = { n: 1 };
  const result = await compactDestination({
    dest: cfg.dest,
    s3: { ...cfg.s3 },
    ...(olderThan !== undefined ? { olderThanDays: olderThan } : {}),
    ...(schools ? { schools } : {}),
    ...(tables ? { tables } : {}),
    ...(small !== undefined ? { smallFileBytes: small } : {}),
    knownTables,
    onProgress: (e) => {
      if (e.event === 'compact_start') {
        progressEvery.n = Math.max(1, Math.ceil(e.schools / 100));
        io.err.write(
          `compact ${e.run_id}: ${e.partitions} partition(s) of ${e.schools} school(s) to compact` +
            (e.retired ? `, ${e.retired} file(s) an earlier compaction retired to remove` : '') +
            '\n',
        );
      } else if (e.event === 'compact_school') {
        if (e.done % progressEvery.n === 0 || e.done === e.schools)
          io.err.write(`  [${e.done}/${e.schools}] school ${e.school_id}: ${e.files} file(s) into ${e.into}\n`);
      } else io.err.write(`  left as it is: ${e.path}: ${e.reason}\n`);
    },
  });
  io.err.write(
    `compacted ${result.filesMerged} file(s) into ${result.filesWritten} in ${result.partitions} partition(s) of ${result.schools} school(s): ` +
      `${mb(result.bytesBefore)} before, ${mb(result.bytesAfter)} after` +
      (result.leftoversRemoved ? `; removed ${result.leftoversRemoved} retired file(s) an earlier compaction left` : '') +
      (result.problems ? `; ${result.problems} file(s) could not be compacted (see above)` : '') +
      '\n',
  );
  if (!io.out.isTTY) io.out.write(JSON.stringify(result) + '\n');
  return result.problems ? 1 : 0;
}

export const compactCommand: CommandModule<object, CompactArgs> = {
  command: 'compact [pipeline]',
  describe: "merge each partition's small files into one, under the destination's lease; loaders stay exact (docs/compaction.md)",
  builder: (y: Argv) =>
    withS3WriteOptions(y)
      .positional('pipeline', { type: 'string', describe: 'pipeline file whose S3 settings and custom_resources to use' })
      .option('dest', { type: 'string', demandOption: true, describe: 'the export: DIR or s3://bucket/prefix' })
      .option('older-than', {
        type: 'string',
        requiresArg: true,
        describe: "only files whose newest rows come from runs older than DAYS (by the run id's time)",
      })
      .option('schools', { type: 'string', describe: 'only these schools (comma-separated ids)' })
      .option('tables', { type: 'string', describe: 'only these tables (comma-separated)' })
      .option(
        'small-file-bytes',
        integerOption('files at least this big are left as they are (default 64 MiB)'),
      ) as unknown as Argv<CompactArgs>,
  handler: async (a) => {
    const code = await compactCommandRun(a);
    if (code) process.exitCode = code;
  },
};
