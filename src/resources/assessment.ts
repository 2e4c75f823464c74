import { f, schoolList, TIMESTAMPS } from './fields.ts';
import type { ResourceSpec } from './types.ts';

// Assessment objects have no deletion records: the pipeline detects deletions from full snapshots.

/** GET /schools/{id}/assessment/aspects (spec 2.9). min/max have no declared type: JSON text. */
export const assessmentAspects: ResourceSpec = schoolList('assessment_aspects', '/schools/{school_id}/assessment/aspects', [
  f('id'),
  f('mis_id', 'string_or_integer', true),
  f('name', 'string', true),
  f('type', 'string', true),
  f('description', 'string', true),
  f('min_value', 'any_scalar', true),
  f('max_value', 'any_scalar', true),
  ...TIMESTAMPS,
]);

/** GET /schools/{id}/assessment/results (spec 2.10). grade_value is decimal text. */
export const assessmentResults: ResourceSpec = schoolList('assessment_results', '/schools/{school_id}/assessment/results', [
  f('id'),
  f('mis_id', 'string_or_integer', true),
  // a result of a COMMENT aspect is a teacher's text about the child: free text (grade_value keeps the number)
  f('result', 'string', true, 'free_text'),
  f('grade_value', 'decimal_text', true),
  f('student', 'string', true, 'person_id'),
  f('aspect', 'string', true),
  f('resultset', 'string', true),
  f('collection_date', 'datetime', true),
  f('result_date', 'datetime', true),
  ...TIMESTAMPS,
]);

/** GET /schools/{id}/assessment/resultsets (spec 2.11). */
export const assessmentResultsets: ResourceSpec = schoolList('assessment_resultsets', '/schools/{school_id}/assessment/resultsets', [
  f('id'),
  f('mis_id', 'string_or_integer', true),
  f('name', 'string', true),
  f('module', 'string', true),
  f('source', 'string', true),
  f('supplier', 'string', true),
  f('external_id', 'string', true),
  f('locked', 'boolean', true),
  f('start_date', 'datetime', true),
  f('end_date', 'datetime', true),
  ...TIMESTAMPS,
]);
