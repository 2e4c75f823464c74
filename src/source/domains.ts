import { ConfigError, ExportError } from '../errors.ts';
import { apiBaseUrl } from '../urls.ts';

const HOST_RE = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/i;

/**
 * The allowlist: which regional domains the token may be sent to, and where each is reached.
 * Only the API URL's host, the explicit domain map and the allowed hosts are known; anything
 * else is refused before a request is made.
 */
export class DomainTable {
  private readonly defaultBase: string;
  private readonly bases = new Map<string, string>();

  constructor(apiUrl: string, domains: Record<string, string> = {}, allowedHosts: string[] = []) {
    const api = apiBaseUrl(apiUrl, '--api-url');
    this.defaultBase = `${api}/v1.0`;
    this.bases.set(new URL(api).host.toLowerCase(), this.defaultBase);
    for (const host of allowedHosts) {
      if (!HOST_RE.test(host)) throw new ConfigError(`allowed host ${JSON.stringify(host)} is not a host name`);
      this.bases.set(host.toLowerCase(), `https://${host.toLowerCase()}/v1.0`);
    }
    // explicit mappings win over the https:// default of an allowed host
    for (const [name, url] of Object.entries(domains)) {
      if (!HOST_RE.test(name)) throw new ConfigError(`--domain name ${JSON.stringify(name)} is not a host name`);
      this.bases.set(name.toLowerCase(), `${apiBaseUrl(url, `--domain ${name}=`)}/v1.0`);
    }
  }

  isAllowed(domain?: string): boolean {
    return domain === undefined || domain === '' || this.bases.has(domain.toLowerCase());
  }

  baseFor(domain?: string): string {
    if (domain === undefined || domain === '') return this.defaultBase;
    const base = this.bases.get(domain.toLowerCase());
    if (base !== undefined) return base;
    const shown = JSON.stringify(String(domain).slice(0, 100));
    throw new ExportError(
      'E_DOMAIN_NOT_ALLOWED',
      `region domain ${shown} is not configured, so the token is not sent there; if it is genuine, add --domain ${String(domain).slice(0, 100)}=https://${String(domain).slice(0, 100)} or list it in the pipeline file's domains`,
    );
  }
}
