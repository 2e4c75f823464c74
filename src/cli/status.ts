import type { Argv, CommandModule } from 'yargs';
import { integerFlag, integerOption, settingHelp, wantsJson, write } from './common.ts';
import type { CliIo } from './schools.ts';

/** `school-export status`: what a destination holds; reads only the destination, never the API. */
interface StatusArgs {
  pipeline?: string;
  dest?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  runs?: number;
  json?: boolean;
}

export async function statusCommandRun(a: StatusArgs, io: CliIo = { out: process.stdout, err: process.stderr }, now?: Date): Promise<void> {
  // the destination as `run` would resolve it: flag, SCHOOL_EXPORT_DEST, the pipeline file, ./exports
  const [{ resolveRunConfig }, { openSink }, { collectStatus }, { renderStatus, statusLines }] = await Promise.all([
    import('../config/resolve.ts'),
    import('../sink/index.ts'),
    import('../status/collect.ts'),
    import('../status/render.ts'),
  ]);
  const { readWebhookQueue, renderWebhookQueue } = await import('../webhooks/queue-file.ts');
  const cfg = resolveRunConfig(a.pipeline, { dest: a.dest, s3_endpoint: a['s3-endpoint'], s3_region: a['s3-region'] });
  const runs = integerFlag('runs', a.runs ?? 10, 0);
  const sink = await openSink(cfg.dest, {
    s3: { endpoint: cfg.s3.endpoint, region: cfg.s3.region, checksumWhenRequired: cfg.s3.checksumWhenRequired },
    readOnly: true,
  });
  try {
    const report = await collectStatus(sink, { runs, now });
    // the webhook receiver's run queue (docs/webhooks.md), when a receiver with --run keeps one here
    const queue = await readWebhookQueue(sink).catch((e: unknown) => void report.problems.push((e as Error).message));
    if (wantsJson(a.json, io.out as NodeJS.WriteStream)) {
      for (const line of statusLines(report)) await write(io.out, line + '\n');
      if (queue) await write(io.out, JSON.stringify({ type: 'webhook_queue', ...queue }) + '\n');
    } else await write(io.out, renderStatus(report) + (queue ? '\n' + renderWebhookQueue(queue) : ''));
  } finally {
    await sink.close();
  }
}

export const statusCommand: CommandModule<object, StatusArgs> = {
  command: 'status [pipeline]',
  describe: "what a destination holds: per school and table the watermark, lag and last failure; recent runs; the lock's holder",
  builder: (y: Argv) =>
    y
      .positional('pipeline', { type: 'string', describe: 'pipeline file whose dest (and S3 settings) to read' })
      .option('dest', { type: 'string', describe: settingHelp('dest', 'DIR or s3://bucket/prefix', "./exports, or the pipeline file's") })
      .option('s3-endpoint', { type: 'string', describe: settingHelp('s3_endpoint', 'S3-compatible endpoint URL') })
      .option('s3-region', { type: 'string', describe: settingHelp('s3_region', 'S3 region') })
      .option('runs', integerOption('how many of the latest runs to list and to read failures from (default 10)'))
      .option('json', {
        type: 'boolean',
        describe: 'NDJSON, one object per line with a "type" (the default when stdout is not a terminal)',
      }) as unknown as Argv<StatusArgs>,
  handler: async (a) => {
    await statusCommandRun(a);
  },
};
