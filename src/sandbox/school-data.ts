/**
 * One school's data: a lazy collection per resource, the deletion log, and the renderers that
 * turn row i into the exact API object. Mutations go through here so every one gets a strictly
 * advancing updated_at from the shared clock.
 */
import { LazyCollection } from './collection.ts';
import { BASE_SPAN_US, DELETION_TYPE, RESOURCES, TIMELINE, type ResourceName } from './resource-names.ts';
import { EmbeddedPeople } from './embedded-people.ts';
import { DeletionLog, seedDeletions, type DeletionEntry } from './deletions.ts';
import { rnd, streamSeed } from './hash.ts';
import { INDEX_BASE, KIND, STREAM_KIND, makeId, parseIdOf } from './record-ids.ts';
import {
  CONTACTS_PER_SCHOOL,
  EMPLOYEES_PER_SCHOOL,
  STUDENTS_PER_SCHOOL,
  renderContact,
  renderEmployee,
  renderStudent,
  type PersonCtx,
} from './people.ts';
import { CLASSES_PER_SCHOOL, GROUPS_PER_SCHOOL, renderClass, renderGroup } from './groups.ts';
import { ATTRIBUTES_PER_SCHOOL, achievementBase, attributeFields, type AchievementCtx } from './achievements.ts';
import * as A from './assessment.ts';
import { maskedProperties } from './scopes.ts';
import type { Micros } from './time.ts';

export { RESOURCES, resourceName, type ResourceName } from './resource-names.ts';

export interface Scope {
  full: boolean;
}

export type Rec = Record<string, unknown>;

const NO_INCLUDES: ReadonlySet<string> = new Set();

export class SchoolData {
  /** Migration generation: part of every id. Change it only through bumpGeneration(). */
  gen = 0;
  /**
   * Set by every mutation. A school whose data was never changed is a pure function of the seed
   * and can be dropped and made again (World keeps only so many); a changed one must be kept.
   */
  mutated = false;
  readonly cols: Record<ResourceName, LazyCollection>;
  readonly deletions = new DeletionLog();
  private readonly streams: Record<ResourceName, number>;
  private readonly baseCreatedCache = new Map<ResourceName, (i: number) => Micros>();
  private readonly embedded = new EmbeddedPeople(
    (r, i) => this.cols[r].exists(i),
    (r, i) => this.render(r, i, NO_INCLUDES, { full: true }),
  );

  constructor(
    readonly seed: number,
    readonly ord: number,
    readonly zone: string,
    achievements: number,
    private readonly tick: () => Micros,
    /** Row counts that replace the defaults (the `rowsPerSchool: 'small'` option: SMALL_COUNTS). */
    sizes: Partial<Record<ResourceName, number>> = {},
  ) {
    const counts: Record<ResourceName, number> = {
      achievements,
      achievement_attributes: ATTRIBUTES_PER_SCHOOL,
      students: STUDENTS_PER_SCHOOL,
      employees: EMPLOYEES_PER_SCHOOL,
      assessment_aspects: A.ASPECTS_PER_SCHOOL,
      assessment_resultsets: A.RESULTSETS_PER_SCHOOL,
      assessment_results: A.RESULTS_PER_SCHOOL,
      contacts: CONTACTS_PER_SCHOOL,
      groups: GROUPS_PER_SCHOOL,
      classes: CLASSES_PER_SCHOOL,
      ...sizes,
    };
    const streams = {} as Record<ResourceName, number>;
    const cols = {} as Record<ResourceName, LazyCollection>;
    for (const r of RESOURCES) {
      const stream = streamSeed(seed, ord, STREAM_KIND[r]);
      streams[r] = stream;
      const t0 = Date.parse(TIMELINE[r].start) * 1000 + ord * 3_600_000_000;
      // Huge schools get a denser timeline so base rows never reach the present (mutations must be newer).
      const step = Math.max(1000, Math.min(TIMELINE[r].stepUs, Math.floor(BASE_SPAN_US / Math.max(1, counts[r]))));
      cols[r] = new LazyCollection(counts[r], (i) => t0 + i * step + (rnd(stream, i, 99) % (step - 1)));
      this.baseCreatedCache.set(r, (i) => cols[r].baseUpdated(i) - (rnd(stream, i, 98) % 2_592_000_000_000));
    }
    this.streams = streams;
    this.cols = cols;
    seedDeletions(this.deletions, this.ord, (i) => this.id('students', i));
  }

  id(r: ResourceName, i: number): string {
    return makeId(this.gen, this.ord, KIND[r], (INDEX_BASE[r] ?? 0) + i);
  }

  /** Row index of an id of this school, generation and resource, if it names a live row. */
  indexOf(r: ResourceName, id: string): number | null {
    const i = this.rowOf(r, id);
    return i !== null && this.cols[r].exists(i) ? i : null;
  }

