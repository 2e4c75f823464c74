import type { PersonalClass } from '../table.ts';

/**
 * A resource is data, not code: its endpoint, its declared fields and how its rows are keyed.
 * The flattener compiles one of these once per run; the pipeline reads path/query/paging from it.
 */

export type FieldType =
  | 'string'
  | 'integer'
  | 'double'
  | 'boolean'
  | 'datetime' // the API's {date, timezone_type, timezone} object -> <col> (UTC instant) + <col>__timezone
  | 'string_or_integer' // both forms occur upstream; always written as a string
  | 'decimal_text' // e.g. grade_value "12.50": kept as text so no precision or trailing zeros are lost
  | 'json' // arrays / objects kept whole, as JSON text
  | 'any_scalar'; // value of unspecified type (aspect min/max): JSON text of the value, so 5 and "5" stay distinct

export interface FieldSpec {
  /** Dotted path in the record, e.g. 'address.address_country.code'. */
  path: string;
  type: FieldType;
  nullable: boolean;
  /** What the field holds about a person (the data map, docs/personal-data.md); absent: nothing. */
  personal?: PersonalClass;
  /** `personal` applies only to rows whose `column` holds one of `in`. */
  personalWhen?: { column: string; in: readonly string[] };
}

export interface ChildSpec {
  /** Include name as sent in `include=` and as found in the record (`record[include].data[]`). */
  include: string;
  /** Child table name: '<singular parent>_<include>', e.g. 'achievement_students'. */
  table: string;
  /** Column naming the parent id, e.g. 'achievement_id'. */
  parentKey: string;
  /** Declared fields of the included object; anything else is kept as drift. */
  columns: FieldSpec[];
}

export interface ResourceSpec {
  name: string;
  /** Relative to /v1.0, with '{school_id}'. */
  path: string;
  /** discovery: the /schools list (rows land in each school's partition); school: one request chain per school. */
  scope: 'discovery' | 'school';
  /** object: a single `{ data: {...} }` response that yields one row per school. */
  shape: 'list' | 'object';
  paginated: boolean;
  incremental: boolean;
  /** Fixed extra query parameters. `include` is not here: it is built from `children`. */
  query?: Record<string, string>;
  fields: FieldSpec[];
  key: string[];
  children?: ChildSpec[];
  deletionType?: string;
  updatedAtField?: string;
  /**
   * Optional per-record reshaping applied before flattening (derived columns such as the ACL's
   * id_count). It must keep every key it does not understand, so drift is never lost.
   */
  prepare?: (record: Record<string, unknown>) => Record<string, unknown>;
}
