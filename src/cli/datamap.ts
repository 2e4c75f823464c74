import type { Argv, CommandModule } from 'yargs';
import { settingHelp, wantsJson, write } from './common.ts';
import type { CliIo } from './schools.ts';

/**
 * `school-export datamap [pipeline] [--dest D] [--json]`: every table and column with its
 * personal-data class, where the class comes from and what the policy does to it
 * (docs/personal-data.md). The policy is the settings' (pipeline file, environment, flags), else
 * the one the destination keeps; with --dest the undeclared fields its runs saw are listed too.
 * Reads no API and writes nothing.
 */
interface DataMapArgs {
  pipeline?: string;
  dest?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  json?: boolean;
  'person-id'?: 'keep' | 'pseudonymise';
  'direct-identifier'?: 'keep' | 'pseudonymise' | 'drop';
  'free-text'?: 'keep' | 'drop';
  'personal-column'?: string[];
}

export async function dataMapCommandRun(a: DataMapArgs, io: CliIo = { out: process.stdout, err: process.stderr }): Promise<void> {
  const [{ readPipelineFile }, { pipelineFromEnv }, pc, { selectResources, tableSchemas }, privacy, dm] = await Promise.all([
    import('../config/file.ts'),
    import('../config/env.ts'),
    import('../privacy/config.ts'),
    import('../resources/index.ts'),
    import('../privacy/index.ts'),
    import('../privacy/datamap.ts'),
  ]);
  const file = a.pipeline ? readPipelineFile(a.pipeline) : {};
  const env = pipelineFromEnv(process.env);
  const flags = {
    person_id: a['person-id'],
    direct_identifier: a['direct-identifier'],
    free_text: a['free-text'],
    columns: pc.parsePersonalColumns(a['personal-column']),
  };
  const given = pc.mergePersonalData(
    pc.mergePersonalData(file.personal_data, env.personal_data),
    Object.values(flags).some((v) => v !== undefined) ? flags : undefined,
  );
  const tables = selectResources(undefined, env.custom_resources ?? file.custom_resources ?? []).flatMap((r) => tableSchemas(r));
  const record = a.dest ? await readRecord(a, env.s3_endpoint ?? file.s3_endpoint, env.s3_region ?? file.s3_region) : undefined;
  const policy = given ? pc.policyFromConfig(given, tables) : record ? privacy.policyOf(record.personal_data) : privacy.KEEP_ALL;
  privacy.checkPolicyColumns(policy.columns, tables, record?.fields_seen);
  const from = given
    ? 'the settings (pipeline file, environment, flags)'
    : record
      ? `what ${a.dest} keeps (since run ${record.since.run_id})`
      : 'none given: every value is kept as read';
  const rows = dm.dataMapRows(tables, policy, record?.fields_seen ?? {});
  // the destination's own record carries its key's fingerprint
  const shown = !given && record ? record.personal_data : privacy.policyRecord(policy);
  const head = { type: 'policy', from, ...shown, ...(record ? { format: record.format } : {}) };
  if (wantsJson(a.json, io.out as NodeJS.WriteStream)) {
    for (const line of [head, ...rows]) await write(io.out, JSON.stringify(line) + '\n');
    return;
  }
  await write(io.out, dm.renderDataMap(rows, `${privacy.describePolicy(shown)} (policy: ${from})`));
}

async function readRecord(a: DataMapArgs, endpoint?: string, region?: string) {
  const [{ openSink }, { readDestinationRecord }] = await Promise.all([import('../sink/index.ts'), import('../privacy/destination.ts')]);
  const sink = await openSink(a.dest!, {
    s3: { endpoint: a['s3-endpoint'] ?? endpoint, region: a['s3-region'] ?? region },
    readOnly: true,
  });
  try {
    return await readDestinationRecord(sink);
  } finally {
    await sink.close();
  }
}

export const dataMapCommand: CommandModule<object, DataMapArgs> = {
  command: 'datamap [pipeline]',
  describe: 'every table and column with its personal-data class, where the class comes from, and what the policy does to it',
  builder: (y: Argv) =>
    y
      .positional('pipeline', { type: 'string', describe: 'pipeline file whose policy and custom resources to show' })
      .option('dest', { type: 'string', describe: 'an export: its policy (when no other is given) and the undeclared fields its runs saw' })
      .option('s3-endpoint', { type: 'string', describe: settingHelp('s3_endpoint', 'S3-compatible endpoint URL') })
      .option('s3-region', { type: 'string', describe: settingHelp('s3_region', 'S3 region') })
      .option('json', { type: 'boolean', describe: 'NDJSON, one object per column (the default when stdout is not a terminal)' })
      .option('person-id', { choices: ['keep', 'pseudonymise'] as const, describe: 'the policy to show: person ids' })
      .option('direct-identifier', { choices: ['keep', 'pseudonymise', 'drop'] as const, describe: '... direct identifiers' })
      .option('free-text', { choices: ['keep', 'drop'] as const, describe: '... free text' })
      .option('personal-column', {
        type: 'string',
        array: true,
        describe: '... TABLE.COLUMN=keep|pseudonymise|drop, repeatable',
      }) as unknown as Argv<DataMapArgs>,
  handler: async (a) => {
    await dataMapCommandRun(a);
  },
};
