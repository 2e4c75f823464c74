import { ExportError, type ErrorContext } from '../errors.ts';

export type PaginationMode = 'cursor' | 'offset';

interface PaginationObject {
  next?: unknown;
  more?: unknown;
}

/**
 * Walks `meta.pagination.next` links (a strategy in the Singer SDK sense): stops at the end,
 * refuses a link to another origin (the token would follow it) and fails on a repeated cursor
 * or link, which would otherwise loop forever.
 */
export class PageLinks {
  private readonly origin: string;
  private readonly seenUrls = new Set<string>();
  private readonly seenCursors = new Set<string>();

  constructor(
    first: URL,
    private readonly where: string,
    private readonly fields: ErrorContext = {},
  ) {
    this.origin = first.origin;
    this.seenUrls.add(first.href);
  }

  /** The next page's URL, or undefined when this was the last page. */
  next(pagination: unknown, current: URL): URL | undefined {
    if (pagination === null || typeof pagination !== 'object') return undefined;
    const p = pagination as PaginationObject;
    if (p.more === false || typeof p.next !== 'string' || p.next === '') return undefined;
    let url: URL;
    try {
      url = new URL(p.next, current);
    } catch {
      throw this.protocol(`meta.pagination.next is not a URL`);
    }
    if (url.origin !== this.origin) {
      throw this.protocol(`meta.pagination.next points to another origin (${url.host}); refusing to send the token there`);
    }
    const cursor = url.searchParams.get('cursor');
    if (cursor !== null && cursor !== 'true') {
      if (this.seenCursors.has(cursor)) throw this.protocol('the service repeated a pagination cursor (the walk would loop)');
      this.seenCursors.add(cursor);
    }
    if (this.seenUrls.has(url.href)) throw this.protocol('the service repeated a next-page URL (the walk would loop)');
    this.seenUrls.add(url.href);
    return url;
  }

  private protocol(what: string): ExportError {
    return new ExportError('E_PROTOCOL', `${this.where}: ${what}`, this.fields);
  }
}
