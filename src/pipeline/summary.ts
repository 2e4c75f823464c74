import type { Manifest, PersonalDataRecord } from '../manifest/types.ts';
import { describePolicy } from '../privacy/policy.ts';

export interface TableTotals {
  rows: number;
  files: number;
  bytes: number;
}

export interface RunSummary {
  runId: string;
  dest: string;
  status: 'ok' | 'partial';
  durationMs: number;
  tables: Record<string, TableTotals>;
  tasks: { committed: number; failed: number; skipped: number };
  failures: { school_id: string; resource: string; code: string; message: string }[];
  drift: Record<string, string[]>;
  deletions: number;
  deactivated: string[];
  /** The personal-data policy applied to the values written. */
  personalData?: PersonalDataRecord;
}

export function summarise(m: Manifest, o: { deactivated: string[]; durationMs: number; dest: string }): RunSummary {
  const tables: Record<string, TableTotals> = {};
  const drift: Record<string, Set<string>> = {};
  const tasks = { committed: 0, failed: 0, skipped: 0 };
  const failures: RunSummary['failures'] = [];
  for (const t of m.tasks) {
    if (t.status === 'committed' && !t.error) tasks.committed += 1;
    else if (t.status === 'skipped') tasks.skipped += 1;
    else tasks.failed += 1;
    if (t.error) failures.push({ school_id: t.school_id, resource: t.resource, code: t.error.code, message: t.error.message });
    for (const f of t.files) {
      const tt = (tables[f.table] ??= { rows: 0, files: 0, bytes: 0 });
      tt.files += 1;
      tt.bytes += f.bytes;
    }
    for (const [table, n] of Object.entries(t.rows)) (tables[table] ??= { rows: 0, files: 0, bytes: 0 }).rows += n;
    for (const [table, fields] of Object.entries(t.drift_fields ?? {})) for (const f of fields) (drift[table] ??= new Set()).add(f);
  }
  return {
    runId: m.run_id,
    dest: o.dest,
    status: failures.length ? 'partial' : 'ok',
    durationMs: o.durationMs,
    tables,
    tasks,
    failures,
    drift: Object.fromEntries(Object.entries(drift).map(([k, v]) => [k, [...v].sort()])),
    deletions: m.deletions.length,
    deactivated: o.deactivated,
    ...(m.personal_data ? { personalData: m.personal_data } : {}),
  };
}

const fmtBytes = (n: number) =>
  n < 1024
    ? `${n} B`
    : n < 1024 ** 2
      ? `${(n / 1024).toFixed(1)} KiB`
      : n < 1024 ** 3
        ? `${(n / 1024 ** 2).toFixed(1)} MiB`
        : `${(n / 1024 ** 3).toFixed(2)} GiB`;

/** The table a person reads at the end of a run. */
export function renderSummary(s: RunSummary): string {
  const lines: string[] = [];
  lines.push(
    `run ${s.runId} ${s.status === 'ok' ? 'finished' : 'finished with failures'} in ${(s.durationMs / 1000).toFixed(1)} s -> ${s.dest}`,
  );
  const names = Object.keys(s.tables).sort();
  const w = Math.max(5, ...names.map((n) => n.length));
  lines.push(`  ${'table'.padEnd(w)} ${'rows'.padStart(12)} ${'files'.padStart(6)} ${'bytes'.padStart(11)}`);
  let rows = 0;
  let files = 0;
  let bytes = 0;
  for (const n of names) {
    const t = s.tables[n]!;
    rows += t.rows;
    files += t.files;
    bytes += t.bytes;
    lines.push(
      `  ${n.padEnd(w)} ${t.rows.toLocaleString('en').padStart(12)} ${String(t.files).padStart(6)} ${fmtBytes(t.bytes).padStart(11)}`,
    );
  }
  lines.push(
    `  ${'total'.padEnd(w)} ${rows.toLocaleString('en').padStart(12)} ${String(files).padStart(6)} ${fmtBytes(bytes).padStart(11)}`,
  );
  lines.push(
    `  tasks: ${s.tasks.committed} committed, ${s.tasks.failed} failed, ${s.tasks.skipped} skipped; deletions recorded: ${s.deletions}`,
  );
  for (const [table, fields] of Object.entries(s.drift)) {
    lines.push(
      `  schema drift in ${table}: ${fields.length} undeclared field(s) kept (${fields.slice(0, 8).join(', ')}${fields.length > 8 ? ', …' : ''})`,
    );
  }
  if (s.personalData) lines.push(`  ${describePolicy(s.personalData)}`);
  if (s.deactivated.length) lines.push(`  not exported (access revoked or declined): ${s.deactivated.join(', ')}`);
  for (const f of s.failures) lines.push(`  FAILED ${f.school_id} ${f.resource}: [${f.code}] ${f.message}`);
  return lines.join('\n');
}
