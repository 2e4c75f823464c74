/**
 * Deletion records (spec 2.6, 3.3, 4.4). A record's "updated" time, used by updated_after and
 * updated_before, is max(deleted_at, restored_at). Records keep their place (seq) when restored,
 * so a cursor walk over deletions is as stable as one over rows.
 */
import { arraySource, type KeySource, type Window } from './collection.ts';
import { dt, type Micros } from './time.ts';
import { KIND, makeId } from './record-ids.ts';

export const DELETION_TYPES = [
  'achievement',
  'attendance_summary',
  'behaviour',
  'class',
  'person',
  'employee',
  'student_pre_admission',
  'student',
  'student_leaver',
  'contact',
  'group',
  'photo',
  'room',
  'subject',
  'lesson',
  'period',
  'employee_absence',
  'exclusion',
  'event',
] as const;

/** Only these types show restored_at (spec 2.6). */
export const RESTORABLE_TYPES = new Set(['student', 'student_pre_admission', 'student_leaver', 'contact', 'employee', 'group', 'class']);

export interface DeletionEntry {
  seq: number;
  type: string;
  id: string;
  mis_id: string;
  deleted: Micros;
  restored: Micros | null;
  /** The live row this record stands for, when the sandbox has one. */
  ref?: { resource: string; i: number };
}

export function updatedOfDeletion(e: DeletionEntry): Micros {
  return e.restored !== null && e.restored > e.deleted ? e.restored : e.deleted;
}

export class DeletionLog {
  readonly entries: DeletionEntry[] = [];

  add(e: Omit<DeletionEntry, 'seq' | 'restored'>): DeletionEntry {
    const entry: DeletionEntry = { ...e, seq: this.entries.length, restored: null };
    this.entries.push(entry);
    return entry;
  }

  latestFor(resource: string, i: number): DeletionEntry | undefined {
    for (let k = this.entries.length - 1; k >= 0; k--) {
      const r = this.entries[k].ref;
      if (r && r.resource === resource && r.i === i) return this.entries[k];
    }
    return undefined;
  }

  source(win: Window, type: string | null): KeySource {
    return arraySource(
      this.entries,
      (e) => e.seq,
      (e) => {
        if (type !== null && e.type !== type) return false;
        const u = updatedOfDeletion(e);
        return (win.after === undefined || u > win.after) && (win.before === undefined || u < win.before);
      },
    );
  }

  render(e: DeletionEntry, zone: string): Record<string, unknown> {
    const out: Record<string, unknown> = { type: e.type, id: e.id, mis_id: e.mis_id, deleted_at: dt(e.deleted, zone) };
    if (e.restored !== null && RESTORABLE_TYPES.has(e.type)) out.restored_at = dt(e.restored, zone);
    return out;
  }
}

/** The records every school starts with: several types, some restored (of which only some show it). */
export function seedDeletions(log: DeletionLog, ord: number, studentId: (i: number) => string): void {
  const types = ['student', 'contact', 'class', 'lesson', 'achievement', 'employee', 'group', 'room', 'student_leaver', 'behaviour'];
  const t0 = Date.parse('2024-02-01T10:00:00Z') * 1000 + ord * 60_000_000;
  types.forEach((type, k) => {
    const deleted = t0 + k * 5 * 86_400_000_000 + (k === 3 ? 123_456 : 0);
    const id = type === 'student' ? studentId(1000 + k) : makeId(0, ord, KIND.other, k);
    const e = log.add({ type, id, mis_id: `DEL-${k}`, deleted });
    if (k % 3 === 0) e.restored = deleted + 2 * 86_400_000_000;
  });
}
