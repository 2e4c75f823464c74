import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initCommandRun } from '../../src/cli/init.ts';
import { readPipelineFile } from '../../src/config/file.ts';
import { pipelineSchema, SCHEMA_PATH } from '../../src/config/schema.ts';
import { schemaRef } from '../../src/config/starter.ts';

const BIN = resolve(import.meta.dirname, '../../bin/school-export.js');
const quiet = { err: { write: () => true } as unknown as NodeJS.WritableStream };

describe('school-export init', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'se-init-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a commented YAML pipeline with the schema line; it validates, and each commented key is a real one', async () => {
    const file = join(dir, 'nightly.yaml');
    await initCommandRun({ file }, quiet);
    const text = readFileSync(file, 'utf8');
    expect(text.split('\n')[0]).toBe(`# yaml-language-server: $schema=${schemaRef(file)}`);
    expect(text).toContain(`\n$schema: ${schemaRef(file)}\n`);
    expect(readPipelineFile(file)).toMatchObject({ sandbox: { schools: 3 }, dest: './exports', format: 'parquet' });
    const keys = Object.keys(pipelineSchema().properties);
    const commented = [...text.matchAll(/^# ([a-z_]+):/gm)].map((m) => m[1]!);
    expect(commented.length).toBeGreaterThan(8);
    for (const k of commented) expect(keys, k).toContain(k);
  });

  it('names the schema relative to a project that installed the package, absolutely elsewhere', () => {
    const root = resolve(SCHEMA_PATH, '../..');
    expect(schemaRef(join(root, 'pipeline.yaml'))).toBe('schema/pipeline.schema.json');
    expect(schemaRef(join(root, 'pipelines/x.yaml'))).toBe('../schema/pipeline.schema.json');
    expect(schemaRef('/somewhere/else/entirely/p.yaml')).toBe(SCHEMA_PATH);
  });

  it('never replaces a file without --force; JSON is refused (the starter is YAML)', async () => {
    const file = join(dir, 'mine.yaml');
    writeFileSync(file, 'dest: ./mine\n');
    await expect(initCommandRun({ file }, quiet)).rejects.toThrow(`${file} exists: choose another name, or --force to replace it`);
    expect(readFileSync(file, 'utf8')).toBe('dest: ./mine\n');
    await initCommandRun({ file, force: true }, quiet);
    expect(readFileSync(file, 'utf8')).toContain('sandbox:');
    await expect(initCommandRun({ file: join(dir, 'p.json') }, quiet)).rejects.toThrow(/name a \.yaml or \.yml file/);
  });

  it('init, then run: the file as written exports the built-in sandbox (a child process, as a user types it)', () => {
    const work = mkdtempSync(join(dir, 'project-'));
    const init = spawnSync(process.execPath, [BIN, 'init'], { cwd: work, encoding: 'utf8' });
    expect(init.status, init.stderr).toBe(0);
    expect(init.stderr).toContain('wrote pipeline.yaml');
    const run = spawnSync(process.execPath, [BIN, 'run', 'pipeline.yaml', '--progress', 'none', '--json'], {
      cwd: work,
      encoding: 'utf8',
      env: { ...process.env, SCHOOL_API_TOKEN: '' },
    });
    expect(run.status, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout.trim().split('\n').pop()!) as { status: string; tables: Record<string, { rows: number }> };
    expect(summary.status).toBe('ok');
    expect(summary.tables.achievements!.rows).toBe(300);
    expect(existsSync(join(work, 'exports', '_manifests'))).toBe(true);
    expect(readdirSync(join(work, 'exports', 'achievements'))).toEqual(expect.arrayContaining(['region=uk']));
  });
});
