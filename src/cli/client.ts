import { normaliseBaseUrl, parseDomains, resolveToken } from '../config/credentials.ts';
import { envSetting } from '../config/env.ts';
import { ConfigError } from '../errors.ts';
import { ApiClient } from '../source/client.ts';
import type { ApiArgs } from './common.ts';

/** The API client of the discovery and access commands, from their flags, then SCHOOL_EXPORT_* variables. */
/** The API options with the environment's filling what flags leave out (flags win). */
export function apiSettings(
  a: ApiArgs,
  env: NodeJS.ProcessEnv = process.env,
): { apiUrl: string; domains: Record<string, string>; auth?: 'bearer' | 'basic'; tokenFile?: string } {
  const apiUrl = a['api-url'] ?? envSetting(env, 'api_url');
  if (!apiUrl)
    throw new ConfigError(
      'pass --api-url URL (or set SCHOOL_EXPORT_API_URL): the base of the default (discovery) domain, e.g. https://api.example.com',
      'E_USAGE',
    );
  const envDomains = envSetting(env, 'domains');
  const auth = a.auth ?? envSetting(env, 'auth');
  if (auth !== undefined && auth !== 'bearer' && auth !== 'basic')
    throw new ConfigError(`SCHOOL_EXPORT_AUTH=${auth}: expected one of bearer, basic`);
  return {
    apiUrl: normaliseBaseUrl(apiUrl, a['api-url'] ? '--api-url' : 'SCHOOL_EXPORT_API_URL'),
    domains: { ...parseDomains(envDomains?.split(',').filter((s) => s.trim())), ...parseDomains(a.domain) },
    auth,
    tokenFile: a['token-file'] ?? envSetting(env, 'token_file'),
  };
}

export function clientFromArgs(a: ApiArgs, env: NodeJS.ProcessEnv = process.env): ApiClient {
  const s = apiSettings(a, env);
  return new ApiClient({ apiUrl: s.apiUrl, token: resolveToken(s.tokenFile, env), auth: s.auth, domains: s.domains });
}

/** The configured regional domain names (flags and SCHOOL_EXPORT_DOMAINS), tried when the default domain does not know a school. */
export function regionalDomains(a: ApiArgs, env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.keys(apiSettings(a, env).domains);
}
