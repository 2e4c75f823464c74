import type { Argv } from 'yargs';
export { normaliseBaseUrl, parseDomains, resolveToken } from '../config/credentials.ts';

/** Options every command that talks to the API shares. */
export interface ApiArgs {
  'api-url'?: string;
  'token-file'?: string;
  domain?: string[];
  auth?: 'bearer' | 'basic';
}

export function withApiOptions<T>(y: Argv<T>): Argv<T & ApiArgs> {
  return y
    .option('api-url', { type: 'string', describe: 'base URL of the default (discovery) domain; /v1.0/... is appended' })
    .option('token-file', { type: 'string', describe: 'file holding the access token (default: $SCHOOL_API_TOKEN)' })
    .option('domain', {
      type: 'string',
      array: true,
      describe:
        'NAME=URL: where to reach a regional domain named in region.domain (repeatable); the token is sent only to configured domains',
    })
    .option('auth', { choices: ['bearer', 'basic'] as const, describe: 'how the token is presented (default bearer)' }) as Argv<
    T & ApiArgs
  >;
}

/** Human output on a TTY, NDJSON when piped or with --json. */
export function wantsJson(flag: boolean | undefined, stream: NodeJS.WriteStream = process.stdout): boolean {
  return Boolean(flag) || !stream.isTTY;
}
