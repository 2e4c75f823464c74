import type { RunConfig } from '../config/resolve.ts';
import { resolveToken } from '../config/credentials.ts';

/** A run's API, ready: its config pointed at it, the token to present, and how to let it go. */
export interface OpenedSource {
  cfg: RunConfig;
  token: string;
  close(): Promise<void>;
}

/**
 * The command edge of a run: the built-in sandbox starts here (the embedded default, so
 * `npm start` exports something real with no token and no network), and the token of a real
 * service is resolved here, so the pipeline only ever sees an API URL and a token.
 */
export async function openSource(cfg: RunConfig): Promise<OpenedSource> {
  const source = cfg.source;
  if (source.kind === 'api') return { cfg, token: resolveToken(source.tokenFile), close: async () => {} };
  const { startSandbox } = await import('../sandbox/index.ts');
  const sb = await startSandbox({
    seed: source.seed,
    schools: source.schools,
    achievementsPerSchool: source.achievementsPerSchool,
    rowsPerSchool: source.rowsPerSchool,
    maxPerPage: source.maxPerPage,
  });
  const api: RunConfig['source'] = { kind: 'api', apiUrl: sb.url, domains: sb.domains, auth: 'bearer' };
  return { cfg: { ...cfg, source: api }, token: sb.tokens.full, close: () => sb.close() };
}
