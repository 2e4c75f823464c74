import { identityKey, PROPERTY_SCOPES, propertyColumns, propertyWordKeys, readPermissionWords, wordKey } from '../resources/scopes.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { Sink } from '../sink/types.ts';

/**
 * What a run knows about property scopes, and what it concludes per school (issue 20, item 1).
 *
 * A column is claimed masked at a school only when a permission that guards it is *known* (listed
 * by this or another school, in this run or an earlier one, or configured in property_scopes) and
 * is missing or unapproved in that school's list. A guarded property no known permission matches
 * is undetermined: the run says once that it cannot tell, and claims nothing for it.
 *
 * Known identities are remembered in the destination (`_state/_property_scopes.json`, one small
 * object per destination), so a run with a token that lacks a scope still recognises it from a
 * run whose token had it. Schools are decided after every school's list was read (decide() is
 * called after learn() has seen them all), so the order the probes finish in changes nothing.
 */
export const SCOPES_FILE = '_state/_property_scopes.json';

interface Remembered {
  /** "table.column" -> identities seen guarding it. */
  identities: Record<string, string[]>;
}

type PermissionItem = { identity?: unknown; approved?: unknown };

export class ScopeKnowledge {
  /** "table.column" -> identity keys (lower case) known to guard it. */
  private readonly known = new Map<string, Set<string>>();
  /** The identities as first seen, for the memory file. */
  private readonly spelled = new Map<string, string>();
  private readonly undetermined = new Set<string>();
  /** Declared (PROPERTY_SCOPES) or configured: worth a permissions request of their own (needsProbe). */
  private readonly declared = new Set<string>();
  private learnedNew = false;
  /** What a read permission's words (wordKey) can name: "table.column" of declared property columns. */
  private readonly byWords = new Map<string, string[]>();
  /** identity -> the properties it guards (learn): the same few identities at every school */
  private readonly matched = new Map<string, readonly string[]>();

  constructor(
    private readonly resources: readonly ResourceSpec[],
    configured: Readonly<Record<string, string>> = {},
    remembered: Remembered = { identities: {} },
  ) {
    for (const r of resources)
      for (const [key, cols] of propertyWordKeys(r.name, propertyColumns(r))) {
        const named = cols.map((c) => `${r.name}.${c}`);
        this.byWords.set(key, [...(this.byWords.get(key) ?? []), ...named]);
      }
    for (const [table, props] of Object.entries(PROPERTY_SCOPES)) for (const p of props) this.declared.add(`${table}.${p}`);
    for (const property of Object.keys(configured)) this.declared.add(property);
    for (const property of this.declared) this.guard(property);
    for (const [property, identity] of Object.entries(configured)) this.add(property, identity);
    for (const [property, ids] of Object.entries(remembered.identities)) for (const id of ids) this.add(property, id);
    this.learnedNew = false;
  }

  /** Reads what earlier runs learned at this destination (nothing when absent or unreadable: it is only a memory). */
  static async load(sink: Sink, resources: readonly ResourceSpec[], configured: Readonly<Record<string, string>>): Promise<ScopeKnowledge> {
    let remembered: Remembered | undefined;
    try {
      const buf = await sink.read(SCOPES_FILE);
      const parsed = buf ? (JSON.parse(buf.toString('utf8')) as Partial<Remembered>) : undefined;
      if (parsed && typeof parsed.identities === 'object' && parsed.identities) remembered = cleanMemory(parsed.identities);
    } catch {
      remembered = undefined; // a torn or foreign file: relearned from the lists
    }
    return new ScopeKnowledge(resources, configured, remembered);
  }

  /** Writes what this run learned, merged with what another run (shard) may have written meanwhile. */
  async save(sink: Sink): Promise<void> {
    if (!this.learnedNew) return;
    const merged = await ScopeKnowledge.load(sink, this.resources, {});
    for (const [property, ids] of this.known) for (const id of ids) merged.add(property, this.spelled.get(id) ?? id);
    const identities: Record<string, string[]> = {};
    for (const [property, ids] of [...merged.known].sort(([a], [b]) => a.localeCompare(b))) {
      if (ids.size) identities[property] = [...ids].map((id) => merged.spelled.get(id) ?? id).sort();
    }
    await sink.writeAtomic(SCOPES_FILE, JSON.stringify({ identities }, null, 2) + '\n');
  }

  /**
   * Whether a table of this resource has a declared or configured guarded property: its full reads
   * look at the school's permissions. (Properties only learned from lists, such as schools.mis,
   * are judged whenever a list is read anyway, without a request of their own.)
   */
  guards(spec: ResourceSpec): boolean {
    return this.guardedOf(spec).some((p) => this.declared.has(p));
  }

