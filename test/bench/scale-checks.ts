import { expect } from 'vitest';
import type { Results } from '../../bench/report.ts';
import { SCALE_SCHOOLS } from '../../bench/scale.ts';

/**
 * What bench section 8 (bench/scale.ts) must show at the smoke test's tiny size: two nights per
 * size, the second writing files only for the changed (school, table) pairs, every full table
 * unchanged, and the warehouse load and status commands measured (status on S3 too). No timing is asserted.
 */
export function expectScaleFigures(results: Results, table: string): void {
  const r = results.atScale!;
  expect(r.cases.map((c) => c.schools)).toEqual(SCALE_SCHOOLS.tiny);
  for (const c of r.cases) {
    const n = c.schools;
    for (const night of [c.full, c.incremental]) {
      expect(night.status).toBe('ok');
      // discovery, then per school one request per resource (the permissions probe is reused)
      expect(night.requests).toBe(1 + 9 * n);
      expect(night.cpuPerSchoolMs).toBeGreaterThan(0);
      expect(night.stateFiles).toBe(n);
      expect(night.stateBytes).toBeGreaterThan(0);
      expect(night.largestManifestBytes).toBeGreaterThan(0);
      expect(night.load.exitCode).toBe(0);
      expect(night.load.maxRssMB).toBeGreaterThan(0);
      expect(night.statusCmd.exitCode).toBe(0);
      expect(night.statusCmd.lines).toBeGreaterThan(0);
    }
    expect(c.full.dataFiles).toBeGreaterThan(5 * n);
    expect(c.full.tasks.committed).toBe(10 * n);
    // one achievement changed per school: its row and its included students and employees
    expect(c.changedPairs).toBeGreaterThanOrEqual(2 * n);
    expect(c.incremental.dataFiles).toBe(c.changedPairs);
    // schools, meta, permissions, ACL and attributes are read in full and found unchanged
    expect(c.incremental.tasks.unchanged).toBe(5 * n);
    // the same status from S3: every school's state file and the manifests were copied there
    const s3 = c.statusS3!;
    expect(s3.exitCode).toBe(0);
    expect(s3.objects).toBeGreaterThan(n);
    expect(s3.lines).toBe(c.incremental.statusCmd.lines);
    // and the same before the digest was written, every state file read
    expect(s3.direct?.exitCode).toBe(0);
    expect(s3.direct?.lines).toBe(c.incremental.statusCmd.lines);
    expect(s3.states).toBe(n);
    expect(s3.covered).toBe(n); // the digest held every state at the version listed
  }
  expect(table).toContain('8 scale');
}
