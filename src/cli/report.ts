import type { Argv, CommandModule } from 'yargs';
import { integerFlag, integerOption, settingHelp } from './common.ts';

/**
 * `school-export report`: one self-contained HTML file (inline SVG, no script, nothing fetched)
 * about a destination: rows and bytes per table over the last runs, watermark lag per school,
 * failures by code, throughput and duration, the personal-data policy. Reads the destination only.
 */
interface ReportArgs {
  pipeline?: string;
  dest?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  out?: string;
  runs?: number;
}

export async function reportCommandRun(
  a: ReportArgs,
  io: { err: NodeJS.WritableStream } = { err: process.stderr },
  now?: Date,
): Promise<string> {
  const [{ resolveRunConfig }, { openSink }, { collectReport }, { renderReport }, { writeFile, rename }, { dirname, basename, join }] =
    await Promise.all([
      import('../config/resolve.ts'),
      import('../sink/index.ts'),
      import('../report/collect.ts'),
      import('../report/html.ts'),
      import('node:fs/promises'),
      import('node:path'),
    ]);
  const cfg = resolveRunConfig(a.pipeline, { dest: a.dest, s3_endpoint: a['s3-endpoint'], s3_region: a['s3-region'] });
  const runs = integerFlag('runs', a.runs ?? 30, 1, 10_000);
  const out = a.out ?? 'report.html';
  const sink = await openSink(cfg.dest, {
    s3: { endpoint: cfg.s3.endpoint, region: cfg.s3.region, checksumWhenRequired: cfg.s3.checksumWhenRequired },
    readOnly: true,
  });
  let html: string;
  try {
    html = renderReport(await collectReport(sink, { runs, now }));
  } finally {
    await sink.close();
  }
  // written whole under a temporary name, then renamed: a half-written report is never opened
  const tmp = join(dirname(out), `.${basename(out)}.${process.pid}.tmp`);
  await writeFile(tmp, html);
  await rename(tmp, out);
  io.err.write(`report: ${out} (${Math.round(html.length / 1024)} KiB) for ${sink.url}\n`);
  return out;
}

export const reportCommand: CommandModule<object, ReportArgs> = {
  command: 'report [pipeline]',
  describe: 'one HTML file about a destination: volume per table, lag per school, failures, throughput, the personal-data policy',
  builder: (y: Argv) =>
    y
      .positional('pipeline', { type: 'string', describe: 'pipeline file whose dest (and S3 settings) to read' })
      .option('dest', { type: 'string', describe: settingHelp('dest', 'DIR or s3://bucket/prefix', "./exports, or the pipeline file's") })
      .option('s3-endpoint', { type: 'string', describe: settingHelp('s3_endpoint', 'S3-compatible endpoint URL') })
      .option('s3-region', { type: 'string', describe: settingHelp('s3_region', 'S3 region') })
      .option('out', { type: 'string', requiresArg: true, describe: 'the HTML file to write (default report.html)' })
      .option('runs', integerOption('how many of the latest runs to draw (default 30)')) as unknown as Argv<ReportArgs>,
  handler: async (a) => {
    await reportCommandRun(a);
  },
};
