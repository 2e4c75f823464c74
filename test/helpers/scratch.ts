import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * One temporary directory for a test file, removed after the file's tests; `sub()` makes a fresh
 * directory inside it. Call at the file's top level (it registers an afterAll hook).
 */
export function scratch(prefix: string): { root: string; sub: (name?: string) => string } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  return { root, sub: (name = 'd-') => mkdtempSync(join(root, name)) };
}
