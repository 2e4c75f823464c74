import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * DuckDB's native binding is a runtime dependency of `warehouse load` only: the warehouse CLI
 * module and everything `warehouse sql`, `dbt` and `manifests` run import it lazily (await
 * import), so other commands, and installs without it, never load it. This follows the static
 * imports from src/cli/warehouse.ts and fails on any path that reaches @duckdb/node-api.
 */
const SRC = resolve(import.meta.dirname, '../../src');

function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  // `import type` and `import { type X }`-only lines are erased at runtime; dynamic import() is lazy.
  for (const m of text.matchAll(/^import\s+(?!type\s)([\s\S]*?)\s+from\s+'([^']+)';/gm)) {
    const names = m[1]!;
    if (
      /^\{[^}]*\}$/.test(names.trim()) &&
      names
        .replace(/[{}\s]/g, '')
        .split(',')
        .every((n) => n.startsWith('type'))
    )
      continue;
    out.push(m[2]!);
  }
  for (const m of text.matchAll(/^import\s+'([^']+)';/gm)) out.push(m[1]!);
  return out;
}

function chainsTo(target: string, entry: string): string[][] {
  const found: string[][] = [];
  const seen = new Set<string>();
  const walk = (file: string, path: string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of staticImports(file)) {
      if (spec === target) found.push([...path, spec]);
      else if (spec.startsWith('.')) walk(resolve(dirname(file), spec), [...path, spec]);
    }
  };
  walk(entry, [entry.slice(SRC.length + 1)]);
  return found;
}

describe('DuckDB is loaded lazily', () => {
  it('no static import chain leads from the warehouse CLI or its commands to @duckdb/node-api', () => {
    for (const entry of ['cli/warehouse.ts', 'warehouse/commands.ts', 'warehouse/dialects.ts', 'warehouse/dbt.ts']) {
      expect(chainsTo('@duckdb/node-api', resolve(SRC, entry)), entry).toEqual([]);
    }
  });

  it('tells a lazy import (duckdb-load.ts) from a static one (the test fixtures)', () => {
    const direct = readFileSync(resolve(SRC, 'warehouse/duckdb-load.ts'), 'utf8');
    expect(direct).toMatch(/await import\('@duckdb\/node-api'\)/);
    expect(staticImports(resolve(SRC, 'warehouse/duckdb-load.ts'))).not.toContain('@duckdb/node-api');
    expect(staticImports(resolve(import.meta.dirname, 'fixtures.ts'))).toContain('@duckdb/node-api');
  });
});
