import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.ts';
import { apiBaseUrl } from '../urls.ts';

/**
 * Where the API is and how we prove who we are: used by the run, discovery and access commands
 * alike, so it lives with configuration, not with any one command's argument parsing.
 */

/**
 * The token comes from a file or the environment, never from the command line (it would show in
 * the process list). The value is never logged.
 */
export function resolveToken(tokenFile: string | undefined, env = process.env): string {
  if (tokenFile) {
    let text: string;
    try {
      const st = statSync(tokenFile);
      if (!st.isFile()) throw new Error('not a file');
      text = readFileSync(tokenFile, 'utf8');
    } catch (e) {
      throw new ConfigError(`--token-file ${tokenFile}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    const token = text.trim();
    if (!token) throw new ConfigError(`--token-file ${tokenFile} is empty: put the access token in it`);
    if (/\s/.test(token)) throw new ConfigError(`--token-file ${tokenFile} holds more than one word: it must hold only the access token`);
    return token;
  }
  const token = env.SCHOOL_API_TOKEN?.trim();
  if (!token) throw new ConfigError('no access token: set SCHOOL_API_TOKEN or pass --token-file PATH');
  return token;
}

/** `--domain NAME=URL` values into a map; each URL must be http(s) with no path beyond '/'. */
export function parseDomains(values: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const eq = v.indexOf('=');
    if (eq <= 0) throw new ConfigError(`--domain ${v}: expected NAME=URL, e.g. --domain api-apac.example=https://proxy.internal:8443`);
    const name = v.slice(0, eq).trim().toLowerCase();
    const url = v.slice(eq + 1).trim();
    out[name] = normaliseBaseUrl(url, `--domain ${name}`);
  }
  return out;
}

/** The API's base URL as the client wants it (checked by the one URL module, src/urls.ts). */
export function normaliseBaseUrl(url: string, what: string): string {
  return apiBaseUrl(url, what);
}
