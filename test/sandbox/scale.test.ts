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
