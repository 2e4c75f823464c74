import type { DigestedStates } from '../manifest/state-digest.ts';
import { DIRECTIVES_PREFIX, directivePath, readDirective, readState, statePath } from '../manifest/state-store.ts';
import type { SchoolDirective, SchoolState } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';

/**
 * What planning reads of each school at the destination, its state file and its directive, with
 * the requests a school that bulk reads save: on S3 a GetObject costs about 3 ms of CPU, and a
 * night of 10,000 schools made two a school before any data was asked for.
 *
 * - State: from the runs' digests where the listing shows the file at the version a digest holds
 *   (S3; src/manifest/state-digest.ts), else read from the file. Exactly the file's content.
 * - Directive: read only when the listing of `_state/_directives/` has one for the school (the
 *   webhook receiver writes them; most destinations have none). Listed after revocations are
 *   reconciled. One written after the listing is met where it matters: every commit reads the
 *   school's directive again after its state is written (StateBook.directive).
 */
export class SchoolFiles {
  private constructor(
    private readonly sink: Sink,
    private readonly digested: DigestedStates,
    private readonly directives: ReadonlySet<string>,
  ) {}

  /** `copies`: the states digests hold at their current version (DigestedStates.read), kept for the run's first writes. */
  static async read(sink: Sink, copies: DigestedStates): Promise<SchoolFiles> {
    return new SchoolFiles(sink, copies, new Set(await sink.list(DIRECTIVES_PREFIX)));
  }

  state(region: string, schoolId: string): Promise<SchoolState> {
    const copy = this.digested.peek({ path: statePath(region, schoolId), region, schoolId });
    return copy ? Promise.resolve(copy) : readState(this.sink, region, schoolId);
  }

  directive(schoolId: string): Promise<SchoolDirective | undefined> {
    return this.directives.has(directivePath(schoolId)) ? readDirective(this.sink, schoolId) : Promise.resolve(undefined);
  }
}
