/**
 * Replays the request shapes of the official PHP client (wondeltd/php-client 3.1.x, as issue 15
 * ran it: unmodified, on Guzzle) against the sandbox, so what that client needs stays true
 * without PHP in CI. Shapes are taken from the client's source:
 *
 * - src/Endpoints/BootstrapEndpoint.php (3.1.x, with getWithMeta/deleteRequestReturnBody/logPath;
 *   read at commit 5e2856c3 where src/Client.php says version 3.1.1):
 *   base `https://{domain}/v1.0/` with `$domain = 'api.wonde.com'` unless updateDomain() was
 *   called; headers `Authorization: Basic base64(token + ':')` and
 *   `User-Agent: wonde-php-client-<version>`; all() sends `$uri . '?' . http_build_query($parameters)`
 *   with `include` appended last as implode(',', $includes); get() reads `->data` of the item
 *   response; post() sends `json_encode($body)` with `Content-Type: application/json`;
 *   deleteRequestReturnBody() sends DELETE without a body and decodes the answer.
 * - src/ResultIterator.php: follows `meta->pagination->next` as given (an absolute URL).
 * - src/Client.php: requestAccess($id, $payload = []) POSTs `[]` (json_encode of PHP's empty
 *   array) and revokeAccess DELETEs, both on a BootstrapEndpoint, i.e. the default domain,
 *   whatever the school's region (tests/MiscEndPointsRegionalDomainTest.php calls them so after
 *   updateDomain()).
 * - Endpoint URIs end in a slash: 'schools/', 'schools/pending/', 'schools/all/' (search),
 *   'meta/schools/', 'achievements/', 'achievements/attributes/', 'assessment/aspects/',
 *   'deletions/', 'students/' ... (src/Endpoints/*.php).
 * - Guzzle's curl handler sends no Accept-Encoding unless one is configured (it blanks the one
 *   curl would add for decode_content), so responses come uncompressed.
 *
 * The client reaches the sandbox as through a TLS-terminating proxy: requests go to the
 * listener of the domain with `Host: <domain>` (and `X-Forwarded-Proto: https`, or, as many
 * proxies do, without it), and every URL the client is given (next) must come back on
 * `https://<domain>/`. Issue 20 added: meta, permissions and ACL of another region's school at
 * the default domain, the attribute item route, and POST answers the client reads `->id` from.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { call, type RawResponse } from './helpers.ts';

const VERSION = '3.1.4';

/** PHP's http_build_query (PHP_QUERY_RFC1738): urlencode() each key and value, true → 1. */
function httpBuildQuery(params: Record<string, string | number | boolean>): string {
  const enc = (v: string) =>
    encodeURIComponent(v)
      .replace(/[!'()*~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
      .replace(/%20/g, '+');
  return Object.entries(params)
    .map(([k, v]) => `${enc(k)}=${enc(typeof v === 'boolean' ? (v ? '1' : '0') : String(v))}`)
    .join('&');
}

interface Sent {
  method: string;
  url: string;
  body?: string;
}

/** The PHP client's HTTP behaviour, reduced to what it puts on the wire and what it reads back. */
class PhpClientShapes {
  readonly sent: Sent[] = [];
  constructor(
    private readonly sb: Sandbox,
    private readonly token: string,
    readonly defaultDomain = 'api.sandbox.test',
    /** Whether the TLS-terminating proxy in front adds X-Forwarded-Proto (many do not). */
    private readonly forwardedProto = true,
  ) {}

  private async send(method: string, url: string, body?: string): Promise<RawResponse> {
    const u = new URL(url);
    expect(u.protocol, `the client was handed ${url}`).toBe('https:');
    const listener = this.sb.domains[u.hostname];
    expect(listener, `no sandbox listener for ${u.hostname}`).toBeDefined();
    this.sent.push({ method, url, body });
    const headers: Record<string, string> = {
      host: u.host,
      ...(this.forwardedProto ? { 'x-forwarded-proto': 'https' } : {}),
      'user-agent': `wonde-php-client-${VERSION}`,
    };
    const r = await call(listener + u.pathname + u.search, {
      method,
      auth: 'Basic ' + Buffer.from(this.token + ':').toString('base64'),
      headers,
      body,
    });
    if (r.status >= 400) throw new Error(`${method} ${url}: ${r.status} ${r.text}`);
    return r;
  }

  endpoint(domain = this.defaultDomain): string {
    return `https://${domain}/v1.0/`;
  }

  /** BootstrapEndpoint::all + ResultIterator: every row, following next. */
  async all(uri: string, includes: string[] = [], parameters: Record<string, string | number | boolean> = {}, domain?: string) {
    const params = { ...parameters };
    if (includes.length) params.include = includes.join(',');
    const q = Object.keys(params).length ? uri + '?' + httpBuildQuery(params) : uri;
    let decoded = (await this.send('GET', this.endpoint(domain) + q)).json;
    const rows: any[] = [...decoded.data];
    while (decoded.meta?.pagination?.next) {
      decoded = (await this.send('GET', decoded.meta.pagination.next)).json;
      if (!decoded.data.length) break;
      rows.push(...decoded.data);
    }
    return rows;
  }

  /** BootstrapEndpoint::get: `$decoded->data`. */
  async get(uri: string, id: string, domain?: string): Promise<any> {
    return (await this.send('GET', this.endpoint(domain) + uri + id)).json.data;
  }

  /** BootstrapEndpoint::post: json_encode($body), Content-Type: application/json. */
  async post(uri: string, body: unknown, domain?: string): Promise<any> {
    return (await this.send('POST', this.endpoint(domain) + uri, JSON.stringify(body))).json;
  }

  /** BootstrapEndpoint::deleteRequestReturnBody. */
  async delete(uri: string, domain?: string): Promise<any> {
    return (await this.send('DELETE', this.endpoint(domain) + uri)).json;
  }
}

let sb: Sandbox;
beforeEach(async () => {
  // itemEnvelope 'data': BootstrapEndpoint::get reads ->data of item responses.
  sb = await startSandbox({ itemEnvelope: 'data', achievementsPerSchool: 130 });
});
afterEach(() => sb.close());

describe('the official PHP client request shapes', () => {
  it('discovery, meta, school endpoints at the regional domain, writes and access calls all work', async () => {
    const php = new PhpClientShapes(sb, sb.tokens.full);
    const apac = 'api-apac.sandbox.test';

    // $client->schools->all(), ->pending(), ->audited(), ->search([], ['postcode' => ...]), paginated lists
    expect((await php.all('schools/')).map((s) => s.id)).toEqual(['A1001', 'A1002', 'A1003', 'A1004', 'A1005', 'A1006']);
    expect((await php.all('schools/', [], { per_page: 4 })).length).toBe(6);
    expect((await php.all('schools/pending/')).map((s) => s.id)).toEqual(['A9001', 'A9002']);
    expect((await php.all('schools/audited/')).map((s) => s.id)).toEqual(['A1001', 'A1003', 'A1005']);
    expect((await php.all('schools/all/', [], { postcode: 'LS1 0' })).map((s) => s.id)).toEqual(['A1001']);

    // $client->schools->get($id); $school->updateDomain($school->region->domain)
    const school = await php.get('schools/', 'A1002');
    expect(school.region.domain).toBe(apac);
    // $client->meta->get($id) (a BootstrapEndpoint: the default domain) for another region's school answers
    // there, as the access calls do; at the school's own domain too.
    expect((await php.get('meta/schools/', 'A1002')).approved).toBe(true);
    expect((await php.get('meta/schools/', 'A1001')).approved).toBe(true);
    expect((await php.get('meta/schools/', 'A1002', apac)).approved).toBe(true);
    // Meta::get('A1002/permissions') and the ACL: $decoded->data of a list-shaped meta response
    expect((await php.get('meta/schools/', 'A1002/permissions')).map((p: any) => p.identity)).toContain('achievements.read');
    expect((await php.get('meta/schools/', 'A1002/acl?with_user_type=1')).ids).toBeDefined();

    const s = 'schools/A1002/';
    const since = { updated_after: '2024-01-01 00:00:00', per_page: 50, cursor: true };
    const achievements = await php.all(s + 'achievements/', ['students', 'employees'], since, apac);
    expect(achievements).toHaveLength(130);
    expect(achievements[0].students.data).toBeDefined();
    const offset = await php.all(s + 'achievements/', [], { per_page: 50 }, apac);
    expect(offset.map((a) => a.id)).toEqual(achievements.map((a) => a.id));
    expect((await php.get(s + 'achievements/', achievements[5].id, apac)).id).toBe(achievements[5].id);
    const attributes = await php.all(s + 'achievements/attributes/', [], {}, apac);
    expect(attributes.length).toBe(15);
    // $school->achievementsAttributes->get($id): GET achievements/attributes/{id}, ->data
    expect(await php.get(s + 'achievements/attributes/', attributes[4].id, apac)).toEqual(attributes[4]);
    expect((await php.all(s + 'assessment/aspects/', ['templates'], {}, apac))[0].templates.data).toHaveLength(3);
    expect((await php.all(s + 'assessment/results/', [], {}, apac)).length).toBe(240);
    expect((await php.all(s + 'assessment/resultsets/', [], {}, apac)).length).toBe(6);
    expect((await php.all(s + 'deletions/', [], { type: 'student', updated_after: '2024-01-01 00:00:00' }, apac)).length).toBe(1);
    for (const r of ['students', 'employees', 'contacts', 'groups', 'classes']) {
      expect((await php.all(`${s}${r}/`, [], {}, apac)).length, r).toBe(sb.control.records('A1002', r).length);
    }

    // $school->achievements->create($array) / ->delete($id)
    const created = await php.post(
      s + 'achievements/',
      {
        students: [
          {
            student_id: achievements[0].students.data[0]?.id ?? sb.control.records('A1002', 'students')[0]!.id,
            points: 2,
            award: 'CERT',
            award_date: '2024-04-05',
          },
        ],
        employee_id: sb.control.records('A1002', 'employees')[0]!.id,
        date: '2024-04-04',
        type: 'HW',
        comment: 'A4',
        activity_type: 'MA',
      },
      apac,
    );
    // post() returns the decoded body itself: the created achievement, with its id, in either envelope mode.
    expect(created).toMatchObject({
      id: expect.stringMatching(/^A\d+$/),
      type: 'Homework',
      comment: 'A4',
      subject: 'Maths',
      action: 'Certificate',
    });
    expect(await php.get(s + 'achievements/', created.id, apac)).toMatchObject({ id: created.id, comment: 'A4' });
    expect(await php.delete(`${s}achievements/${created.id}`, apac)).toEqual({ success: true, id: created.id });

    // $client->revokeAccess($id) / ->requestAccess($id): default domain, body [] for no contacts
    expect(await php.delete('schools/A1002/revoke-access')).toMatchObject({ success: true, state: 'revoked' });
    expect(await php.post('schools/A1002/request-access', [])).toMatchObject({ success: true, state: 'pending' });

    // What went over the wire is what the PHP client sends: trailing slashes, RFC 1738 queries, include last.
    const log = sb.control.requests().map((r) => `${r.method} ${r.region} ${r.path}`);
    expect(log).toContain('GET uk /v1.0/schools/');
    expect(log).toContain('GET uk /v1.0/schools/all/?postcode=LS1+0');
    expect(log).toContain(
      'GET apac /v1.0/schools/A1002/achievements/?updated_after=2024-01-01+00%3A00%3A00&per_page=50&cursor=1&include=students%2Cemployees',
    );
    expect(log).toContain('POST uk /v1.0/schools/A1002/request-access');
    expect(php.sent.find((x) => x.url.endsWith('/request-access'))!.body).toBe('[]');
    // Every URL the client was handed stayed on the https domain it used (checked in send()).
    expect(php.sent.filter((x) => x.url.includes('cursor=c2.')).length).toBeGreaterThan(0);
  });

  it('stays on https behind a TLS-terminating proxy that sends no X-Forwarded-Proto', async () => {
    const php = new PhpClientShapes(sb, sb.tokens.full, 'api.sandbox.test', false);
    const apac = 'api-apac.sandbox.test';
    // ResultIterator follows next as given: every URL it is handed must be https (checked in send()).
    const rows = await php.all('schools/A1002/achievements/', [], { per_page: 50, cursor: true }, apac);
    expect(rows).toHaveLength(130);
    expect(await php.all('schools/', [], { per_page: 2 })).toHaveLength(6);
    expect(php.sent.filter((x) => x.url.includes('cursor=c2.') || x.url.includes('page=')).length).toBeGreaterThan(3);
  });

  it('fails on bare item responses, which is why itemEnvelope exists', async () => {
    sb.control.setItemEnvelope('bare');
    const php = new PhpClientShapes(sb, sb.tokens.full);
    expect(await php.get('schools/', 'A1001')).toBeUndefined(); // $decoded->data of a bare School
  });
});
