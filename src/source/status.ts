import { ApiError, type ErrorCode, type ErrorContext } from '../errors.ts';
import { RetriableStatus, RETRIABLE_STATUS } from './retry.ts';

export interface RequestContext {
  school?: string;
  endpoint?: string;
}

/** "school A1, achievements: GET /v1.0/schools/A1/achievements?cursor=true" — no headers, ever. */
export function where(method: string, described: string, ctx?: RequestContext): string {
  const parts: string[] = [];
  if (ctx?.school) parts.push(`school ${ctx.school}`);
  if (ctx?.endpoint) parts.push(ctx.endpoint);
  const head = parts.length ? `${parts.join(', ')}: ` : '';
  return `${head}${method} ${described}`;
}

const FATAL: Record<number, { code: ErrorCode; text: string; fix: string }> = {
  400: {
    code: 'E_BAD_REQUEST',
    text: 'Bad Request',
    fix: 'the service refused the request as malformed; check the query parameters (dates, per_page, include names)',
  },
  401: { code: 'E_AUTH', text: 'Unauthorized', fix: 'the access token was rejected; check SCHOOL_API_TOKEN / --token-file' },
  403: {
    code: 'E_FORBIDDEN',
    text: 'Forbidden',
    fix: "the token lacks the scope for this endpoint at this school; enable the permission in the application's settings or leave this resource out (--resources)",
  },
  404: {
    code: 'E_NOT_FOUND',
    text: 'Not Found',
    fix: 'no such school or endpoint at this domain; check the school id, its region.domain (--domain) and --api-url',
  },
  422: { code: 'E_VALIDATION', text: 'Unprocessable Entity', fix: 'the service rejected the supplied data; fix what its message names' },
};

/**
 * The error for a non-2xx response. Retriable statuses come back as RetriableStatus (with the
 * Retry-After wait); the rest are fatal with a one-line message that says what to fix.
 */
export function statusError(
  status: number,
  at: string,
  serverMessage: string,
  retryAfterMs: number | undefined,
  retriable: (status: number) => boolean = (s) => RETRIABLE_STATUS.has(s),
  fields: ErrorContext = {},
): ApiError {
  const quoted = serverMessage ? ` (${serverMessage})` : '';
  if (retriable(status)) return new RetriableStatus(status, `${at} → ${status}${quoted}`, retryAfterMs).withContext(fields);
  if (RETRIABLE_STATUS.has(status)) {
    return new ApiError('E_HTTP_RETRIES', `${at} → ${status}${quoted}; not retried, as the request may already have been applied`, {
      ...fields,
      status,
      retriable: false,
    });
  }
  const known = FATAL[status];
  if (known)
    return new ApiError(known.code, `${at} → ${status} ${known.text}${quoted}: ${known.fix}`, { ...fields, status, retriable: false });
  return new ApiError('E_PROTOCOL', `${at} → unexpected status ${status}${quoted}`, { ...fields, status, retriable: false });
}

/** The structured fields of a request's errors: the school, and the endpoint (as the caller named it, else the path). */
export function fieldsOf(ctx: RequestContext | undefined, url: URL): ErrorContext {
  return { school: ctx?.school, endpoint: ctx?.endpoint ?? url.pathname };
}