  /** "table.column" values guarded by a property scope among this resource's tables, masked or not. */
  guardedOf(spec: ResourceSpec): string[] {
    const tables = new Set([spec.name, ...(spec.children ?? []).map((c) => c.table)]);
    return [...this.known.keys()].filter((k) => tables.has(k.slice(0, k.indexOf('.')))).sort();
  }

  /** Whether some guarded property of this resource has no known permission yet (a read of it should look at the lists). */
  unknownIn(spec: ResourceSpec): boolean {
    return this.guardedOf(spec).some((p) => this.declared.has(p) && this.known.get(p)!.size === 0);
  }

  /** Learns from one school's permission list: which listed identities guard which properties. */
  learn(body: unknown): void {
    for (const p of itemsOf(body)) {
      if (typeof p.identity !== 'string') continue;
      for (const property of this.guardedBy(p.identity)) this.add(property, p.identity);
    }
  }

  /**
   * The properties an identity guards, worked out once per identity: every school lists the same
   * few, and matching one against every table and column was 4% of a nightly run's CPU. Now
   * one lookup of its words (the keys are made once, in the constructor).
   */
  private guardedBy(identity: string): readonly string[] {
    const known = this.matched.get(identity);
    if (known) return known;
    const w = readPermissionWords(identity);
    const found = (w && this.byWords.get(wordKey(w))) ?? [];
    this.matched.set(identity, found);
    return found;
  }

  /**
   * What decide() needs of a school's list, small enough to keep for every school until all were
   * read: the approved identities (lower case); undefined when the response holds no list.
   */
  static granted(body: unknown): ReadonlySet<string> | undefined {
    if (!Array.isArray((body as { data?: unknown } | undefined)?.data)) return undefined;
    const granted = new Set<string>();
    for (const p of itemsOf(body)) if (typeof p.identity === 'string' && p.approved !== false) granted.add(identityKey(p.identity));
    return granted;
  }

  /**
   * The school's masked columns ("table.column", sorted): a known guarding permission is missing
   * from, or not approved in, its list (given as granted() of it). Properties with no known
   * permission are noted once for the run (undeterminedProperties) and never claimed.
   */
  decide(granted: ReadonlySet<string> | undefined): string[] {
    if (!granted) return []; // no list: nothing is known of this school
    const masked: string[] = [];
    for (const r of this.resources) {
      for (const property of this.guardedOf(r)) {
        const ids = this.known.get(property)!;
        if (ids.size === 0) this.undetermined.add(property);
        else if (![...ids].some((id) => granted.has(id))) masked.push(property);
      }
    }
    return masked.sort();
  }

  /** Guarded properties of this run's tables that no known permission matched at some school. */
  undeterminedProperties(): string[] {
    return [...this.undetermined].sort();
  }

  /** One line for the run: which properties it cannot judge, and how to tell it the permission names. */
  undeterminedNote(): string | undefined {
    const props = this.undeterminedProperties();
    if (!props.length) return undefined;
    const example = JSON.stringify({ [props[0]!]: '<permission identity>.read' });
    return (
      `cannot tell whether the token's scopes hide ${props.join(', ')}: no permission in the schools' lists names ` +
      `${props.length > 1 ? 'them' : 'it'}, so nothing was claimed as masked (a null there may be a missing scope); ` +
      `if the service names these permissions otherwise, set property_scopes (e.g. ${example}, or --property-scopes), ` +
      `then run once with --full-refresh to read the values a missing scope may have hidden`
    );
  }

  private guard(property: string): Set<string> {
    let ids = this.known.get(property);
    if (!ids) this.known.set(property, (ids = new Set()));
    return ids;
  }

  private add(property: string, identity: string): void {
    const ids = this.guard(property);
    const key = identityKey(identity);
    if (ids.has(key)) return;
    ids.add(key);
    if (!this.spelled.has(key)) this.spelled.set(key, identity);
    this.learnedNew = true;
  }
}

function itemsOf(body: unknown): PermissionItem[] {
  const list = (body as { data?: unknown } | undefined)?.data;
  return Array.isArray(list) ? (list.filter((p) => p !== null && typeof p === 'object') as PermissionItem[]) : [];
}

/** Only well-formed entries of the memory file are believed. */
function cleanMemory(raw: object): Remembered {
  const identities: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!/^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/.test(k) || !Array.isArray(v)) continue;
    const ids = v.filter((x): x is string => typeof x === 'string' && /^[A-Za-z0-9_.-]{3,300}$/.test(x));
    if (ids.length) identities[k] = ids;
  }
  return { identities };
}
