/**
 * Section 9: exports against a live sandbox on the same machine (no replay front): the sandbox
 * assembles every page while the export runs, so the two compete for the cores, which is where a
 * pool of worker threads can make a run slower (issue 21: 11.7 s with the pool against 9.1 s with
 * `--workers 0`). Rounds interleave the default and `--workers 0` per format; medians reported.
 */
import { startSandboxProc } from './procs.ts';
import type { ChildResult } from './child-types.ts';
import { bestExport, exportArgs, median, PER_PAGE, type Opts, type Runs } from './sections.ts';

const FORMATS = ['ndjson', 'parquet'] as const;
export type LiveKey = 'ndjson' | 'ndjson_w0' | 'parquet' | 'parquet_w0';

export interface LiveResult {
  schools: number;
  rows: number;
  runs: Record<LiveKey, Runs<ChildResult>>;
}

export async function live(o: Opts): Promise<LiveResult> {
  const { schools, rows, repeat } = o.scale.live;
  const sb = await startSandboxProc({ seed: 1, schools, achievementsPerSchool: rows, maxPerPage: PER_PAGE, dataShape: o.shape }, false);
  const runs = new Map<LiveKey, ChildResult[]>();
  try {
    for (let i = 0; i < repeat; i++) {
      for (const f of FORMATS) {
        for (const w0 of [false, true]) {
          const key: LiveKey = w0 ? `${f}_w0` : f;
          o.log(`live server (${o.shape}): round ${i + 1} of ${repeat}, ${schools} x ${rows}, ${f}${w0 ? ', --workers 0' : ''}`);
          const r = await bestExport(o, exportArgs(sb, '', f, w0 ? { config: { workers: 0 } } : {}), 1, `live-${key}`);
          runs.set(key, [...(runs.get(key) ?? []), r]);
        }
      }
    }
  } finally {
    await sb.close();
  }
  return { schools, rows, runs: Object.fromEntries([...runs].map(([k, v]) => [k, median(v)])) as LiveResult['runs'] };
}
