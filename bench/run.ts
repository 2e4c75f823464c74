/**
 * `npm run bench [-- --quick] [-- --profile]`: the benchmark of issue 6 (see bench/README.md).
 * --quick skips the 1,000,000-row memory case and repeats less; --tiny is the smoke test's scale;
 * --profile writes a V8 CPU profile of every measured export child to bench/profiles/.
 * --only=throughput,memory,latency,big-school,incremental,live,startup,scale,properties runs just those sections, --shape=standard|wide
 * just that data shape (the record is not updated then).
 * --render measures nothing: it renders bench/results.json (the last complete run) into the READMEs'
 * tables again, for when only the report's wording or verdicts changed (bench/report.ts).
 */
import { resolve } from 'node:path';
import { mkdirSync, readFileSync } from 'node:fs';
import { runBench, updateReadme, type Mode } from './bench.ts';
import { lines, table as tableOf, type Results } from './report.ts';
import type { Shape } from './sections.ts';
import { spawnSync } from 'node:child_process';
import { distIsFresh, ROOT } from './procs.ts';

// The scale section copies files into s3rver from this process: the AWS SDK's notice about Node 20
// (docs/operations.md) would land in the middle of the progress lines, as it does for the children.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const argv = process.argv.slice(2);
const READMES = [resolve(ROOT, 'bench/README.md'), resolve(ROOT, 'README.md')];
if (argv.includes('--render')) {
  const recorded = JSON.parse(readFileSync(resolve(ROOT, 'bench/results.json'), 'utf8')) as Results;
  const text = tableOf(lines(recorded));
  for (const readme of READMES) await updateReadme(readme, recorded, text, { rendered: true });
  process.stdout.write(text + '\n');
  process.exit(0);
}
const mode: Mode = argv.includes('--tiny') ? 'tiny' : argv.includes('--quick') ? 'quick' : 'full';
const nodeArgs: string[] = [];
if (argv.includes('--profile')) {
  const dir = resolve(ROOT, 'bench/profiles');
  mkdirSync(dir, { recursive: true });
  nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
}
const onlyArg = argv.find((a) => a.startsWith('--only='));
const only = onlyArg?.slice('--only='.length).split(',');
const shapeArg = argv.find((a) => a.startsWith('--shape='));
const shapes = shapeArg?.slice('--shape='.length).split(',') as Shape[] | undefined;
if (shapes?.some((s) => s !== 'standard' && s !== 'wide')) throw new Error('--shape= takes standard, wide or both (comma-separated)');
const started = Date.now();
// Exports run the compiled dist/ with plain Node, as the installed command does: build it when stale.
if (mode !== 'tiny' && process.env.BENCH_CODE !== 'src' && !distIsFresh()) {
  process.stderr.write('dist/ is missing or older than src/: building it (node bin/prepare.js)\n');
  spawnSync(process.execPath, [resolve(ROOT, 'bin/prepare.js')], { stdio: 'inherit' });
}
const { table } = await runBench({
  mode,
  nodeArgs,
  only,
  shapes,
  // Only a complete, full-scale, unprofiled run updates the committed record.
  out: mode === 'tiny' || nodeArgs.length || only || shapes ? undefined : resolve(ROOT, 'bench/results.json'),
  readmes: mode === 'tiny' || nodeArgs.length || only || shapes ? undefined : READMES,
  log: (s) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${s}\n`),
});
process.stdout.write(table + '\n');
