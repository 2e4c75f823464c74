import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import { call, walk } from './helpers.ts';

const stripPorts = (text: string) => text.replace(/127\.0\.0\.1:\d+/g, 'HOST');

describe('determinism', () => {
  it('same seed, same bytes; another seed, other data', async () => {
    const paths = [
      '/v1.0/schools/all',
      '/v1.0/schools/A1001/achievements?per_page=120&include=students,employees',
      '/v1.0/schools/A1001/deletions',
      '/v1.0/schools/A1001/assessment/results?per_page=240',
      '/v1.0/schools/A1001/assessment/aspects?include=templates',
      '/v1.0/schools/A1001/achievements/attributes',
    ];
    const grab = async (seed: number) => {
      const sb = await startSandbox({ seed });
      try {
        const out: string[] = [];
        for (const p of paths) out.push(stripPorts((await call(sb.url + p, { token: sb.tokens.full })).text));
        return { out, tokens: sb.tokens };
      } finally {
        await sb.close();
      }
    };
    const a = await grab(11);
    const b = await grab(11);
    const c = await grab(12);
    expect(b.out).toEqual(a.out);
    expect(b.tokens).toEqual(a.tokens);
    expect(c.out[1]).not.toEqual(a.out[1]);
  });
});

describe('a school with 1,000,000 achievements', () => {
  it('starts without materialising rows and serves deep pages by offset and by cursor', async () => {
    // Naive updated_after values are read as London wall time, like the zone the rows are shown in.
    const sb = await startSandbox({ bigSchools: { A1001: 1_000_000 }, updatedAfterZone: 'Europe/London' });
    try {
      const url = `${sb.url}/v1.0/schools/A1001/achievements`;
      const deep = (await call(`${url}?per_page=1000&page=1000`, { token: sb.tokens.full })).json;
      expect(deep.data).toHaveLength(1000);
      expect(deep.data[999].mis_id).toBe(String(100000 + 999_999));
      expect(deep.meta.pagination).toMatchObject({ more: false, next: null, current_page: 1000 });
      // A cursor walk from the middle: updated_after maps to a row by binary search.
      const mid = (await call(`${url}?per_page=1&page=999001`, { token: sb.tokens.full })).json.data[0];
      const tail = await walk(`${url}?cursor=true&per_page=500&updated_after=${encodeURIComponent(mid.updated_at.date)}`, sb.tokens.full);
      expect(mid.updated_at.timezone).toBe('Europe/London');
      expect(mid.updated_at.date >= '2024-08').toBe(true); // summer time: a Z reading would be an hour off
      expect(tail).toHaveLength(999);
      expect(tail[0].mis_id).toBe(String(100000 + 999_001));
      // A mutation deep inside moves the row to the end of an updated_after window.
      sb.control.update('A1001', 'achievements', tail[5].id, { comment: 'touched' });
      const again = await walk(`${url}?cursor=true&per_page=500&updated_after=${encodeURIComponent(mid.updated_at.date)}`, sb.tokens.full);
      expect(again.map((r) => r.id)).toEqual(tail.map((r) => r.id));
      expect(again[5].comment).toBe('touched');
      const other = (await call(`${sb.url}/v1.0/schools/A1004/achievements?per_page=1000`, { token: sb.tokens.full })).json.data;
      expect(other).toHaveLength(120);
    } finally {
      await sb.close();
    }
  });
});

describe('thousands of schools (rowsPerSchool: small)', () => {
  it('lists 10,000 schools without making their data, and keeps only a bounded number of unchanged schools in memory', async () => {
    const sb = await startSandbox({ schools: 10_000, rowsPerSchool: 'small' });
    try {
      const T = sb.tokens.full;
      const listed = await walk(`${sb.url}/v1.0/schools?cursor=true&per_page=1000`, T);
      expect(listed).toHaveLength(10_000);
      expect(listed[9_999].id).toBe('A11000');
      expect(new Set(listed.map((s) => s.id)).size).toBe(10_000);
      expect(sb.control.schoolsInMemory()).toBe(0);
      // the other access states follow the approved schools once these reach A9001
      expect((await walk(`${sb.url}/v1.0/schools/pending?cursor=true`, T)).map((s) => s.id)).toEqual(['A11001', 'A11002']);

      // about two rows per table
      const first = `${sb.url}/v1.0/schools/A1001`;
      const before = (await call(`${first}/achievements?include=students,employees`, { token: T })).text;
      expect(JSON.parse(before).data).toHaveLength(2);
      expect((await call(`${first}/assessment/results`, { token: T })).json.data).toHaveLength(2);
      expect((await call(`${first}/assessment/aspects`, { token: T })).json.data).toHaveLength(2);
      expect((await call(`${first}/assessment/resultsets`, { token: T })).json.data).toHaveLength(2);

      // A school past the 9,999th (five-digit ordinal in its record ids) serves, finds and changes its rows.
      const last = `${sb.url}/v1.0/schools/A11000/achievements`;
      const rows = (await call(last, { token: T })).json.data as { id: string }[];
      expect(rows).toHaveLength(2);
      expect((await call(`${last}/${rows[1]!.id}`, { token: T })).json.id).toBe(rows[1]!.id);
      sb.control.update('A11000', 'achievements', rows[1]!.id, { comment: 'changed at the 10,000th school' });

      // Reading 600 schools' data keeps at most a few hundred unchanged ones; the changed one stays, changed.
      for (let s = 1; s <= 600; s++)
        expect((await call(`${sb.url}/v1.0/schools/A${1000 + s}/achievements`, { token: T })).status).toBe(200);
      const held = sb.control.schoolsInMemory();
      expect(held).toBeLessThanOrEqual(257);
      expect(held).toBeGreaterThan(100);
      expect(((await call(last, { token: T })).json.data as { comment: unknown }[])[1]!.comment).toBe('changed at the 10,000th school');
      // a school dropped from memory answers the same bytes when it is made again
      expect((await call(`${first}/achievements?include=students,employees`, { token: T })).text).toBe(before);
    } finally {
      await sb.close();
    }
  }, 60_000);
});
