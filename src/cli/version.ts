import { readFileSync } from 'node:fs';

/**
 * This package's own version, from its own package.json: src/cli and dist/cli both sit two levels
 * below the package root. yargs' default looks for the nearest package.json from the working
 * directory up, which in a project that installs us is the host project's.
 */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name?: string; version?: string };
  if (pkg.name !== 'school-export' || !pkg.version) throw new Error(`package.json beside ${import.meta.url} is not school-export's`);
  return pkg.version;
}
