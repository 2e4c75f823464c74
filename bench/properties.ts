/**
 * Section 11: the property checks of issue 25 item 4 (test/helpers/value-properties.ts) over many
 * seeds: generated values set into sandbox records, exported in every format, loaded into DuckDB by
 * `warehouse load` and the static plan's DuckDB rendering, compared with the sandbox's records
 * through the documented normalisations. `npm test` runs one seed; this runs `rounds` of them from
 * PROPERTY_SEED (default 1), every fourth with a 1.5 MB comment. Not a speed figure: the count of
 * values compared and of mismatches (each logged with its seed, so it can be replayed alone).
 */
import { propertyRound } from '../test/helpers/value-properties.ts';
import type { Opts } from './sections.ts';

export interface PropertiesResult {
  firstSeed: number;
  rounds: number;
  checked: number;
  mismatches: string[];
  ms: number;
}

export async function properties(o: Opts): Promise<PropertiesResult> {
  const { rounds } = o.scale.properties;
  const firstSeed = Number(process.env.PROPERTY_SEED ?? 1);
  const out: PropertiesResult = { firstSeed, rounds, checked: 0, mismatches: [], ms: 0 };
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) {
    const seed = firstSeed + i;
    const r = await propertyRound({ seed, records: 40, students: 10, longBytes: i % 4 === 0 ? 1.5 * 1024 * 1024 : 0 });
    out.checked += r.checked;
    out.mismatches.push(...r.mismatches);
    for (const m of r.mismatches.slice(0, 5)) o.log(`properties: ${m}`);
    o.log(`properties: seed ${seed}: ${r.checked} values, ${r.mismatches.length} mismatches`);
  }
  out.ms = performance.now() - t0;
  return out;
}
