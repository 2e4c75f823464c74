/**
 * Human output for discovery: a fixed-width table (so rows print as pages arrive, without holding
 * the list), and the `schools show` report. Every value comes from the API and goes to a terminal,
 * so control and bidi-override characters are neutralised before printing.
 */
export interface SchoolSummary {
  id: string;
  name: string;
  la_code: string;
  establishment_number: string;
  urn: string;
  region: string;
  domain: string;
}

/** API objects read field by field, where a missing or null field is simply shown as empty. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- optional chaining through JSON of unshown shape
export type LooseJson = Record<string, any>;

const text = (v: unknown): string => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function schoolSummary(school: unknown): SchoolSummary {
  const s = (school ?? {}) as LooseJson;
  return {
    id: text(s.id),
    name: text(s.name),
    la_code: text(s.la_code),
    establishment_number: text(s.establishment_number),
    urn: text(s.urn),
    region: text(s.region?.code),
    domain: text(s.region?.domain),
  };
}

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
export function terminalSafe(s: string): string {
  return s.replace(UNSAFE, (c) => (c === '\n' || c === '\r' || c === '\t' ? ' ' : '\uFFFD'));
}

function charWidth(cp: number): number {
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0xfe00 && cp <= 0xfe0f) || cp === 0x200d) return 0; // combining, variation selectors, ZWJ
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  ) {
    return 2;
  }
  return 1;
}

export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += charWidth(ch.codePointAt(0)!);
  return w;
}

/** Pads or cuts (with an ellipsis) to exactly `width` terminal columns. */
export function fit(s: string, width: number): string {
  const safe = terminalSafe(s);
  if (displayWidth(safe) <= width) return safe + ' '.repeat(width - displayWidth(safe));
  let out = '';
  let w = 0;
  for (const ch of safe) {
    const cw = charWidth(ch.codePointAt(0)!);
    if (w + cw > width - 1) break;
    out += ch;
    w += cw;
  }
  return out + '…' + ' '.repeat(width - 1 - w);
}

const COLUMNS: { key: keyof SchoolSummary; title: string; width: number }[] = [
  { key: 'id', title: 'ID', width: 12 },
  { key: 'name', title: 'NAME', width: 36 },
  { key: 'la_code', title: 'LA', width: 5 },
  { key: 'establishment_number', title: 'EST', width: 6 },
  { key: 'urn', title: 'URN', width: 8 },
  { key: 'region', title: 'REGION', width: 7 },
  { key: 'domain', title: 'DOMAIN', width: 28 },
];

export function tableHeader(): string {
  return COLUMNS.map((c) => fit(c.title, c.width))
    .join('  ')
    .trimEnd();
}

export function tableRow(s: SchoolSummary): string {
  return COLUMNS.map((c) => fit(s[c.key], c.width))
    .join('  ')
    .trimEnd();
}

export interface PermissionView {
  identity: string;
  name: string;
  optional: boolean;
  approved: boolean;
  audited: boolean;
}
export interface AclView {
  mode: string | null;
  count: number;
  types?: Record<string, number>;
}
export interface SchoolDetails {
  school: unknown;
  meta: Record<string, unknown> | null;
  permissions: Record<string, PermissionView[]>;
  acl: AclView | null;
}

/** Applied permissions grouped by their `group`, groups and identities sorted. */
export function groupPermissions(list: unknown[]): Record<string, PermissionView[]> {
  const groups = new Map<string, PermissionView[]>();
  for (const p of list as LooseJson[]) {
    const g = text(p?.group) || '(no group)';
    const view = {
      identity: text(p?.identity),
      name: text(p?.name),
      optional: p?.optional === true,
      approved: p?.approved === true,
      audited: p?.audited === true,
    };
    groups.set(g, [...(groups.get(g) ?? []), view]);
  }
  return Object.fromEntries(
    [...groups].sort(([a], [b]) => a.localeCompare(b)).map(([g, ps]) => [g, ps.sort((a, b) => a.identity.localeCompare(b.identity))]),
  );
}

/** The ACL as counts: person ids are personal data and are not printed. */
export function summarizeAcl(acl: unknown, withUserType: boolean): AclView {
  const a = (acl ?? {}) as { mode?: unknown; ids?: unknown };
  const ids = Array.isArray(a.ids) ? a.ids : [];
  const view: AclView = { mode: typeof a.mode === 'string' ? a.mode : null, count: ids.length };
  if (withUserType) {
    const types: Record<string, number> = {};
    for (const id of ids) {
      const t = typeof id === 'object' && id !== null ? text((id as { type?: unknown }).type) || 'unknown' : 'unknown';
      types[t] = (types[t] ?? 0) + 1;
    }
    view.types = types;
  }
  return view;
}

const yesNo = (v: unknown) => (v === true ? 'yes' : v === false ? 'no' : 'unknown (no scope)');

export function renderDetails(d: SchoolDetails): string {
  const s = schoolSummary(d.school);
  const school = d.school as LooseJson;
  const lines = [
    `${s.id}  ${s.name}`,
    `  region ${s.region} (${s.domain})   la_code ${s.la_code}   establishment ${s.establishment_number}   urn ${s.urn}`,
    `  phase ${text(school?.phase_of_education)}   mis ${text(school?.mis)}   timezone ${text(school?.timezone)}`,
  ];
  if (d.meta) {
    lines.push(
      'meta',
      `  online ${yesNo(d.meta.online)}   approved ${yesNo(d.meta.approved)}   audited ${yesNo(d.meta.audited)}   custom attendance codes ${yesNo(d.meta.custom_attendance_codes)}`,
    );
  } else {
    lines.push('meta', '  not available');
  }
  lines.push('permissions');
  const groups = Object.entries(d.permissions);
  if (!groups.length) lines.push('  none');
  for (const [g, ps] of groups) {
    lines.push(`  ${g}`);
    for (const p of ps) {
      const flags = [p.approved ? 'approved' : 'not approved', p.optional ? 'optional' : '', p.audited ? 'audited' : '']
        .filter(Boolean)
        .join(', ');
      lines.push(`    ${p.identity}  ${p.name}  (${flags})`);
    }
  }
  if (d.acl) {
    const types = d.acl.types
      ? '   ' +
        Object.entries(d.acl.types)
          .map(([t, n]) => `${t} ${n}`)
          .join(', ')
      : '';
    lines.push('acl', `  mode ${d.acl.mode ?? 'none (no ACL enabled)'}   ids ${d.acl.count}${types}`);
  } else {
    lines.push('acl', '  not available');
  }
  return lines.map(terminalSafe).join('\n') + '\n';
}
