import { isStale, readLeases } from '../manifest/lease.ts';
import type { Manifest } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';

const MANIFEST_DIR = '_manifests/';
/** Killed runs already swept (outside _manifests/, which loaders read whole). */
const SWEPT_DIR = '_state/_swept/';
const DAY_MS = 24 * 3600_000;

/**
 * What runs that died left behind, removed by the next run once it holds its lease: temporary
 * files and unfinished S3 uploads of runs no longer holding a lease, and the data files a killed
 * run renamed into place but never listed in a manifest part (killed between the rename and the
 * part): personal data no manifest names would otherwise stay for good. Runs still holding a
 * lease (other shards) are left alone.
 */
export async function sweepLeftovers(sink: Sink, now = new Date()): Promise<void> {
  const live = new Set((await readLeases(sink)).filter((l) => !isStale(l, now)).map((l) => l.run_id));
  await sink.sweepTemp('', (t) => (t.owner ? live.has(t.owner) : (t.startedAt?.getTime() ?? 0) > now.getTime() - DAY_MS));
  for (const [runId, parts] of await killedRuns(sink, live)) await sweepUnlisted(sink, runId, parts);
}

/** Runs with manifest parts but no whole-run manifest and no live lease, not swept yet. */
async function killedRuns(sink: Sink, live: ReadonlySet<string>): Promise<Map<string, string[]>> {
  const finals = new Set<string>();
  const parts = new Map<string, string[]>();
  const swept = new Set<string>();
  for (const p of await sink.list(MANIFEST_DIR)) {
    const rel = p.slice(MANIFEST_DIR.length);
    const whole = /^([^/]+)\.json$/.exec(rel);
    const part = /^([^/]+)\/part-\d+\.json$/.exec(rel);
    if (whole) finals.add(whole[1]!);
    else if (part) parts.set(part[1]!, [...(parts.get(part[1]!) ?? []), p]);
  }
  for (const p of await sink.list(SWEPT_DIR)) swept.add(p.slice(SWEPT_DIR.length, -'.json'.length));
  for (const runId of [...parts.keys()]) if (finals.has(runId) || live.has(runId) || swept.has(runId)) parts.delete(runId);
  return parts;
}

async function sweepUnlisted(sink: Sink, runId: string, partPaths: string[]): Promise<void> {
  const listed = new Set<string>();
  for (const p of partPaths) {
    const buf = await sink.read(p);
    const part = buf ? (JSON.parse(buf.toString('utf8')) as Manifest) : undefined;
    for (const t of part?.tasks ?? []) for (const f of t.files) listed.add(f.path);
  }
  const named = new RegExp(`/${runId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d+\\.[a-z.]+$`);
  const orphans = (await sink.list('')).filter((p) => !p.startsWith('_') && named.test(p) && !listed.has(p));
  if (orphans.length) await sink.remove(orphans);
  await sink.writeAtomic(`${SWEPT_DIR}${runId}.json`, JSON.stringify({ run_id: runId, removed: orphans.length }) + '\n');
}
