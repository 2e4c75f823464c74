import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { microsOfDt } from '../../src/sandbox/time.ts';
import { call, walk } from './helpers.ts';

let sb: Sandbox;
beforeEach(async () => {
  sb = await startSandbox({ seed: 3, achievementsPerSchool: 300 });
});
afterEach(() => sb.close());

const S = 'A1001';
const ach = () => `${sb.url}/v1.0/schools/${S}/achievements`;
const updatedUs = (r: any) => microsOfDt(r.updated_at);

describe('control mutations', () => {
  it('update gives strictly advancing updated_at, after every earlier time, and shows in the API', async () => {
    const rows = sb.control.records(S, 'achievements');
    expect(rows.length).toBe(300);
    expect(rows[0].students).toBeDefined();
    const maxBefore = Math.max(...rows.map(updatedUs));
    const times: number[] = [];
    for (let k = 0; k < 20; k++)
      times.push(updatedUs(sb.control.update(S, 'achievements', rows[k % 3].id as string, { comment: `v${k}` })));
    for (let k = 1; k < times.length; k++) expect(times[k]).toBeGreaterThan(times[k - 1]);
    expect(times[0]).toBeGreaterThan(maxBefore);
    const api = (await call(`${ach()}/${rows[2].id}`, { token: sb.tokens.full })).json;
    expect(api.comment).toBe('v17');
    const { students, employees, ...bare } = sb.control.get(S, 'achievements', rows[2].id as string)!;
    expect(students).toBeDefined();
    expect(employees).toBeDefined();
    expect(api).toEqual(bare);
    const since = await walk(
      `${ach()}?per_page=100&updated_after=${encodeURIComponent((rows[299].updated_at as { date: string }).date)}`,
      sb.tokens.full,
    );
    expect(since.map((r) => r.id)).toEqual([rows[0].id, rows[1].id, rows[2].id]);
  });

  it('remove adds a deletion record; restore brings the row back with restored_at for restorable types', async () => {
    const student = sb.control.records(S, 'students')[5];
    const del = sb.control.remove(S, 'students', student.id as string)!;
    expect(del).toMatchObject({ type: 'student', id: student.id, mis_id: student.mis_id });
    expect(sb.control.get(S, 'students', student.id as string)).toBeUndefined();
    const restored = sb.control.restore(S, 'students', student.id as string)!;
    expect(microsOfDt(restored.restored_at as any)).toBeGreaterThan(microsOfDt(restored.deleted_at as any));
    expect(sb.control.get(S, 'students', student.id as string)).toBeDefined();

    const a = sb.control.records(S, 'achievements')[10];
    sb.control.remove(S, 'achievements', a.id as string);
    expect((await call(`${ach()}/${a.id}`, { token: sb.tokens.full })).status).toBe(404);
    const recs = (await call(`${sb.url}/v1.0/schools/${S}/deletions?type=achievement&per_page=100`, { token: sb.tokens.full })).json.data;
    const mine = recs.find((d: any) => d.id === a.id);
    expect(mine).toMatchObject({ type: 'achievement', mis_id: a.mis_id });
    const back = sb.control.restore(S, 'achievements', a.id as string)!;
    expect(back.restored_at).toBeUndefined(); // spec 2.6: achievement records never show restored_at
    const again = (await call(`${ach()}/${a.id}`, { token: sb.tokens.full })).json;
    expect(updatedUs(again)).toBeGreaterThan(microsOfDt(mine.deleted_at));

    const aspect = sb.control.records(S, 'assessment_aspects')[0];
    expect(sb.control.remove(S, 'assessment_aspects', aspect.id as string)).toBeNull();
    expect(sb.control.records(S, 'deletions').some((d) => d.id === aspect.id)).toBe(false);
  });

  it('deletions filter on type and on max(deleted_at, restored_at)', async () => {
    const url = `${sb.url}/v1.0/schools/${S}/deletions`;
    const all = (await call(url, { token: sb.tokens.full })).json.data;
    expect(all.some((d: any) => d.restored_at)).toBe(true);
    expect(
      all
        .filter((d: any) => d.restored_at)
        .every((d: any) =>
          ['student', 'contact', 'employee', 'group', 'class', 'student_leaver', 'student_pre_admission'].includes(d.type),
        ),
    ).toBe(true);
    const restored = all.find((d: any) => d.restored_at);
    const cut = restored.deleted_at.date; // after deleted_at, before restored_at
    const after = (await call(`${url}?updated_after=${encodeURIComponent(cut)}Z`.replace(' ', 'T'), { token: sb.tokens.full })).json.data;
    expect(after.map((d: any) => d.id)).toContain(restored.id);
    expect((await call(`${url}?type=student`, { token: sb.tokens.full })).json.data.every((d: any) => d.type === 'student')).toBe(true);
    expect((await call(`${url}?type=unicorn`, { token: sb.tokens.full })).status).toBe(400);
  });

  it('add returns new ids that list after the existing rows', async () => {
    const ids = sb.control.add(S, 'achievements', 3);
    expect(ids).toHaveLength(3);
    const all = await walk(`${ach()}?per_page=500`, sb.tokens.full);
    expect(all.length).toBe(303);
    expect(all.slice(-3).map((r) => r.id)).toEqual(ids);
  });

  it('a cursor walk returns every row that existed throughout exactly once while rows change between pages', async () => {
    const before = sb.control.records(S, 'achievements').map((r) => r.id as string);
    let n = 0;
    const removed = new Set<string>();
    const rows = await walk(`${ach()}?cursor=true&per_page=25`, sb.tokens.full, () => {
      n++;
      const gone = before[299 - n]; // removed from the tail, never touched otherwise
      sb.control.update(S, 'achievements', before[(n * 37) % 200], { comment: 'moved' });
      sb.control.update(S, 'achievements', before[n], { points: 99 });
      sb.control.remove(S, 'achievements', gone);
      removed.add(gone);
      sb.control.add(S, 'achievements', 1);
    });
    const ids = rows.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of before) if (!removed.has(id)) expect(ids).toContain(id);
  });

  it('migration completed changes every id of the school and fires no change to other schools', async () => {
    const old = sb.control.records(S, 'achievements').map((r) => r.id);
    const other = sb.control.records('A1004', 'achievements').map((r) => r.id);
    await sb.control.migrate(S, 'scheduled');
    expect(sb.control.records(S, 'achievements').map((r) => r.id)).toEqual(old);
    await sb.control.migrate(S, 'completed');
    const now = sb.control.records(S, 'achievements');
    expect(now.length).toBe(old.length);
    for (const r of now) {
      expect(r.id).toMatch(/^A\d+$/);
      expect(old).not.toContain(r.id);
      expect((r.students as any).data.every((s: any) => /^A2/.test(s.id))).toBe(true);
    }
    expect((await call(`${ach()}/${old[0]}`, { token: sb.tokens.full })).status).toBe(404);
    expect((await call(`${ach()}/${now[0].id}`, { token: sb.tokens.full })).status).toBe(200);
    expect(sb.control.records('A1004', 'achievements').map((r) => r.id)).toEqual(other);
  });
});

