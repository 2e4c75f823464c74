import type { PersonalClass } from '../table.ts';
import type { FieldSpec, FieldType, ResourceSpec } from './types.ts';

/** Terse field declarations: `f('name')`, `f('points', 'integer', true)`, `f('comment', 'string', true, 'free_text')`. */
export function f(path: string, type: FieldType = 'string', nullable = false, personal?: PersonalClass): FieldSpec {
  return personal ? { path, type, nullable, personal } : { path, type, nullable };
}

/** The service's audit pair, present on most resources. */
export const TIMESTAMPS: FieldSpec[] = [f('created_at', 'datetime'), f('updated_at', 'datetime')];

/** Naive English singular for child-table names: achievements -> achievement, classes -> class. */
export function singular(name: string): string {
  if (/ies$/.test(name)) return name.slice(0, -3) + 'y';
  if (/(sses|ches|shes|xes)$/.test(name)) return name.slice(0, -2);
  if (/s$/.test(name) && !/ss$/.test(name)) return name.slice(0, -1);
  return name;
}

/**
 * The common shape: a per-school list read with cursor pagination (and updated_after unless
 * `more` says otherwise), keyed by id, versioned by updated_at.
 */
export function schoolList(name: string, path: string, fields: FieldSpec[], more: Partial<ResourceSpec> = {}): ResourceSpec {
  return {
    name,
    path,
    scope: 'school',
    shape: 'list',
    paginated: true,
    incremental: true,
    fields,
    key: ['id'],
    // the field updated_after/updated_before filter on: none where the endpoint takes no filter
    // (windows and catch-up walks would each read the whole list again)
    updatedAtField: more.incremental === false ? undefined : 'updated_at',
    ...more,
  };
}
