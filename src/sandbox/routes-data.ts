/** Per-school data: deletions (4.4), achievements (4.5) and assessment (4.6). */
import { DELETION_TYPES } from './deletions.ts';
import { HttpError, readJson } from './http-util.ts';
import { validateAchievement } from './achievement-write.ts';
import {
  EMPTY_SOURCE,
  boolParam,
  dateParam,
  gateSchool,
  includesOf,
  itemReply,
  listReply,
  listReplyJson,
  requireFull,
  windowOf,
  writeReply,
  type Ctx,
  type Handler,
} from './route-kit.ts';
import type { Rec, ResourceName } from './school-data.ts';
import { microsOfDt, type DateTimeObject } from './time.ts';

export const deletionsList: Handler = (ctx, [id]) => {
  const type = ctx.url.searchParams.get('type');
  if (type !== null && !(DELETION_TYPES as readonly string[]).includes(type)) {
    throw new HttpError(400, `type must be one of: ${DELETION_TYPES.join(', ')}`);
  }
  const win = windowOf(ctx);
  const s = gateSchool(ctx, id, 'list');
  if (!s) return listReply(ctx, EMPTY_SOURCE, () => null);
  const log = ctx.world.data(s).deletions;
  return listReply(ctx, log.source(win, type), (seq) => log.render(log.entries[seq], s.zone));
};

const ACH_INCLUDES = ['students', 'employees'] as const;
const ALL_ACH = new Set<string>(ACH_INCLUDES);

export const achievementsList: Handler = (ctx, [id]) => {
  const inc = includesOf(ctx, ACH_INCLUDES);
  const win = windowOf(ctx);
  const s = gateSchool(ctx, id, 'list');
  const dateAfter = dateParam(ctx, 'achievement_date_after', s?.zone);
  const dateBefore = dateParam(ctx, 'achievement_date_before', s?.zone);
  const hasStudents = boolParam(ctx, 'has_students');
  const hasEmployees = boolParam(ctx, 'has_employees');
  const misId = ctx.url.searchParams.get('mis_id');
  if (!s) return listReply(ctx, EMPTY_SOURCE, () => null, ACH_INCLUDES);
  const data = ctx.world.data(s);
  const actx = data.achievementCtx();
  const filtered = dateAfter !== undefined || dateBefore !== undefined || hasStudents || hasEmployees || misId !== null;
  // Content filters are not monotonic in the row index, so they scan (documented in docs/sandbox.md).
  const pred = filtered
    ? (i: number) => {
        const r = data.render('achievements', i, ALL_ACH, ctx.scope, actx);
        if (misId !== null && String(r.mis_id) !== misId) return false;
        if (hasStudents && (r.students as { data: unknown[] }).data.length === 0) return false;
        if (hasEmployees && (r.employees as { data: unknown[] }).data.length === 0) return false;
        if (dateAfter !== undefined || dateBefore !== undefined) {
          if (r.achievement_date === null) return false;
          const t = microsOfDt(r.achievement_date as DateTimeObject);
          if (dateAfter !== undefined && !(t > dateAfter)) return false;
          if (dateBefore !== undefined && !(t < dateBefore)) return false;
        }
        return true;
      }
    : undefined;
  const source = data.cols.achievements.view(win, pred);
  return listReplyJson(ctx, source, (i) => data.achievementJson(i, inc, ctx.scope, actx), ACH_INCLUDES);
};

function itemOf(ctx: Ctx, schoolId: string, r: ResourceName, itemId: string) {
  const s = gateSchool(ctx, schoolId, 'item')!;
  const data = ctx.world.data(s);
  const i = data.indexOf(r, itemId);
  if (i === null) throw new HttpError(404, `${r.replace(/s$/, '').replace(/_/g, ' ')} ${itemId} not found`);
  return { s, data, i };
}

export const achievementItem: Handler = (ctx, [id, aid]) => {
  const inc = includesOf(ctx, ACH_INCLUDES);
  const { data, i } = itemOf(ctx, id, 'achievements', aid);
  return itemReply(ctx, data.render('achievements', i, inc, ctx.scope));
};

export const achievementCreate: Handler = async (ctx, [id]) => {
  const s = gateSchool(ctx, id, 'item')!;
  const body = await readJson(ctx.req);
  const data = ctx.world.data(s);
  const w = validateAchievement(data, body, false);
  const i = data.add('achievements', w.links, w.patch);
  return writeReply(data.render('achievements', i, ALL_ACH, ctx.scope), 201);
};

export const achievementUpdate: Handler = async (ctx, [id, aid]) => {
  const { s, data, i } = itemOf(ctx, id, 'achievements', aid);
  const body = await readJson(ctx.req);
  const w = validateAchievement(data, body, s.mis === 'SIMS');
  data.update('achievements', i, w.patch, w.links);
  return writeReply(data.render('achievements', i, ALL_ACH, ctx.scope));
};

export const achievementDelete: Handler = (ctx, [id, aid]) => {
  requireFull(ctx, 'deleting achievements');
  const { data, i } = itemOf(ctx, id, 'achievements', aid);
  data.remove('achievements', i);
  return { body: { success: true, id: aid } };
};

/** Results embedded in aspects or result sets need the results scope like the endpoint does. */
function includesChecked(ctx: Ctx, includes: readonly string[]): Set<string> {
  const inc = includesOf(ctx, includes);
  if (inc.has('results')) requireFull(ctx, 'assessment results');
  return inc;
}

/** List and item handlers of a resource with updated filters and includes. */
function plainResource(r: ResourceName, includes: readonly string[], guard?: (ctx: Ctx) => void): { list: Handler; item: Handler } {
  return {
    list: (ctx, [id]) => {
      guard?.(ctx);
      const inc = includesChecked(ctx, includes);
      const win = windowOf(ctx);
      const s = gateSchool(ctx, id, 'list');
      if (!s) return listReply(ctx, EMPTY_SOURCE, () => null, includes.length ? includes : undefined);
      const data = ctx.world.data(s);
      let pred: ((i: number) => boolean) | undefined;
      const aspectIds = r === 'assessment_aspects' ? ctx.url.searchParams.get('aspect_ids') : null;
      if (aspectIds !== null) {
        const wanted = new Set(
          aspectIds
            .split(',')
            .map((x) => data.indexOf(r, x.trim()))
            .filter((x): x is number => x !== null),
        );
        pred = (i) => wanted.has(i);
      }
      const render = (i: number): Rec => data.render(r, i, inc, ctx.scope);
      return listReply(ctx, data.cols[r].view(win, pred), render, includes.length ? includes : undefined);
    },
    item: (ctx, [id, itemId]) => {
      guard?.(ctx);
      const inc = includesChecked(ctx, includes);
      const { data, i } = itemOf(ctx, id, r, itemId);
      return itemReply(ctx, data.render(r, i, inc, ctx.scope));
    },
  };
}

export const attributes = plainResource('achievement_attributes', []);
// Resources the spec leaves unshown (2.13), served minimally so custom_resources can be tried end to end.
export const students = plainResource('students', []);
export const employees = plainResource('employees', []);
export const contacts = plainResource('contacts', []);
export const groups = plainResource('groups', []);
export const classes = plainResource('classes', []);
export const aspects = plainResource('assessment_aspects', ['templates', 'results']);
export const resultsets = plainResource('assessment_resultsets', ['templates', 'results']);
export const results = plainResource('assessment_results', ['student', 'aspect', 'resultset'], (ctx) =>
  requireFull(ctx, 'assessment results'),
);
