import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The folders of src/ import each other only along the graph the README's Development section
 * draws: a new arrow (an import running back up the data flow) fails here until the README and
 * this list say why. errors.ts, ids.ts, table.ts, urls.ts, edit-distance.ts and group-by.ts are shared by everyone.
 */
const SHARED = new Set(['errors', 'ids', 'table', 'urls', 'edit-distance', 'group-by']);
const ALLOWED: Record<string, string[]> = {
  cli: [
    'config',
    'discovery',
    'format',
    'pipeline',
    'privacy',
    'report',
    'resources',
    'sandbox',
    'sink',
    'source',
    'status',
    'warehouse',
    'webhooks',
    'compact',
  ],
  compact: ['format', 'manifest', 'pipeline', 'sink', 'warehouse'],
  config: ['format', 'privacy', 'resources'],
  pipeline: [
    'config',
    'decode',
    'discovery',
    'encode',
    'flatten',
    'format',
    'manifest',
    'privacy',
    'resources',
    'sink',
    'source',
    'webhooks',
  ],
  encode: ['decode', 'flatten', 'format', 'resources'],
  source: ['decode'],
  flatten: ['resources', 'time'],
  format: ['time'],
  manifest: ['format', 'sink'],
  privacy: ['manifest', 'resources'],
  resources: ['privacy'],
  discovery: ['source'],
  status: ['manifest', 'privacy', 'sink'],
  report: ['manifest', 'privacy', 'sink', 'status'],
  warehouse: ['manifest', 'resources', 'sink'],
  webhooks: ['manifest', 'sink'],
};

const SRC = resolve(import.meta.dirname, '../../src');
const folderOf = (file: string): string => relative(SRC, file).split(sep)[0]!.replace(/\.ts$/, '');

function imports(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        const from = folderOf(p);
        for (const m of readFileSync(p, 'utf8').matchAll(/from\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g)) {
          const to = folderOf(resolve(dirname(p), m[1] ?? m[2]!));
          if (to !== from && !SHARED.has(to)) (out.get(from) ?? out.set(from, new Set()).get(from)!).add(to);
        }
      }
    }
  };
  walk(SRC);
  return out;
}

describe('the import graph', () => {
  it('every import between folders of src/ is an arrow the README draws', () => {
    const unexpected: string[] = [];
    for (const [from, tos] of imports()) for (const to of tos) if (!(ALLOWED[from] ?? []).includes(to)) unexpected.push(`${from} -> ${to}`);
    expect(unexpected).toEqual([]);
  });
});
