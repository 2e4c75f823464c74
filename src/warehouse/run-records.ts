import type { Manifest, ManifestFile } from '../manifest/types.ts';
import type { Dialect } from './dialects.ts';
import { manifestLoad } from './manifests.ts';
import { RUNS_TABLE, SNAPSHOTS_TABLE, type Plan } from './plan.ts';

/**
 * What the generated warehouse SQL knows from the manifests it was rendered with: the exact
 * files to load per table (never a glob that would pick up a file a crash left behind), the runs
 * to record and the full snapshots that remove rows gone upstream.
 */
export interface RunRecords {
  filesByTable: Map<string, ManifestFile[]>;
  statements: string[];
}

export function runRecords(plan: Plan, manifests: readonly Manifest[], d: Dialect, now: string): RunRecords {
  const known = plan.tables.map((t) => t.name);
  const filesByTable = new Map<string, ManifestFile[]>(known.map((t) => [t, []]));
  const runs: string[] = [];
  const snaps: string[] = [];
  const sorted = [...manifests].sort((a, b) => (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0));
  for (const m of sorted) {
    const load = manifestLoad(m, known);
    for (const f of load.files) filesByTable.get(f.table)?.push(f);
    runs.push(`(${d.str(m.run_id)}, ${d.str(`_manifests/${m.run_id}.json`)}, ${now}, NULL)`);
    for (const s of load.snapshots) {
      if (known.includes(s.table)) snaps.push(`(${d.str(m.run_id)}, ${d.str(s.schoolId)}, ${d.str(s.table)})`);
    }
  }
  const cols = (names: string[]): string => names.map((n) => d.ident(n)).join(', ');
  const statements: string[] = [];
  for (const part of chunks(snaps, MAX_STATEMENT_CHARS)) {
    statements.push(`INSERT INTO ${d.table(SNAPSHOTS_TABLE)} (${cols(['run_id', 'school_id', 'table_name'])}) VALUES ${part.join(', ')}`);
  }
  for (const part of chunks(runs, MAX_STATEMENT_CHARS)) {
    statements.push(
      `INSERT INTO ${d.table(RUNS_TABLE)} (${cols(['run_id', 'manifest', 'applied_at', 'merged_at'])}) VALUES ${part.join(', ')}`,
    );
  }
  return { filesByTable, statements };
}

export function markMerged(d: Dialect, now: string): string {
  return `UPDATE ${d.table(RUNS_TABLE)} SET ${d.ident('merged_at')} = ${now} WHERE ${d.ident('merged_at')} IS NULL`;
}

/**
 * BigQuery and Snowflake cap a statement's text at about 1 MB: long lists (file names, snapshot
 * rows) are split so each statement's list stays well under it.
 */
export const MAX_STATEMENT_CHARS = 600_000;

/** Splits a list of rendered items into chunks of at most `maxItems` items and `maxChars` characters. */
export function chunks(items: readonly string[], maxChars: number, maxItems = Infinity): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let size = 0;
  for (const item of items) {
    if (cur.length > 0 && (cur.length >= maxItems || size + item.length + 2 > maxChars)) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(item);
    size += item.length + 2;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
