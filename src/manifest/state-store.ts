import type { Sink } from '../sink/types.ts';
import { ExportError } from '../errors.ts';
import { assertSafeId, assertSafeRegion } from '../ids.ts';
import { emptyState } from './state.ts';
import type { SchoolDirective, SchoolState } from './types.ts';

/**
 * Per-school state in `_state/region=<code>/school_id=<id>.json`. One file per school, so shards
 * (which partition by school) never write the same file, and the state of a failed task is
 * simply never written.
 */
export function statePath(region: string, schoolId: string): string {
  return `_state/region=${assertSafeRegion(region)}/school_id=${assertSafeId(schoolId)}.json`;
}

export async function readState(sink: Sink, region: string, schoolId: string): Promise<SchoolState> {
  const path = statePath(region, schoolId);
  const buf = await sink.read(path);
  if (!buf) return emptyState(schoolId, region);
  try {
    const parsed = JSON.parse(buf.toString('utf8')) as SchoolState;
    if (parsed.version !== 1 || parsed.school_id !== schoolId || typeof parsed.resources !== 'object') {
      throw new Error('unexpected shape');
    }
    return parsed;
  } catch (e) {
    throw new ExportError(
      'E_STATE',
      `state file ${path} at ${sink.url} is unreadable (${(e as Error).message}): restore it from a backup or delete it to re-export that school in full`,
    );
  }
}

/**
 * One line of JSON: a run at thousands of schools writes thousands of these (`jq .` shows them
 * indented). The file's bytes are always fsynced before its rename (never a torn state).
 * `nameDurable: false` leaves out the directory fsync after it: the manifest part the state
 * depends on is durable already, and if a crash loses the rename the previous state stays, so
 * the next run only reads those rows again (docs/scale.md). A caller about to remove what the
 * previous state refers to (a superseded id list) must keep it.
 */
export async function writeState(sink: Sink, state: SchoolState, o: { nameDurable?: boolean } = {}): Promise<string> {
  const text = JSON.stringify(state) + '\n';
  await sink.writeAtomic(statePath(state.region, state.school_id), text, o);
  return text;
}

/**
 * Read-modify-write of one school's state. Callers that may race on the same school in one
 * process (a webhook and a run) go through this lock.
 */
const locks = new Map<string, Promise<unknown>>();
export async function updateState(
  sink: Sink,
  region: string,
  schoolId: string,
  mutate: (s: SchoolState) => void | Promise<void>,
): Promise<SchoolState> {
  const key = `${sink.url}|${region}|${schoolId}`;
  const prev = locks.get(key) ?? Promise.resolve();
  const next = prev
    .catch(() => undefined)
    .then(async () => {
      const s = await readState(sink, region, schoolId);
      await mutate(s);
      await writeState(sink, s);
      return s;
    });
  locks.set(key, next);
  try {
    return await next;
  } finally {
    if (locks.get(key) === next) locks.delete(key);
  }
}

/** All state files under the destination, for commands that act on every school (webhooks, listing). */
export async function listStates(sink: Sink): Promise<{ region: string; schoolId: string }[]> {
  const out: { region: string; schoolId: string }[] = [];
  // the prefix leaves out _state/_directives, _locks and _swept (on S3, a narrower listing)
  for (const p of await sink.list('_state/region=')) {
    const m = /^_state\/region=([^/]+)\/school_id=(A\d+)\.json$/.exec(p);
    if (m) out.push({ region: m[1]!, schoolId: m[2]! });
  }
  return out;
}

export function directivePath(schoolId: string): string {
  return `_state/_directives/school_id=${assertSafeId(schoolId)}.json`;
}

export async function readDirective(sink: Sink, schoolId: string): Promise<SchoolDirective | undefined> {
  const buf = await sink.read(directivePath(schoolId));
  if (!buf) return undefined;
  try {
    return JSON.parse(buf.toString('utf8')) as SchoolDirective;
  } catch (e) {
    throw new ExportError('E_STATE', `directive file ${directivePath(schoolId)} is unreadable (${(e as Error).message}): delete it`);
  }
}

export async function writeDirective(sink: Sink, d: SchoolDirective): Promise<void> {
  await sink.writeAtomic(directivePath(d.school_id), JSON.stringify(d, null, 2) + '\n');
}
