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
  return buf ? parseState(buf.toString('utf8'), { sink, region, schoolId }) : emptyState(schoolId, region);
}

/** A state file's text as readState takes it (also from a copy in a digest: src/manifest/state-digest.ts). */
export function parseState(text: string, at: { sink: Sink; region: string; schoolId: string }): SchoolState {
  try {
    const parsed = JSON.parse(text) as SchoolState;
    if (parsed.version !== 1 || parsed.school_id !== at.schoolId || typeof parsed.resources !== 'object') {
      throw new Error('unexpected shape');
    }
    return parsed;
  } catch (e) {
    throw new ExportError(
      'E_STATE',
      `state file ${statePath(at.region, at.schoolId)} at ${at.sink.url} is unreadable (${(e as Error).message}): restore it from a backup or delete it to re-export that school in full`,
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
export async function writeState(sink: Sink, state: SchoolState, o: { nameDurable?: boolean } = {}): Promise<WrittenState> {
  const text = JSON.stringify(state) + '\n';
  const path = statePath(state.region, state.school_id);
  const version = await sink.writeAtomic(path, text, o);
  return { path, text, version };
}

/** A state file as written: its text, and its version tag where the store gives one (Sink.writeAtomic). */
export interface WrittenState {
  path: string;
  text: string;
  version: string | undefined;
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
export async function listStates(sink: Sink): Promise<ListedState[]> {
  // the prefix leaves out _state/_directives, _locks and _swept (on S3, a narrower listing)
  const files = sink.listVersions
    ? await sink.listVersions(STATES_PREFIX)
    : (await sink.list(STATES_PREFIX)).map((path) => ({ path, version: undefined }));
  const out: ListedState[] = [];
  for (const f of files) {
    const m = /^_state\/region=([^/]+)\/school_id=(A\d+)\.json$/.exec(f.path);
    if (m) out.push({ region: m[1]!, schoolId: m[2]!, path: f.path, version: f.version });
  }
  return out;
}

const STATES_PREFIX = '_state/region=';

/** A school's state file as listed, with its version tag where the store's listing has one. */
export interface ListedState {
  region: string;
  schoolId: string;
  path: string;
  version: string | undefined;
}

/** Where the webhook receiver writes each school's directive (SchoolDirective). */
export const DIRECTIVES_PREFIX = '_state/_directives/';

export function directivePath(schoolId: string): string {
  return `${DIRECTIVES_PREFIX}school_id=${assertSafeId(schoolId)}.json`;
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
