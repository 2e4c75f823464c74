import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../errors.ts';
import { checkedUrl } from '../urls.ts';

/** Where a sink writes, as its registry entry (sink/registry.ts) parsed it from --dest. */
export type Dest = { kind: 'local'; dir: string } | { kind: 's3'; bucket: string; prefix: string };

/** 'DIR' or 'file:///abs/dir'. */
export function localDest(d: string, scheme: string | undefined): Dest {
  if (scheme === undefined) return { kind: 'local', dir: path.resolve(d) };
  try {
    return { kind: 'local', dir: fileURLToPath(d) };
  } catch {
    throw new ConfigError(`--dest ${d}: not a local file URL; write it as file:///absolute/dir`);
  }
}

// S3 bucket naming rules (lowercase; no underscores; 3-63 characters).
const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX_SEGMENT_RE = /^[^\u0000-\u001f\u007f\\]+$/;

/** 's3://bucket/prefix'. */
export function s3Dest(d: string): Dest {
  const url = checkedUrl(d, {
    what: '--dest',
    schemes: ['s3:'],
    example: 's3://bucket/prefix',
    credentialsGoTo: 'the AWS credential chain (env, profile)',
  });
  const shown = `s3://${url.host}${url.pathname}`;
  const bucket = url.host;
  if (!BUCKET_RE.test(bucket)) {
    throw new ConfigError(`--dest ${shown}: "${bucket}" is not a valid bucket name (3-63 lowercase letters, digits, "." or "-")`);
  }
  let prefix: string;
  try {
    prefix = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
  } catch {
    throw new ConfigError(`--dest ${shown}: the key prefix has a malformed %-escape`);
  }
  if (prefix !== '') {
    for (const seg of prefix.split('/')) {
      if (seg === '' || seg === '.' || seg === '..' || !PREFIX_SEGMENT_RE.test(seg)) {
        throw new ConfigError(`--dest ${shown}: the key prefix "${prefix}" has an empty, "." or ".." segment or a control character`);
      }
    }
  }
  return { kind: 's3', bucket, prefix };
}
