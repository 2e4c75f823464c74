import { readFileSync } from 'node:fs';
import { packageFile } from '../config/package-root.ts';

/**
 * This package's own version, from its own package.json (config/package-root.ts). yargs' default
 * looks for the nearest package.json from the working directory up, which in a project that
 * installs us is the host project's.
 */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { name?: string; version?: string };
  if (pkg.name !== 'school-export' || !pkg.version) throw new Error(`${packageFile('package.json')} is not school-export's`);
  return pkg.version;
}
