/**
 * Students and employees embedded in achievements. A school has few of them and many rows share
 * them, so each is rendered once — as an object and as JSON text — and reused until its resource
 * changes (any mutation of it, or a migration) invalidates the cache.
 */
import type { Rec } from './school-data.ts';

export type PersonResource = 'students' | 'employees';

export class EmbeddedPeople {
  private objects = { students: new Map<number, Rec>(), employees: new Map<number, Rec>() };
  private texts = { students: new Map<number, string>(), employees: new Map<number, string>() };

  constructor(
    private readonly exists: (r: PersonResource, i: number) => boolean,
    private readonly render: (r: PersonResource, i: number) => Rec,
  ) {}

  /** The live people among `idx` (removed ones are left out, as the service would). */
  objectsOf(r: PersonResource, idx: readonly number[]): Rec[] {
    const cache = this.objects[r];
    const out: Rec[] = [];
    for (const i of idx) {
      let rec = cache.get(i);
      if (rec === undefined) {
        if (!this.exists(r, i)) continue;
        rec = this.render(r, i);
        cache.set(i, rec);
      }
      out.push(rec);
    }
    return out;
  }

  /** The same, as comma-separated JSON objects (the inside of a "data" array). */
  jsonOf(r: PersonResource, idx: readonly number[]): string {
    const cache = this.texts[r];
    let out = '';
    for (const i of idx) {
      let text = cache.get(i);
      if (text === undefined) {
        const rec = this.objectsOf(r, [i]);
        if (rec.length === 0) continue;
        text = JSON.stringify(rec[0]);
        cache.set(i, text);
      }
      out += out === '' ? text : ',' + text;
    }
    return out;
  }

  invalidate(r: string): void {
    if (r === 'students' || r === 'employees') {
      this.objects[r].clear();
      this.texts[r].clear();
    }
  }
}
