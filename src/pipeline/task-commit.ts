import { ExportError } from '../errors.ts';
import type { Committer } from '../manifest/committer.ts';
import { contentChanged } from '../manifest/state.ts';
import type { StateBook } from '../manifest/state-book.ts';
import { readDirective, statePath, updateState } from '../manifest/state-store.ts';
import type { SchoolDirective, SchoolState } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';
import type { PieceCommit } from './task.ts';
import type { SchoolRef } from './task-output.ts';

/**
 * Commits one piece of a task (its files are durable already): listed in a manifest part, then
 * the school's state advances. A school whose access was revoked meanwhile keeps nothing: its
 * directive is read before the piece's files are committed (admitPiece: they are still temporary
 * and go with the task's abort) and again after the state was written (what this piece wrote goes). The second read closes the race with
 * a purge that ran between the two: the receiver writes the directive before it lists the files
 * it removes, so either the purge saw our files or we see its directive.
 */
export async function commitPiece(
  o: { sink: Sink; committer: Committer; school: SchoolRef; resource: string; states?: StateBook },
  piece: PieceCommit,
): Promise<void> {
  const { sink } = o;
  const written = piece.task.files.map((f) => f.path);
  let checked: Promise<SchoolDirective | undefined> | undefined;
  await commitOrRemove(sink, written, () =>
    o.committer.commit({
      task: piece.task,
      deletions: piece.deletions,
      promote: async () => {
        const mutate = (s: SchoolState): void => {
          s.resources[o.resource] = piece.state(s.resources[o.resource]);
          for (const r of piece.invalidates ?? []) if (s.resources[r]?.content) s.resources[r] = contentChanged(s.resources[r]);
        };
        ({ checked } = await changeState(o, mutate, piece.obsolete.length > 0));
        // What the new state no longer references (superseded id lists) would only grow the destination.
        if (piece.obsolete.length) await sink.remove(piece.obsolete).catch(() => undefined);
      },
    }),
  );
  try {
    await refuseIfRevoked(o, written, true, checked);
  } catch (e) {
    o.committer.retract(piece.task, e as ExportError);
    throw e;
  }
}

/**
 * A piece whose manifest part could not be written is listed nowhere: its files would be personal
 * data nobody knows about, so they go (the next run reads those rows again). Once listed they stay.
 */
async function commitOrRemove(sink: Sink, written: string[], commit: () => Promise<void>): Promise<void> {
  try {
    await commit();
  } catch (e) {
    if (!(e as { listed?: boolean }).listed) await sink.remove(written).catch(() => undefined);
    throw e;
  }
}

/** Before a piece's files are committed (still temporary, so a refusal leaves nothing behind). */
export async function admitPiece(o: { sink: Sink; school: SchoolRef; resource: string; states?: StateBook }): Promise<void> {
  await refuseIfRevoked(o, [], false);
}

/**
 * Through the run's StateBook (one write per batch of the school's changes, and one directive
 * read after it for the whole batch), or, without one, straight to the state file. Returns the
 * school's directive as read after the write (undefined: read it when it is checked).
 */
async function changeState(
  o: { sink: Sink; school: SchoolRef; states?: StateBook },
  mutate: (s: SchoolState) => void,
  nameDurable: boolean,
): Promise<{ checked?: Promise<SchoolDirective | undefined> }> {
  if (o.states) return await o.states.update(o.school.region, o.school.id, mutate, { nameDurable });
  await updateState(o.sink, o.school.region, o.school.id, mutate);
  return {};
}

async function refuseIfRevoked(
  o: { sink: Sink; school: SchoolRef; resource: string; states?: StateBook },
  written: string[],
  afterState: boolean,
  readAfterState?: Promise<SchoolDirective | undefined>,
): Promise<void> {
  const directive = await (readAfterState ?? (o.states ? o.states.directive(o.school.id) : readDirective(o.sink, o.school.id)));
  const off = directive?.deactivated;
  const purge = off?.purge === true;
  // Committed before the revocation without a purge: kept, like the school's earlier data.
  if (!off || (afterState && !purge)) return;
  if (written.length) await o.sink.remove(written);
  // With a purge, nothing of the school may outlive this run: its state and id lists go too.
  if (purge && afterState) {
    await removeSchoolState(o.sink, o.school);
    o.states?.forget(o.school.region, o.school.id);
  }
  const what = purge ? 'its data was purged' : 'this task was not committed';
  throw new ExportError('E_PURGED', `school ${o.school.id}: access ${off.event} while the run was reading it; ${what}`, {
    school: o.school.id,
    resource: o.resource,
  });
}

async function removeSchoolState(sink: Sink, school: SchoolRef): Promise<void> {
  const ids = await sink.list(`_state/ids/region=${school.region}/school_id=${school.id}/`);
  await sink.remove([...ids, statePath(school.region, school.id)]);
}
