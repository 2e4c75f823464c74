import { ConfigError } from './errors.ts';

/**
 * The one place URLs given by a user are checked: the API URL and regional domains (config,
 * source), the S3 endpoint and the s3:// destination (sink). Every refusal is a ConfigError that
 * names the setting, never echoes credentials found in the URL, and says what to write instead.
 */
export interface UrlRule {
  /** The setting as the user wrote it: '--api-url', '--domain apac=', '--s3-endpoint', '--dest'. */
  what: string;
  /** Allowed schemes, with the colon: ['https:', 'http:']. */
  schemes: readonly string[];
  /** A correct value to show, e.g. 'https://api.example.com'. */
  example: string;
  /** Where credentials belong instead of the URL, e.g. 'SCHOOL_API_TOKEN or --token-file'. */
  credentialsGoTo: string;
}

/** Parses `value` by `rule`: a URL of an allowed scheme, without userinfo, query or fragment. */
export function checkedUrl(value: string, rule: UrlRule): URL {
  let u: URL;
  try {
    u = new URL(value.trim());
  } catch {
    // the value may hold a secret (user:password@): show it only when it has no '@'
    const shown = value.includes('@') ? '' : ` ${JSON.stringify(value.slice(0, 200))}`;
    throw new ConfigError(`${rule.what}${shown} is not a URL; write it as e.g. ${rule.example}`);
  }
  if (u.username || u.password) {
    throw new ConfigError(`${rule.what}: put credentials in ${rule.credentialsGoTo}, not in the URL`);
  }
  const shown = `${u.protocol}//${u.host}${u.pathname}`;
  if (!rule.schemes.includes(u.protocol)) {
    throw new ConfigError(`${rule.what} ${shown}: only ${rule.schemes.join(' or ')} URLs are supported, e.g. ${rule.example}`);
  }
  if (u.search || u.hash) throw new ConfigError(`${rule.what} ${shown}: remove the "?" or "#" part; write it as e.g. ${rule.example}`);
  return u;
}

const HTTP = ['https:', 'http:'] as const;

/**
 * The base of an HTTP API: origin plus path prefix (a proxy may mount the API below /), without
 * trailing slashes or a trailing /v1.0 (the client appends the version itself).
 */
export function apiBaseUrl(value: string, what: string): string {
  const u = checkedUrl(value, {
    what,
    schemes: HTTP,
    example: 'https://api.example.com',
    credentialsGoTo: 'SCHOOL_API_TOKEN or --token-file',
  });
  return u.origin + u.pathname.replace(/\/+$/, '').replace(/\/v1\.0$/i, '');
}

/** An S3-compatible endpoint: http(s), no credentials (the AWS credential chain holds those). */
export function s3EndpointUrl(value: string, what = '--s3-endpoint'): string {
  checkedUrl(value, {
    what,
    schemes: HTTP,
    example: 'https://minio.example.com:9000',
    credentialsGoTo: 'the AWS credential chain (env, profile)',
  });
  return value.trim();
}