describe('achievement writes over HTTP', () => {
  const body = () => {
    const student = sb.control.records(S, 'students')[0];
    const employee = sb.control.records(S, 'employees')[0];
    return {
      students: [{ student_id: student.id, points: 2, award: 'CERT' }],
      employee_id: employee.id,
      date: '2024-05-01 10:00:00',
      type: 'HW',
      comment: 'Added, "via" POST',
      activity_type: 'MA',
    };
  };

  it('POST creates, PUT edits, DELETE removes (with a deletion record)', async () => {
    const created = await call(ach(), { method: 'POST', token: sb.tokens.full, body: body() });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      type: 'Homework',
      action: 'Certificate',
      subject: 'Maths',
      points: 2,
      comment: 'Added, "via" POST',
    });
    expect(created.json.achievement_date.date).toBe('2024-05-01 10:00:00.000000');
    expect(created.json.students.data).toHaveLength(1);
    const id = created.json.id;
    expect((await call(`${ach()}/${id}`, { token: sb.tokens.full })).json.comment).toBe('Added, "via" POST');
    const edited = await call(`${ach()}/${id}`, {
      method: 'PUT',
      token: sb.tokens.full,
      body: { ...body(), type: 'EF', comment: 'edited' },
    });
    expect(edited.status).toBe(200);
    expect(edited.json).toMatchObject({ id, type: 'Effort', comment: 'edited' });
    expect(updatedUs(edited.json)).toBeGreaterThan(updatedUs(created.json));
    const del = await call(`${ach()}/${id}`, { method: 'DELETE', token: sb.tokens.full });
    expect(del.status).toBe(200);
    expect((await call(`${ach()}/${id}`, { token: sb.tokens.full })).status).toBe(404);
    expect(sb.control.records(S, 'deletions').some((d) => d.id === id && d.type === 'achievement')).toBe(true);
  });

  it('answers 422 for missing or disabled attribute codes and bad content, 400 for non-JSON', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ type: 'OLD' }, /disabled/],
      [{ type: 'NOPE' }, /not an ACHIEVEMENT_TYPE/],
      [{ type: undefined }, /type/],
      [{ activity_type: 'LAT' }, /disabled/],
      [{ students: [] }, /students/],
      [{ employee_id: 'A1' }, /employee_id/],
      [{ date: 'soon' }, /date/],
    ];
    for (const [change, msg] of cases) {
      const r = await call(ach(), { method: 'POST', token: sb.tokens.full, body: { ...body(), ...change } });
      expect(r.status, JSON.stringify(change)).toBe(422);
      expect(r.json.error).toMatchObject({ status: 422, code: 'validation_failed', message: expect.stringMatching(msg) });
    }
    expect((await call(ach(), { method: 'POST', token: sb.tokens.full, body: '{nope' })).status).toBe(400);
  });
});

describe('access changes and webhooks', () => {
  it('request-access and revoke-access move the state', async () => {
    const r = await call(`${sb.url}/v1.0/schools/A9003/request-access`, {
      method: 'POST',
      token: sb.tokens.full,
      body: { contacts: [{ first_name: 'Ada', last_name: 'Lovelace', email_address: 'ada@example.test' }] },
    });
    expect(r.json).toEqual({ success: true, state: 'pending', message: expect.any(String) });
    const pending = (await call(`${sb.url}/v1.0/schools/pending`, { token: sb.tokens.full })).json.data.map((s: any) => s.id);
    expect(pending).toContain('A9003');
    const bad = await call(`${sb.url}/v1.0/schools/A9003/request-access`, {
      method: 'POST',
      token: sb.tokens.full,
      body: { contacts: [{ first_name: 'x' }] },
    });
    expect(bad.status).toBe(422);
    const rv = await call(`${sb.url}/v1.0/schools/A1001/revoke-access`, { method: 'DELETE', token: sb.tokens.full });
    expect(rv.json).toEqual({ success: true, state: 'revoked', message: expect.any(String) });
    expect((await call(ach(), { token: sb.tokens.full })).status).toBe(403);
  });
});
