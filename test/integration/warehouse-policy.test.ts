import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { dump, runStaticScript } from '../warehouse/fixtures.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * A loader can refuse data that was not minimised: runs record the personal-data policy they
 * applied in their manifest, and `--require-pseudonymised` (warehouse load, and the static
 * script rendered with it) loads nothing when a pending run did not pseudonymise person ids.
 */
const STRICT: PipelineConfig['personal_data'] = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop' };

describe('--require-pseudonymised', () => {
  let sb: Sandbox;
  const tmp = tempDir('wh-policy-');
  const dest = join(tmp.dir, 'exports');
  const keyFile = join(tmp.dir, 'key');

  beforeAll(async () => {
    writeFileSync(keyFile, 'a pseudonymisation key for the warehouse policy test, 32+ bytes long', { mode: 0o600 });
    sb = await startSandbox({ seed: 43, schools: 2, achievementsPerSchool: 30 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('loads pseudonymised runs and refuses, with one line naming it, a run that kept person ids', async () => {
    const cfg = (extra: PipelineConfig) => sandboxConfig(sb, dest, { format: 'parquet', resources: ['achievements'], ...extra });
    const minimised = await runExport(cfg({ personal_data: STRICT, pseudonymise_key_file: keyFile }), { token: sb.tokens.full });
    expect(minimised.failures).toEqual([]);
    const db = { load: join(tmp.dir, 'load.duckdb'), script: join(tmp.dir, 'script.duckdb') };
    await warehouseLoad({ dest, into: `duckdb:${db.load}`, requirePseudonymised: true });
    await runStaticScript(dest, db.script, builtinTables(), { requirePseudonymised: true });

    // the destination keeps its policy: a run keeping person ids has to say it means to
    const kept = await runExport({ ...cfg({ full_refresh: true }), personalDataChange: true }, { token: sb.tokens.full });
    expect(kept.failures).toEqual([]);
    const refusal = new RegExp(`^[^\\n]*run ${kept.runId} was not pseudonymised[^\\n]*nothing was loaded`);
    await expect(warehouseLoad({ dest, into: `duckdb:${db.load}`, requirePseudonymised: true })).rejects.toMatchObject({
      code: 'E_POLICY',
      message: expect.stringMatching(refusal),
    });
    await expect(runStaticScript(dest, db.script, builtinTables(), { requirePseudonymised: true })).rejects.toThrow(refusal);
    for (const path of [db.load, db.script]) {
      expect(await dump(path, 'SELECT DISTINCT run_id FROM _school_export_tasks')).toEqual([{ run_id: minimised.runId }]);
    }
  });
});