  /** Like indexOf, but also finds removed rows (for restore). */
  anyIndexOf(r: ResourceName, id: string): number | null {
    const i = this.rowOf(r, id);
    return i !== null && (this.cols[r].exists(i) || this.cols[r].isDeleted(i)) ? i : null;
  }

  private rowOf(r: ResourceName, id: string): number | null {
    // Read against this school's own prefix: past 9,999 schools the ordinal takes a fifth digit
    // (record-ids.ts), which only the school itself can tell from the generation's digits.
    const p = parseIdOf(id, this.gen, this.ord);
    if (!p || p.kind !== KIND[r]) return null;
    const base = INDEX_BASE[r];
    if (base === undefined) return p.i;
    const i = p.i - base;
    return i >= 0 && i < 1_000_000_000 ? i : null;
  }

  created(r: ResourceName, i: number): Micros {
    return this.cols[r].entry(i)?.created ?? this.baseCreatedCache.get(r)!(i);
  }

  updated(r: ResourceName, i: number): Micros {
    return this.cols[r].updatedOf(i);
  }

  private personCtx: Partial<Record<ResourceName, PersonCtx>> = {};

  /** What a renderer of row i needs (stream, zone, id and times), made once per resource. */
  private person(r: ResourceName): PersonCtx {
    return (this.personCtx[r] ??= {
      stream: this.streams[r],
      zone: this.zone,
      id: (i) => this.id(r, i),
      updated: (i) => this.updated(r, i),
      created: (i) => this.created(r, i),
    });
  }

  achievementCtx(): AchievementCtx {
    const r = 'achievements';
    return {
      stream: this.streams[r],
      zone: this.zone,
      id: (i) => this.id(r, i),
      updated: (i) => this.updated(r, i),
      created: (i) => this.created(r, i),
      studentCount: STUDENTS_PER_SCHOOL,
      employeeCount: EMPLOYEES_PER_SCHOOL,
    };
  }

  /** Related row indexes of an achievement (students/employees), overlay first. */
  achievementLinks(i: number, ctx = this.achievementCtx()): { students: number[]; employees: number[] } {
    const o = this.cols.achievements.entry(i)?.links;
    const base = o?.students && o?.employees ? null : achievementBase(ctx, i);
    return { students: o?.students ?? base!.students, employees: o?.employees ?? base!.employees };
  }

  /** The API object of row i. `includes` names the includes to embed as { data: [...] }. */
  render(r: ResourceName, i: number, includes: ReadonlySet<string>, scope: Scope, ctx?: AchievementCtx): Rec {
    const patch = this.cols[r].entry(i)?.patch;
    let out: Rec;
    if (r === 'achievements') {
      const b = achievementBase(ctx ?? this.achievementCtx(), i);
      out = b.fields;
      if (patch) for (const k in patch) out[k] = patch[k];
      if (!scope.full) for (const k of maskedProperties(scope, 'achievements')) out[k] = null;
      if (includes.size === 0) return out;
      const links = this.cols.achievements.entry(i)?.links;
      if (includes.has('students')) out.students = { data: this.embedded.objectsOf('students', links?.students ?? b.students) };
      if (includes.has('employees')) out.employees = { data: this.embedded.objectsOf('employees', links?.employees ?? b.employees) };
      return out;
    }
    const created = this.created(r, i);
    const updated = this.updated(r, i);
    const head: Rec = { id: this.id(r, i) };
    switch (r) {
      case 'students':
        out = renderStudent(this.person(r), i);
        return patch ? { ...out, ...patch } : out;
      case 'employees':
        out = renderEmployee(this.person(r), i);
        return patch ? { ...out, ...patch } : out;
      case 'contacts':
        out = renderContact(this.person(r), i);
        return patch ? { ...out, ...patch } : out;
      case 'groups':
        out = renderGroup(this.person(r), i);
        return patch ? { ...out, ...patch } : out;
      case 'classes':
        out = renderClass(this.person(r), i);
        return patch ? { ...out, ...patch } : out;
      case 'achievement_attributes':
        return { ...head, ...attributeFields(i, created, updated, this.zone), ...patch };
      case 'assessment_aspects':
        out = { ...head, ...A.aspectFields(this.assess(), i, created, updated), ...patch };
        if (includes.has('templates')) out.templates = { data: this.templates() };
        if (includes.has('results')) out.results = { data: this.resultsWhere((l) => l.aspect === i, scope) };
        return out;
      case 'assessment_resultsets':
        out = { ...head, ...A.resultsetFields(this.assess(), i, created, updated), ...patch };
        if (includes.has('templates')) out.templates = { data: this.templates() };
        if (includes.has('results')) out.results = { data: this.resultsWhere((l) => l.resultset === i, scope) };
        return out;
      case 'assessment_results': {
        const l = A.resultLinks(this.assess(), i, STUDENTS_PER_SCHOOL);
        const f = A.resultFields(this.assess(), i, created, updated);
        out = {
          ...head,
          mis_id: f.mis_id,
          result: f.result,
          grade_value: f.grade_value,
          student: this.id('students', l.student),
          aspect: this.id('assessment_aspects', l.aspect),
          resultset: this.id('assessment_resultsets', l.resultset),
          collection_date: f.collection_date,
          result_date: f.result_date,
          created_at: f.created_at,
          updated_at: f.updated_at,
          ...patch,
        };
        if (includes.has('student')) out.student = { data: this.embedded.objectsOf('students', [l.student]) };
        if (includes.has('aspect')) out.aspect = { data: this.live('assessment_aspects', [l.aspect], scope) };
        if (includes.has('resultset')) out.resultset = { data: this.live('assessment_resultsets', [l.resultset], scope) };
        return out;
      }
    }
  }

