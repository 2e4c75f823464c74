import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip, gunzip, type Gzip } from 'node:zlib';
import type { Sink, SinkFile } from '../sink/types.ts';
import { RUN_ID_RE } from './run-id.ts';
import { parseState, type ListedState, type WrittenState } from './state-store.ts';
import type { SchoolState } from './types.ts';

/**
 * Digests of the schools' state files: each run, on a store whose listing gives every file a
 * version tag (S3: the ETag), writes `_state/_digests/<run_id>.ndjson.gz`, one line per school
 * it wrote: the state file's path, the version the store gave that write, and the state as
 * written. Reading every school's state is then one listing and a digest or two, instead of one
 * GetObject a school (about 3 ms of the SDK's CPU each: 40 s at 10,000 schools).
 *
 * A copy is used only when its version equals the version the listing shows for that file now, so
 * a digest is never trusted for a file written since (a later run killed before its digest, a
 * webhook, a hand edit): those files are read as before. A file the listing no longer shows (a
 * purge) is not read at all. The answer is exactly that of reading every file.
 *
 * Line: {"path":"_state/region=uk/school_id=A1.json","version":"<etag, unquoted>","state":{...}}
 */
export const DIGESTS_PREFIX = '_state/_digests/';
const SUFFIX = '.ndjson.gz';
/**
 * Digests kept (older ones are removed by the run that writes a new one): a night's job of up to
 * this many shards keeps that night's digests whole. Readers stop as soon as every file is covered.
 */
export const DIGESTS_KEPT = 32;

const gunzipAsync = promisify(gunzip);

export function digestPath(runId: string): string {
  if (!RUN_ID_RE.test(runId)) throw new Error(`not a run id: ${JSON.stringify(runId)}`);
  return `${DIGESTS_PREFIX}${runId}${SUFFIX}`;
}

/** A run's digest, written as its schools' states are settled. */
export class StateDigestWriter {
  private lines = 0;

  private constructor(
    private readonly file: SinkFile,
    private readonly gzip: Gzip,
    private readonly piped: Promise<void>,
  ) {}

  /** undefined when the store's listing has no version tags: a digest could never be checked there. */
  static async open(sink: Sink, runId: string): Promise<StateDigestWriter | undefined> {
    if (!sink.listVersions) return undefined;
    const file = await sink.openFile(digestPath(runId));
    const gzip = createGzip({ level: 1 }); // the states are alike: level 1 already makes them 7x smaller
    const piped = pipeline(gzip, file.stream);
    piped.catch(() => undefined); // met by commit
    return new StateDigestWriter(file, gzip, piped);
  }

  /** A school's state as this run last wrote it (its final version in this run). */
  add(w: WrittenState): void {
    if (w.version === undefined) return;
    this.gzip.write(`{"path":${JSON.stringify(w.path)},"version":${JSON.stringify(w.version)},"state":${w.text.trimEnd()}}\n`);
    this.lines += 1;
  }

  /** Makes the digest durable; a run that wrote no state leaves none. Returns its number of lines. */
  async commit(): Promise<number> {
    if (this.lines === 0) {
      await this.abort();
      return 0;
    }
    this.gzip.end();
    await this.piped;
    await this.file.commit();
    return this.lines;
  }

  async abort(): Promise<void> {
    this.gzip.destroy();
    await this.file.abort();
  }
}

/** Removes all but the newest DIGESTS_KEPT digests. */
export async function pruneDigests(sink: Sink): Promise<void> {
  const old = (await listDigests(sink)).slice(DIGESTS_KEPT);
  if (old.length > 0) await sink.remove(old);
}

/** Digest paths, newest first (run ids sort by time). */
async function listDigests(sink: Sink): Promise<string[]> {
  return (await sink.list(DIGESTS_PREFIX))
    .filter((p) => p.endsWith(SUFFIX) && RUN_ID_RE.test(p.slice(DIGESTS_PREFIX.length, -SUFFIX.length)))
    .reverse();
}

/**
 * The states of listed files that a digest holds at the version listed, as text until taken (a
 * run plans thousands of schools one by one: the parsed states would be several times the size).
 */
export class DigestedStates {
  private constructor(
    private readonly sink: Sink,
    private readonly texts: Map<string, string>,
  ) {}

  /** No copies: every state is read from its file (a store without version tags, a dry run). */
  static none(sink: Sink): DigestedStates {
    return new DigestedStates(sink, new Map());
  }

  /**
   * Digests are read newest first until every listed file is found (or none is left). A digest
   * that cannot be read only costs the direct reads of the files it would have covered.
   */
  static async read(
    sink: Sink,
    listed: readonly ListedState[],
    onProblem: (message: string) => void = () => undefined,
  ): Promise<DigestedStates> {
    const wanted = new Map<string, string>();
    for (const s of listed) if (s.version !== undefined) wanted.set(s.path, s.version);
    const texts = new Map<string, string>();
    if (wanted.size > 0) {
      for (const path of await listDigests(sink)) {
        let text: string;
        try {
          const buf = await sink.read(path);
          if (!buf) continue; // removed meanwhile by a newer run's pruning
          text = (await gunzipAsync(buf)).toString('utf8');
        } catch (e) {
          onProblem(`${path}: unreadable (${(e as Error).message}); the state files it covers were read one by one`);
          continue;
        }
        collectLines(text, wanted, texts);
        if (wanted.size === 0) break;
      }
    }
    return new DigestedStates(sink, texts);
  }

  get size(): number {
    return this.texts.size;
  }

  /**
   * The state file's current content from a digest, parsed (a fresh object each call); undefined
   * when no digest has it (or its copy is damaged): read the file.
   */
  peek(s: { path: string; region: string; schoolId: string }): SchoolState | undefined {
    const text = this.texts.get(s.path);
    if (text === undefined) return undefined;
    try {
      return parseState(text, { sink: this.sink, region: s.region, schoolId: s.schoolId });
    } catch {
      return undefined;
    }
  }

  /** `peek`, and the copy is let go: its last reader. */
  take(s: { path: string; region: string; schoolId: string }): SchoolState | undefined {
    const state = this.peek(s);
    this.texts.delete(s.path);
    return state;
  }
}

const LINE_HEAD = /^\{"path":("(?:[^"\\]|\\.)*"),"version":("(?:[^"\\]|\\.)*"),"state":/;

/** Moves every line whose path is wanted at the listed version from `wanted` to `found` (its state's text). */
function collectLines(text: string, wanted: Map<string, string>, found: Map<string, string>): void {
  let start = 0;
  while (start < text.length && wanted.size > 0) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    const head = LINE_HEAD.exec(line);
    if (!head || !line.endsWith('}')) continue;
    try {
      const path = JSON.parse(head[1]!) as string;
      if (wanted.get(path) !== (JSON.parse(head[2]!) as string)) continue;
      found.set(path, line.slice(head[0].length, -1));
      wanted.delete(path);
    } catch {
      // a damaged line: that file is read directly
    }
  }
}
