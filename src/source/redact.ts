/**
 * Messages and events are built from a request's path and query only, never its headers. These
 * helpers are the second line of defence: a query parameter that looks like a credential, or the
 * token itself echoed back in a server's error body, is masked before it reaches any message.
 */
const SECRET_PARAM = /token|auth|secret|password|key|signature/i;

/** Path and query of a URL with credential-like parameter values masked. */
export function describeUrl(url: URL): string {
  if (!url.search) return url.pathname;
  const params = new URLSearchParams(url.search);
  for (const name of [...params.keys()]) {
    if (SECRET_PARAM.test(name)) params.set(name, '***');
  }
  return `${url.pathname}?${decodeURIComponent(params.toString())}`;
}

/** Removes every occurrence of the token(s) (and their Basic form) from text shown to a user. */
export function redactText(text: string, tokens: string | readonly (string | undefined)[]): string {
  let out = text;
  for (const token of typeof tokens === 'string' ? [tokens] : tokens) {
    if (token === undefined || token.length === 0) continue;
    out = out.split(token).join('***');
    const basic = Buffer.from(`${token}:`).toString('base64');
    out = out.split(basic).join('***');
  }
  return out.replace(/(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, '$1 ***');
}

/** One line of at most `max` characters, for a server message quoted in an error. */
export function snippet(text: string, tokens: string | readonly (string | undefined)[], max = 200): string {
  const line = redactText(text, tokens).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}
