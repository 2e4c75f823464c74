import { ConfigError, ExportError, oneLine } from '../errors.ts';
import { assertSafeId, assertSafeRegion } from '../ids.ts';
import { RESOURCES, deletionsFor, genericResource, resourceByName, type ResourceSpec } from '../resources/index.ts';
import type { ApiClient } from '../source/client.ts';
import type { CustomResourceConfig } from '../config/schema.ts';
import type { SchoolRef } from './task.ts';
import { shardOf } from './shard.ts';

/** Resolves resource names (built-in and the pipeline file's custom ones) before any request. */
export function selectResources(names: string[] | undefined, custom: CustomResourceConfig[]): ResourceSpec[] {
  const customSpecs = custom.map((c) =>
    genericResource({ name: c.name, path: c.path, key: c.key, incremental: c.incremental, include: c.include }),
  );
  for (const c of customSpecs) {
    if (resourceByName(c.name)) throw new ConfigError(`custom_resources ${c.name}: that name is a built-in table; choose another`);
  }
  const builtIn = RESOURCES.filter((r) => r.name !== 'deletions');
  const deletions = deletionsFor([...builtIn, ...customSpecs]);
  const all = [...builtIn, ...customSpecs, deletions];
  if (!names || names.length === 0) return all;
  const byName = new Map(all.map((r) => [r.name, r]));
  return names.map((n) => {
    const r = byName.get(n);
    if (!r)
      throw new ConfigError(
        `resources: unknown table ${JSON.stringify(n)} (known: ${[...byName.keys()].join(', ')}; declare others under custom_resources)`,
      );
    return r;
  });
}

export interface DiscoveredSchools {
  schools: SchoolRef[];
  /** Schools that will not be exported, with the reason (unsafe id, domain not configured, not found). */
  problems: { schoolId: string; region: string; error: ExportError }[];
}

/** The approved schools, filtered by --schools and --shard, each checked before it becomes a path. */
export async function discoverSchools(
  client: ApiClient,
  o: { only?: string[]; shard: { index: number; count: number }; perPage: number },
): Promise<DiscoveredSchools> {
  const schools: SchoolRef[] = [];
  const problems: DiscoveredSchools['problems'] = [];
  const wanted = o.only ? new Set(o.only) : undefined;
  const found = new Set<string>();
  for await (const batch of client.paginate('/schools', { mode: 'cursor', perPage: o.perPage, ctx: { endpoint: '/schools' } })) {
    for (const raw of batch.rows as Record<string, unknown>[]) {
      const id = raw?.id;
      const region = (raw?.region ?? {}) as { code?: unknown; domain?: unknown };
      if (wanted && !wanted.has(String(id))) continue;
      found.add(String(id));
      if (shardOf(String(id), o.shard.count) !== o.shard.index) continue;
      try {
        const schoolId = assertSafeId(id);
        const code = assertSafeRegion(region.code);
        const domain = typeof region.domain === 'string' && region.domain ? region.domain.toLowerCase() : undefined;
        if (!client.isAllowed(domain)) {
          throw new ExportError(
            'E_DOMAIN_NOT_ALLOWED',
            `school ${schoolId}: its region domain ${domain} is not configured, so the token is not sent there; add --domain ${domain}=https://${domain} (or "domains" in the pipeline file) to export it`,
          );
        }
        schools.push({ id: schoolId, region: code, domain, record: raw });
      } catch (e) {
        const err = e instanceof ExportError ? e : new ExportError('E_PROTOCOL', oneLine(e));
        problems.push({ schoolId: String(id).slice(0, 40), region: String(region.code ?? '?').slice(0, 20), error: err });
      }
    }
  }
  for (const id of wanted ?? []) {
    if (!found.has(id) && shardOf(id, o.shard.count) === o.shard.index) {
      problems.push({
        schoolId: id,
        region: '?',
        error: new ExportError(
          'E_NOT_FOUND',
          `school ${id} is not among the schools that approved access (see: school-export schools list --state all)`,
        ),
      });
    }
  }
  schools.sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
  return { schools, problems };
}
