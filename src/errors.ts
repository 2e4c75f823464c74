/**
 * Errors with stable codes. Messages name what to fix; they never carry the access token
 * (redactSecrets is applied by the client before any message is built from a URL or header).
 */
export type ErrorCode =
  | 'E_CONFIG' // pipeline file / flag problem: exit 2
  | 'E_USAGE' // command-line usage: exit 2
  | 'E_AUTH' // 401: token invalid
  | 'E_FORBIDDEN' // 403: scope missing
  | 'E_NOT_FOUND' // 404
  | 'E_BAD_REQUEST' // 400
  | 'E_VALIDATION' // 422
  | 'E_HTTP_RETRIES' // retriable failure that outlasted the retry budget
  | 'E_PROTOCOL' // the API answered something the contract does not allow (bad JSON, repeated cursor)
  | 'E_DOMAIN_NOT_ALLOWED' // a school's region.domain is not configured: token never sent there
  | 'E_UNSAFE_ID' // an id or region code that is not safe as a path segment
  | 'E_SINK' // writing to the destination failed
  | 'E_STATE' // state or manifest unreadable
  | 'E_ABORTED';

export class ExportError extends Error {
  readonly code: ErrorCode;
  override readonly cause?: unknown;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message);
    this.name = 'ExportError';
    this.code = code;
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** Usage and configuration problems end the process with exit status 2. */
export class ConfigError extends ExportError {
  constructor(message: string) {
    super('E_CONFIG', message);
    this.name = 'ConfigError';
  }
}

/** HTTP failures from the API, classified once so retry logic and messages agree. */
export class ApiError extends ExportError {
  readonly status: number | undefined;
  readonly retriable: boolean;
  constructor(code: ErrorCode, message: string, opts: { status?: number; retriable: boolean; cause?: unknown }) {
    super(code, message, { cause: opts.cause });
    this.name = 'ApiError';
    this.status = opts.status;
    this.retriable = opts.retriable;
  }
}

export function isExportError(e: unknown): e is ExportError {
  return e instanceof ExportError;
}

/** One line for the user: the message, without a stack. */
export function oneLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.replace(/\s*\n\s*/g, ' ');
}
