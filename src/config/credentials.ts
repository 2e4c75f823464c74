import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.ts';
import { apiBaseUrl } from '../urls.ts';

/**
 * Where the API is and how we prove who we are: used by the run, discovery and access commands
 * alike, so it lives with configuration, not with any one command's argument parsing.
 */

/**
 * Reads a one-word secret (an access token, a webhook secret) from a file: the one place that
 * checks it is a readable regular file holding exactly one word, and warns when other users can
 * read it. `flag` names the option in messages ("--token-file"); the value never appears in one.
 */
export function readSecretFile(path: string, flag: string, o: { emptyHint?: string; warn?: (message: string) => void } = {}): string {
  let text: string;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a file');
    if (st.mode & 0o077) o.warn?.(`${flag} ${path} is readable by other users: chmod 600 it`);
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`${flag} ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const secret = text.trim();
  if (!secret) throw new ConfigError(`${flag} ${path} is empty${o.emptyHint ? `: ${o.emptyHint}` : ''}`);
  if (/\s/.test(secret)) throw new ConfigError(`${flag} ${path} holds more than one word (or line): it must hold only the secret`);
  return secret;
}

/**
 * The token comes from a file or the environment, never from the command line (it would show in
 * the process list). The value is never logged.
 */
export function resolveToken(tokenFile: string | undefined, env: NodeJS.ProcessEnv = process.env, warn?: (m: string) => void): string {
  if (tokenFile) return readSecretFile(tokenFile, '--token-file', { emptyHint: 'put the access token in it', warn });
  const raw = env.SCHOOL_API_TOKEN;
  const token = raw?.trim();
  if (!token) throw new ConfigError('no access token: set SCHOOL_API_TOKEN or pass --token-file PATH');
  // a token pasted with a line break (or two lines) is not "missing": say what is wrong with it
  if (/[\r\n]/.test(token))
    throw new ConfigError(
      'SCHOOL_API_TOKEN holds a line break: it must hold only the token (or use --token-file PATH, whose final newline is ignored)',
    );
  if (/\s/.test(token)) throw new ConfigError('SCHOOL_API_TOKEN holds a space: it must hold only the token');
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
