/**
 * The shape every stage agrees on: a flattened row is a flat object of scalars, and a table is
 * described by its columns. Timestamps travel as ISO 8601 UTC strings with microseconds and a
 * trailing Z ("2024-03-31T00:30:00.000000Z"); the Parquet writer converts them to
 * TIMESTAMP_MICROS, NDJSON and CSV write them as they are.
 */
export type ColumnType = 'string' | 'integer' | 'double' | 'boolean' | 'timestamp' | 'json';

/**
 * What a column holds about a person (docs/personal-data.md): an id of a student, contact or
 * employee; a name, UPN, email, phone, date of birth or address line; or free text that may
 * contain anything. Absent: nothing personal.
 */
export type PersonalClass = 'person_id' | 'direct_identifier' | 'free_text';

export interface ColumnDef {
  name: string;
  type: ColumnType;
  /** Declared by the API as nullable, or null when the token lacks the property's scope. */
  nullable: boolean;
  personal?: PersonalClass;
  /** `personal` applies only to rows whose `column` holds one of `in` (deletions: person types). */
  personalWhen?: { column: string; in: readonly string[] };
}

export interface TableSchema {
  /** Table name, e.g. "achievements" or "achievement_students". */
  name: string;
  /** Columns in output order, metadata columns (_school_id, _region, _run_id, _extracted_at) included. */
  columns: ColumnDef[];
  /** Columns that identify a row within a school: ["id"] for most tables. */
  key: string[];
}

export type Scalar = string | number | boolean | null;
export type Row = Record<string, Scalar>;

/** Metadata every row carries. */
export const META_COLUMNS: ColumnDef[] = [
  { name: '_school_id', type: 'string', nullable: false },
  { name: '_region', type: 'string', nullable: false },
  { name: '_run_id', type: 'string', nullable: false },
  { name: '_extracted_at', type: 'timestamp', nullable: false },
];

/** Undeclared fields (schema drift) are kept here, as JSON text, in CSV and Parquet. */
export const EXTRA_COLUMN: ColumnDef = { name: '_extra', type: 'json', nullable: true };
