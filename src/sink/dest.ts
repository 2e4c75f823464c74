import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../errors.ts';

export type Dest = { kind: 'local'; dir: string } | { kind: 's3'; bucket: string; prefix: string };

// S3 bucket naming rules (lowercase; no underscores; 3-63 characters).
const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX_SEGMENT_RE = /^[^\u0000-\u001f\u007f\\]+$/;

/** 'DIR' | 'file:///abs/dir' | 's3://bucket/prefix' → where to write; anything else is a ConfigError naming the fix. */
export function parseDest(dest: string): Dest {
  const d = dest.trim();
  if (d === '') throw new ConfigError('--dest is empty: give a directory, file:///abs/dir or s3://bucket/prefix');
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(d)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: 'local', dir: path.resolve(d) };
  if (scheme === 'file') return { kind: 'local', dir: fileDir(d) };
  if (scheme === 's3') return s3Dest(d);
  throw new ConfigError(`--dest ${d}: unsupported scheme "${scheme}://"; use a directory, file:///abs/dir or s3://bucket/prefix`);
}

function fileDir(d: string): string {
  try {
    return fileURLToPath(d);
  } catch {
    throw new ConfigError(`--dest ${d}: not a local file URL; write it as file:///absolute/dir`);
  }
}

function s3Dest(d: string): Dest {
  let url: URL;
  try {
    url = new URL(d);
  } catch {
    throw new ConfigError(`--dest ${d}: not a valid URL; write it as s3://bucket/prefix`);
  }
  // Never echo userinfo back: it may hold a secret.
  if (url.username || url.password)
    throw new ConfigError('--dest: credentials do not belong in the s3:// URL; use the AWS credential chain (env, profile)');
  const shown = `s3://${url.host}${url.pathname}`;
  if (url.search || url.hash) throw new ConfigError(`--dest ${shown}: remove the "?" or "#" part; write it as s3://bucket/prefix`);
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
