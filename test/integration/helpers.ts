import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveRunConfig, type RunConfig } from '../../src/config/resolve.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { runExport } from '../../src/pipeline/run.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { compileFlattener } from '../../src/flatten/index.ts';
import { tableSchemas } from '../../src/resources/index.ts';
import { selectResources } from '../../src/resources/index.ts';
import type { Row, TableSchema } from '../../src/table.ts';
import { stripMeta } from '../helpers/read-exports.ts';

/**
 * A fresh directory; cleanup removes it, and `siblingDb` (`<dir>.duckdb` beside it, a warehouse
 * kept outside the destination a load reads) with DuckDB's write-ahead log.
 */
export function tempDir(prefix = 'se-'): { dir: string; siblingDb: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const siblingDb = `${dir}.duckdb`;
  return {
    dir,
    siblingDb,
    cleanup: () => {
      rmSync(dir, { recursive: true, force: true });
      for (const f of [siblingDb, `${siblingDb}.wal`]) rmSync(f, { force: true });
    },
  };
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

/** The schools that approved the sandbox's full token, with their region codes (its /schools list). */
export async function approvedSchools(sb: Sandbox): Promise<{ id: string; region: string }[]> {
  const res = await fetch(`${sb.url}/v1.0/schools?per_page=1000`, { headers: { authorization: `Bearer ${sb.tokens.full}` } });
  const list = (await res.json()) as { data: { id: string; region: { code: string } }[] };
  return list.data.map((s) => ({ id: s.id, region: s.region.code }));
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

/** GET over HTTP from the school's own region, for resources the control API does not list. */
async function getFromSandbox(sb: Sandbox, path: string, regionUrl: string): Promise<unknown> {
  const res = await fetch(`${regionUrl}/v1.0${path}`, { headers: { authorization: `Bearer ${sb.tokens.full}` } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

/** What the export should hold now: the sandbox's current records, flattened the same way. */
export async function expectedState(sb: Sandbox, schoolIds: string[], regionOf: (id: string) => string): Promise<Map<string, Row[]>> {
  const out = new Map<string, Row[]>();
  for (const spec of selectResources(undefined, [])) {
    if (spec.name === 'deletions') continue;
    const flattener = compileFlattener(spec);
    for (const id of schoolIds) {
      const region = regionOf(id);
      const regionUrl = sb.regions.find((r) => r.code === region)!.url;
      let records: unknown[];
      if (spec.scope === 'discovery') records = [await getFromSandbox(sb, `/schools/${id}`, sb.url)];
      else if (spec.shape === 'object' || !spec.paginated) {
        const q = spec.query ? '?' + new URLSearchParams(spec.query).toString() : '';
        const body = (await getFromSandbox(sb, spec.path.replace('{school_id}', id) + q, regionUrl)) as { data: unknown };
        records = spec.shape === 'object' ? [body.data] : (body.data as unknown[]);
      } else records = sb.control.records(id, spec.name);
      const rows = flattener.flattenBatch(records, { schoolId: id, region, runId: 'x', extractedAt: new Date().toISOString() });
      for (const [table, list] of rows) out.set(table, [...(out.get(table) ?? []), ...list]);
    }
  }
  return out;
}

export function canonical(rows: Row[]): string[] {
  return rows.map((r) => JSON.stringify(stripMeta(r))).sort();
}
