import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * This package's root directory, found from this module's own file, never from the working
 * directory (installed into a project, that is the host project's). This module runs from one of
 * three places, each two folders below the root: src/config/ (tsx), dist/config/ (tsc) and
 * dist/bundle/ (esbuild's bundle of dist/, bin/prepare.js), so `../..` from here is the root in
 * all three. Paths to files the package ships (package.json, schema/, pipelines/) are made from
 * it; src/webhooks/child-run.ts, which may not import config/ (the README's import graph), finds
 * bin/ by the same rule itself.
 */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A file the package ships, by its path from the package root: packageFile('schema', 'pipeline.schema.json'). */
export function packageFile(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}
