import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../errors.ts';
import { integerFlag, integerOption, withDestinationOptions, write } from './common.ts';
import type { CliIo } from './schools.ts';
import type { StatusSection } from '../status/render.ts';

/**
 * `school-export status`: what a destination holds; reads only the destination, never the API.
 * By default a summary (per table, the worst schools, the last runs, the lease) of a few dozen
 * lines however many schools; --schools, --table, --failing and --json give the detail.
 */
interface StatusArgs {
  pipeline?: string;
  dest?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  runs?: number;
  json?: boolean;
  schools?: boolean;
  table?: string;
  failing?: boolean;
}

export async function statusCommandRun(a: StatusArgs, io: CliIo = { out: process.stdout, err: process.stderr }, now?: Date): Promise<void> {
  // the destination as `run` would resolve it: flag, SCHOOL_EXPORT_DEST, the pipeline file, ./exports
  const [{ resolveRunConfig }, { openSink }, { collectStatus }, { renderStatus, statusLines }, { selectTasks, summariseStatus }] =
    await Promise.all([
      import('../config/resolve.ts'),
      import('../sink/index.ts'),
      import('../status/collect.ts'),
      import('../status/render.ts'),
      import('../status/summary.ts'),
    ]);
  const { readWebhookQueue, renderWebhookQueue } = await import('../webhooks/queue-file.ts');
  const { readingProgress } = await import('../status/reading-progress.ts');
  const cfg = resolveRunConfig(a.pipeline, { dest: a.dest, s3_endpoint: a['s3-endpoint'], s3_region: a['s3-region'] });
  const runs = integerFlag('runs', a.runs ?? 10, 0);
  if (a.table !== undefined && !a.table.trim()) throw new ConfigError('--table "": name a table (e.g. --table achievements)', 'E_USAGE');
  const sink = await openSink(cfg.dest, {
    s3: { endpoint: cfg.s3.endpoint, region: cfg.s3.region, checksumWhenRequired: cfg.s3.checksumWhenRequired },
    readOnly: true,
  });
  try {
    const progress = readingProgress(io.err);
    let report;
    try {
      report = await collectStatus(sink, { runs, now, onStateRead: progress?.update });
    } finally {
      progress?.done();
    }
    // What other parts keep in the destination is shown as a section of its own here: the webhook
    // receiver's run queue (_state/_webhooks/, src/webhooks) is one.
    const sections: StatusSection[] = [];
    const queue = await readWebhookQueue(sink).catch((e: unknown) => void report.problems.push((e as Error).message));
    if (queue) sections.push({ text: renderWebhookQueue(queue), json: { type: 'webhook_queue', ...queue } });
    const known = [...new Set(report.tasks.map((t) => t.resource))].sort();
    if (a.table !== undefined && report.tasks.length && !known.includes(a.table))
      throw new ConfigError(`--table ${a.table}: this destination holds no such table (it holds ${known.join(', ')})`, 'E_USAGE');
    const summary = summariseStatus(report);
    const detail = a.schools || a.table !== undefined || a.failing;
    const tasks = selectTasks(report.tasks, { table: a.table, failing: a.failing });
    if (a.json) {
      for (const line of statusLines(report, { summary, tasks, sections })) await write(io.out, line + '\n');
      return;
    }
    const heading = `SCHOOLS AND TABLES${a.table !== undefined ? `: ${a.table}` : ''}${a.failing ? ', failing' : ''} (${tasks.length.toLocaleString('en')})`;
    await write(io.out, renderStatus(report, detail ? { tasks, sections, heading } : { summary, sections }));
  } finally {
    await sink.close();
  }
}

export const statusCommand: CommandModule<object, StatusArgs> = {
  command: 'status [pipeline]',
  describe: 'what a destination holds: per table the schools, watermark lag and failures, the worst schools, recent runs, the lease',
  builder: (y: Argv) =>
    withDestinationOptions(y)
      .option('runs', integerOption('how many of the latest runs to list and to read failures from (default 10)'))
      .option('schools', { type: 'boolean', describe: 'list every school and table (watermark, lag, last run, last failure)' })
      .option('table', { type: 'string', requiresArg: true, describe: "list one table's schools" })
      .option('failing', { type: 'boolean', describe: 'list the schools and tables whose latest attempt failed' })
      .option('json', {
        type: 'boolean',
        describe:
          'NDJSON, one object per line with a "type": lock, run, table, task (all, or as --table / --failing select), deactivated, problem',
      }) as unknown as Argv<StatusArgs>,
  handler: async (a) => {
    await statusCommandRun(a);
  },
};
