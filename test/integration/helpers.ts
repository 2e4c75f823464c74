import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveRunConfig, type RunConfig } from '../../src/config/resolve.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { runExport } from '../../src/pipeline/run.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { compileFlattener } from '../../src/flatten/index.ts';
import { tableSchemas } from '../../src/resources/index.ts';
import { selectResources } from '../../src/pipeline/plan.ts';
import type { Row, TableSchema } from '../../src/table.ts';
import { stripMeta } from '../helpers/read-exports.ts';

export function tempDir(prefix = 'se-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A run config pointed at a running sandbox (as a user would with --api-url and --domain). */
export function sandboxConfig(sb: Sandbox, dest: string, extra: PipelineConfig = {}): RunConfig {
  return resolveRunConfig(undefined, {
    api_url: sb.url,
    domains: sb.domains,
    dest,
    progress: 'none',
    ...extra,
  });
}

export async function exportOnce(sb: Sandbox, dest: string, extra: PipelineConfig = {}) {
  return runExport(sandboxConfig(sb, dest, extra), { token: sb.tokens.full });
}

/** Every table's schema, with the resource it belongs to and its parent link for child tables. */
export function allSchemas(): Map<string, { schema: TableSchema; resource: string; parent?: { table: string; key: string } }> {
  const out = new Map<string, { schema: TableSchema; resource: string; parent?: { table: string; key: string } }>();
  for (const spec of selectResources(undefined, [])) {
    const [parent, ...children] = tableSchemas(spec);
    out.set(parent!.name, { schema: parent!, resource: spec.name });
    for (const c of children) {
      const child = spec.children!.find((ch) => ch.table === c.name)!;
      out.set(c.name, { schema: c, resource: spec.name, parent: { table: parent!.name, key: child.parentKey } });
    }
  }
  return out;
}

/** What the export should hold now: the sandbox's current records, flattened the same way. */
export async function expectedState(sb: Sandbox, schoolIds: string[], regionOf: (id: string) => string): Promise<Map<string, Row[]>> {
  const out = new Map<string, Row[]>();
  for (const spec of selectResources(undefined, [])) {
    if (spec.name === 'deletions') continue;
    const flattener = compileFlattener(spec);
    for (const id of schoolIds) {
      const records = await sb.control.records(id, spec.name);
      const rows = flattener.flattenBatch(records, { schoolId: id, region: regionOf(id), runId: 'x', extractedAt: new Date().toISOString() });
      for (const [table, list] of rows) out.set(table, [...(out.get(table) ?? []), ...list]);
    }
  }
  return out;
}

export function canonical(rows: Row[]): string[] {
  return rows.map((r) => JSON.stringify(stripMeta(r))).sort();
}
