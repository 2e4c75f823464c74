import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { tableSchemas, resourceByName } from '../../src/resources/index.ts';
import { readManifests, readRows } from '../helpers/read-exports.ts';
import { exportOnce, sandboxConfig, tempDir } from './helpers.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { createEncoding } from '../../src/encode/pool.ts';

/**
 * Issue 25, item 1: a lone UTF-16 surrogate (an emoji cut in half by a MIS field limit) is written
 * as U+FFFD in every format, NDJSON included, and counted per table in the manifest and summary.
 */
describe('lone surrogates', () => {
  let sb: Sandbox;
  let studentRows = 0;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 3, schools: 1, achievementsPerSchool: 40 });
    const [first, second] = sb.control.records('A1001', 'achievements') as { id: string; students: { data: { id: string }[] } }[];
    sb.control.update('A1001', 'achievements', first!.id, { comment: 'cut emoji \ud83d here', class: 'ok 🌟' });
    // a student embedded in several achievements: its surname counts once per row it is written in
    const student = (second!.students.data[0] ?? first!.students.data[0])!.id;
    sb.control.update('A1001', 'students', student, { surname: '\udc00 half' });
    for (const a of sb.control.records('A1001', 'achievements') as { students: { data: { id: string }[] } }[])
      studentRows += a.students.data.filter((s) => s.id === student).length;
  });
  afterAll(() => sb.close());

  const spec = resourceByName('achievements')!;
  const [parent, students] = tableSchemas(spec);

  for (const format of ['ndjson', 'csv', 'parquet'] as const) {
    for (const workers of [0, 1]) {
      it(`${format}, --workers ${workers}: U+FFFD in the files, counted in the manifest and the summary`, async () => {
        const { dir, cleanup } = tempDir();
        try {
          // with a worker: one whose thread takes every page (this thread reads as the bottleneck)
          const encoding = workers ? createEncoding({ workers, busy: () => 1, smallPageBytes: 0 }) : undefined;
          const summary = await runExport(sandboxConfig(sb, dir, { format, resources: ['achievements'], workers }), {
            token: sb.tokens.full,
            ...(encoding ? { encoding } : {}),
          });
          if (encoding) expect(encoding.started).toBe(1);
          expect(summary.status).toBe('ok');
          const task = readManifests(dir).find((t) => t.resource === 'achievements')!;
          expect(task.replaced_surrogates).toEqual({ achievements: 1, achievement_students: studentRows });
          expect(summary.tables.achievements!.replacedSurrogates).toBe(1);
          expect(summary.tables.achievement_students!.replacedSurrogates).toBe(studentRows);
          const files = (t: string) => task.files.filter((f) => f.table === t).map((f) => f.path);
          const rows = (await readRows(dir, files('achievements')[0]!, parent!)).filter((r) => typeof r.comment === 'string');
          expect(rows.map((r) => r.comment)).toContain('cut emoji \ufffd here');
          expect(rows.map((r) => r.class)).toContain('ok 🌟');
          const kids = await readRows(dir, files('achievement_students')[0]!, students!);
          expect(kids.filter((r) => r.surname === '\ufffd half')).toHaveLength(studentRows);
          if (format === 'ndjson') {
            const text = readFileSync(join(dir, files('achievements')[0]!), 'utf8');
            expect(text).not.toMatch(/\\ud[89a-f]/i); // no surrogate escape a JSON reader would refuse
            expect(text).toContain('"cut emoji \ufffd here"');
          }
        } finally {
          cleanup();
        }
      });
    }
  }

  it('a run of well-formed text records no replaced_surrogates', async () => {
    const { dir, cleanup } = tempDir();
    try {
      await exportOnce(sb, dir, { format: 'ndjson', resources: ['achievement_attributes'] });
      for (const t of readManifests(dir)) expect(t.replaced_surrogates).toBeUndefined();
    } finally {
      cleanup();
    }
  });
});