  private assess(): A.AssessCtx {
    return { stream: this.streams.assessment_results, zone: this.zone };
  }

  /** JSON.stringify(render('achievements', ...)), built from cached text for the embedded people. */
  achievementJson(i: number, includes: ReadonlySet<string>, scope: Scope, ctx: AchievementCtx): string {
    const b = achievementBase(ctx, i);
    const entry = this.cols.achievements.entry(i);
    const out = b.fields;
    if (entry?.patch) for (const k in entry.patch) out[k] = entry.patch[k];
    if (!scope.full) for (const k of maskedProperties(scope, 'achievements')) out[k] = null;
    const text = JSON.stringify(out);
    if (includes.size === 0) return text;
    let more = '';
    if (includes.has('students'))
      more += ',"students":{"data":[' + this.embedded.jsonOf('students', entry?.links?.students ?? b.students) + ']}';
    if (includes.has('employees'))
      more += ',"employees":{"data":[' + this.embedded.jsonOf('employees', entry?.links?.employees ?? b.employees) + ']}';
    return text.slice(0, -1) + more + '}';
  }

  private changed(r: ResourceName): void {
    this.embedded.invalidate(r);
  }

  /** A completed migration: every id of the school changes. */
  bumpGeneration(): void {
    this.mutated = true;
    this.gen++;
    this.changed('students');
    this.changed('employees');
  }

  private live(r: ResourceName, idx: number[], scope: Scope): Rec[] {
    const out: Rec[] = [];
    for (const i of idx) if (this.cols[r].exists(i)) out.push(this.render(r, i, NO_INCLUDES, scope));
    return out;
  }

  private templates(): Rec[] {
    const out: Rec[] = [];
    for (let k = 0; k < A.TEMPLATES_PER_SCHOOL; k++) out.push(A.templateOf(makeId(this.gen, this.ord, KIND.templates, k), k));
    return out;
  }

  private resultsWhere(pred: (l: A.ResultLinks) => boolean, scope: Scope): Rec[] {
    const out: Rec[] = [];
    for (const i of this.cols.assessment_results.view({}).keysAfter(-1)) {
      if (pred(A.resultLinks(this.assess(), i, STUDENTS_PER_SCHOOL))) out.push(this.render('assessment_results', i, new Set(), scope));
    }
    return out;
  }

  // --- mutations -------------------------------------------------------------------------

  update(r: ResourceName, i: number, patch: Rec = {}, links?: Record<string, number[]>): void {
    // Includes are relations, not fields: they change through `links` only.
    const { id: _id, updated_at: _updated, ...fields } = patch;
    const clean = r === 'achievements' ? (({ students: _s, employees: _e, ...rest }) => rest)(fields) : fields;
    this.mutated = true;
    this.cols[r].touch(i, { updated: this.tick(), patch: clean, ...(links ? { links } : {}) });
    this.changed(r);
  }

  /** Removes row i; returns the deletion record it produced (top-level types only). */
  remove(r: ResourceName, i: number): DeletionEntry | null {
    this.mutated = true;
    const now = this.tick();
    const type = DELETION_TYPE[r];
    const rec = type ? this.render(r, i, new Set(), { full: true }) : null;
    this.cols[r].touch(i, { updated: now, deleted: true });
    this.changed(r);
    if (!type || !rec) return null;
    return this.deletions.add({ type, id: String(rec.id), mis_id: String(rec.mis_id), deleted: now, ref: { resource: r, i } });
  }

  /**
   * Brings row i back with a fresh updated_at. Its deletion record gets restored_at, which the
   * API shows only for the types of spec 2.6 (so an achievement's record looks unchanged).
   */
  restore(r: ResourceName, i: number): DeletionEntry | null {
    this.mutated = true;
    const now = this.tick();
    this.cols[r].touch(i, { updated: now, deleted: false });
    this.changed(r);
    const entry = this.deletions.latestFor(r, i);
    if (entry) entry.restored = now;
    return entry ?? null;
  }

  add(r: ResourceName, links?: Record<string, number[]>, patch?: Rec): number {
    this.mutated = true;
    const i = this.cols[r].add(this.tick());
    this.changed(r);
    if (links || patch) this.cols[r].touch(i, { updated: this.updated(r, i), ...(links ? { links } : {}), ...(patch ? { patch } : {}) });
    return i;
  }
}
