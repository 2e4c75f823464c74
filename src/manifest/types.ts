/**
 * On-disk shapes of the manifests and the per-school state file. These are read by the
 * warehouse loaders and by users' scripts: change them only with a version bump. Where each
 * document lives, how big it may be and how it is read: src/manifest/layout.ts (docs/manifest.md).
 *
 *   <dest>/_manifests/<run_id>/part-<n>.json          bounded parts (<= 1 MB), written during the run:
 *                                                     tasks whose files are durable (before their
 *                                                     state advances), then the tasks that ended
 *                                                     otherwise. A Manifest with status 'running'.
 *   <dest>/_manifests/<run_id>.json                   written last: a RunManifest (the run's summary
 *                                                     and the list of its parts). Earlier versions
 *                                                     wrote a version 1 Manifest listing every task.
 *   <dest>/_state/region=<code>/school_id=<id>.json   per-school watermarks (one writer per school)
 */
import type { FormatName } from '../format/index.ts';

export interface ManifestFile {
  table: string; // 'achievements', 'achievement_students', 'deletions', ...
  path: string; // relative to dest, '/' separators: 'achievements/region=uk/school_id=A1/<run_id>-0001.parquet'
  rows: number;
  bytes: number;
  sha256: string;
  /**
   * NDJSON and CSV files: bytes of the longest line (record) including its newline; absent for
   * Parquet and in older manifests. Loaders size their readers' line and object limits from it.
   */
  max_line_bytes?: number;
}

export interface ManifestTask {
  school_id: string;
  region: string;
  resource: string; // resource name ('achievements'); its child tables' files are listed under it too
  /**
   * committed: files durable and listed (loaders apply them). failed: error, no files, state untouched.
   * skipped: not attempted (school inactive, domain not allowed, revoked). interrupted: the run was
   * stopped (SIGINT/SIGTERM) while the task ran; not_started: stopped before the task began.
   * unchanged: a full read whose content equals the last committed version for this school and
   * resource (`content_sha256`): no file was written (`files: []`, `rows: {}`); it is still a full
   * snapshot as of `read_at` (nothing was deleted), and the files of run `unchanged_since` hold
   * its rows. Loaders apply it as a no-op for the current state; the state advanced as for a
   * committed full read. compacted: written by `compact`, not a read: `files` holds one file that
   * replaces the files `compaction` names (docs/manifest.md).
   */
  status: 'committed' | 'unchanged' | 'failed' | 'skipped' | 'interrupted' | 'not_started' | 'compacted';
  /** full: every row of the resource for this school was read (a snapshot: rows of this (school, table)
   * not in it are gone upstream); incremental: only rows with updated_at after `updated_after`. */
  mode: 'full' | 'incremental';
  updated_after?: string; // what was sent, ISO 8601 UTC
  watermark?: string; // the committed watermark after this task, ISO 8601 UTC
  files: ManifestFile[];
  rows: Record<string, number>; // table -> rows written
  drift_fields?: Record<string, string[]>; // table -> undeclared fields seen (kept in NDJSON keys / _extra)
  /** table -> lone UTF-16 surrogates replaced by U+FFFD in this piece's rows (docs/flattening.md, "Text") */
  replaced_surrogates?: Record<string, number>;
  /**
   * A long full read commits in pieces (checkpoints), possibly across runs (a killed or failed task
   * resumes from its saved cursor). Every piece of such a read carries this. Loaders apply each
   * piece's rows, and the snapshot semantics of `mode: 'full'` only on the piece with `final: true`,
   * where the snapshot is identified by `snapshot` (the run id of the attempt that began the read):
   * rows of this (school, table) last seen before that run are gone upstream.
   * The identity of a task entry is (run_id, school_id, resource, checkpoint.seq ?? 0).
   */
  checkpoint?: { snapshot: string; seq: number; final: boolean };
  /**
   * Columns that were null in this task's rows because the token lacked the property's scope
   * (table -> columns). Loaders must not let such a null replace a value read with the scope for
   * the same row version (same key and updated_at).
   */
  scope_masked?: Record<string, string[]>;
  /** Columns guarded by a property scope in this task (table -> columns), configured or declared, whether or not masked. */
  scope_guarded?: Record<string, string[]>;
  /**
   * Full reads read as one piece, of the tables whose full reads are hashed: the SHA-256 of their
   * content (every row as written, minus `_run_id` and `_extracted_at`, under the run's format,
   * format options and personal-data policy; docs/scale.md). On `unchanged` tasks, with `read_at`
   * (server time the read began, ISO 8601 UTC) and `unchanged_since` (the run whose files hold
   * this content).
   */
  content_sha256?: string;
  read_at?: string;
  unchanged_since?: string;
  /** status 'compacted': what the one file of `files` holds (see CompactionRecord). */
  compaction?: CompactionRecord;
  error?: { code: string; message: string };
}

/**
 * A compacted file replaces data files of one (school, table): `sources` are the files tasks
 * of export runs listed (each with the task it belongs to: run_id, this entry's school_id and
 * resource, seq), whose rows it holds unchanged, in order; `inputs` are the files it was made
 * of and that `compact` deleted after writing the manifest (sources, or files of an earlier
 * compaction, whose sources are repeated here). A loader reads a source's rows from the latest
 * compacted file listing it, keeping the rows of the source's run.
 */
export interface CompactionRecord {
  table: string;
  sources: { path: string; run_id: string; seq: number; rows: number }[];
  inputs: string[];
}

/** What the personal-data policy did to the values written (docs/personal-data.md). */
export interface PersonalDataRecord {
  person_id: 'keep' | 'pseudonymise';
  direct_identifier: 'keep' | 'pseudonymise' | 'drop';
  free_text: 'keep' | 'drop';
  /** Per-column overrides as configured: "table.column" -> action. */
  columns?: Record<string, 'keep' | 'pseudonymise' | 'drop'>;
  /** A fingerprint of the pseudonymisation key (never the key): files with different ones do not join. */
  key_id?: string;
  /**
   * Final run manifest only: each policy entry with the columns ("table.column") it decided in this
   * run's rows: `classes` per class (`unsure`: fields no rule names, given the strictest action),
   * `columns` per override (an override that matched nothing lists none).
   */
  matched?: { classes: Record<string, string[]>; columns: Record<string, string[]> };
  /** The run changed the destination's policy (stricter, or accepted with --personal-data-change). */
  change?: PolicyChangeRecord;
}

/** Who changed a destination's personal-data policy, from what, and each difference. */
export interface PolicyChangeRecord {
  /** stricter: accepted and announced; accepted: weaker or another key, accepted with --personal-data-change. */
  kind: 'stricter' | 'accepted';
  /** SCHOOL_EXPORT_CHANGED_BY, else user@host of the process. */
  by: string;
  at: string;
  /** The policy the destination held before (as its record had it). */
  from: PersonalDataRecord;
  /** One line per difference: "free_text: keep -> drop (stricter)". */
  differences: string[];
}

export interface Manifest {
  version: 1;
  run_id: string; // sortable: '20261122T011558.123Z-3f9a' — loaders apply runs in run_id order
  started_at: string; // ISO 8601 UTC
  finished_at: string;
  format: FormatName;
  format_options?: Record<string, unknown>;
  shard?: { index: number; count: number };
  /** ok: every task committed. partial: some task failed or was skipped. interrupted: stopped by a
   * signal. failed: the run could not proceed (its tasks say why). running: this is a part file
   * (every part has it, also after the run ended: its run manifest has the run's status). */
  status: 'ok' | 'partial' | 'interrupted' | 'failed' | 'running';
  part?: number; // on part files: the part's sequence number
  /** The personal-data policy the run applied (absent: every value kept as read). */
  personal_data?: PersonalDataRecord;
  tasks: ManifestTask[];
  /** Deletions read in this run (also written as rows of the `deletions` table, whose files are listed in tasks). */
  deletions: {
    school_id: string;
    type: string;
    id: string;
    deleted_at: string | null;
    restored_at: string | null;
    detected_by: 'api' | 'snapshot';
  }[];
  /** Schools whose exported data was purged in this run (access revoked with --purge-on-revoke). */
  purged?: {
    school_id: string;
    region: string;
    reason: string;
    files_removed: number;
    /**
     * Set when the purge removed only what runs before this one wrote (the files written under a
     * weaker personal-data policy, once replaced): loaders drop the school's rows staged from
     * runs before `before_run` (instead of before this manifest's run) and skip those runs' tasks.
     */
    before_run?: string;
  }[];
  /** The run changed the destination's format (accepted with --format-change). */
  format_change?: { from: FormatName; to: FormatName; by: string; at: string };
}

/** What a run manifest says of the run as a whole; bounded whatever the number of tasks. */
export interface RunTotals {
  /** Task entries by status (a task committed in checkpoint pieces counts once per piece). */
  tasks: Partial<Record<ManifestTask['status'], number>>;
  rows: Record<string, number>; // table -> rows written
  files: number;
  bytes: number;
  deletions: number;
  /** The first of the entries that did not commit (or committed with an error), with why. */
  failures: { school_id: string; resource: string; status: ManifestTask['status']; code: string }[];
  /** How many such entries there are in all (failures lists at most 100). */
  failures_total: number;
}

/**
 * `_manifests/<run_id>.json` from this version on: written last, once every part is durable. It
 * repeats no task: loaders read the tasks from the parts it lists (and a run killed before its
 * run manifest has parts only). Version 2: an earlier version's loader refuses it rather than
 * taking it for a run without tasks.
 */
export interface RunManifest {
  version: 2;
  layout: 'parts';
  /** export: a `run`; compaction: a `compact` (its entries have status 'compacted'). */
  kind: 'export' | 'compaction';
  run_id: string;
  started_at: string;
  finished_at: string;
  format: FormatName;
  format_options?: Record<string, unknown>;
  shard?: { index: number; count: number };
  status: 'ok' | 'partial' | 'interrupted' | 'failed';
  personal_data?: PersonalDataRecord;
  summary: RunTotals;
  /** Every part of the run, in order: relative path, its number, its task entries and bytes. */
  parts: { path: string; part: number; tasks: number; bytes: number }[];
  purged?: Manifest['purged'];
}

/** One resource's committed progress at one school. */
export interface ResourceState {
  watermark: string | null; // ISO 8601 UTC; next incremental run asks for updated_after = watermark - lookback
  last_run_id: string | null; // the run that last committed this resource (null: none yet)
  last_full_at: string | null; // when a full snapshot last completed (drives snapshot deletion detection)
  known_ids_file?: string; // for snapshot-detected deletions: relative path of the id list of the last full snapshot
  /** The highest SchoolDirective.force_full_seq this resource has been fully refreshed for. */
  applied_force_full_seq?: number;
  /** "table.column" values the last committed read got as null for lack of scope; a later read
   * with the scope re-reads the resource in full so the warehouse gets the values. */
  scope_masked?: string[];
  /** Fingerprint of the personal-data policy and key the rows were written with (absent: kept as
   * read). A run with another one reads the resource again in full (docs/personal-data.md). */
  personal_data?: string;
  /**
   * Set when this resource was read again in full under a stricter personal-data policy (or
   * another key) by the read whose snapshot is this run id: the school's files of runs before it
   * are deleted (and the deletion recorded as a purge) once every resource of the school has been
   * read again. Cleared by that purge (docs/personal-data.md).
   */
  purge_before?: string;
  /**
   * The content of the last full read that was committed in one piece, while nothing written
   * since changed it (an incremental read that wrote rows, a checkpoint, or API deletion records
   * of this table drop it): its SHA-256 (ManifestTask.content_sha256) and the run whose files hold
   * it. A full read with the same hash writes no file (status `unchanged`).
   */
  content?: { sha256: string; run_id: string };
  /**
   * A full read in progress, committed up to a checkpoint: the next run resumes from `next_url`
   * instead of page 1. Cleared when the read completes.
   */
  checkpoint?: {
    snapshot: string; // run id of the attempt that began the read (the snapshot's identity)
    seq: number; // checkpoint pieces committed so far
    /** Where each cursor walk stands: one walk, or one per updated_at window (big schools). Its
     * `next` is the next page to read (path and query, at the school's domain). */
    walks: { after?: string; before?: string; next?: string; done?: boolean }[];
    /** Window boundaries (ms since the epoch) of a windowed read, for dropping duplicates. */
    boundaries?: number[];
    pages: number;
    rows: number;
    started_at: string; // server time when the first attempt began: a resumed read catches up on changes since then
    ids_files?: string[]; // key values read so far (tables whose deletions are detected by snapshot)
    updated_after?: string; // an incremental read resumes with the window it began with
    /** What the read began under; a later run resumes it only while these still hold. */
    force_full_seq?: number;
    scope_masked?: string[];
    personal_data?: string;
  };
}

export interface SchoolState {
  version: 1;
  school_id: string;
  region: string;
  /** resource -> committed progress */
  resources: Record<string, ResourceState>;
}

/**
 * Written by the webhook receiver (never by runs) at `_state/_directives/school_id=<id>.json`:
 * keyed by school only, because a webhook names no region. Runs read it for every school they
 * plan and never write it, so receiver and runs never contend for a file.
 */
export interface SchoolDirective {
  version: 1;
  school_id: string;
  /** Incremented on schoolApproved and on a completed schoolMigration: a run whose state has a
   * lower applied_force_full_seq does a full refresh of that school (ids change on migration). */
  force_full_seq: number;
  /** accessRevoked / accessDeclined: runs skip this school until a later schoolApproved clears it.
   * `purge`: its data is (being) purged; a run in flight must keep nothing of the school. */
  deactivated: { reason: string; at: string; event: string; purge?: boolean } | null;
  /** Path of the school token file (mode 0600, outside the export destination), when one was sent. */
  token_file?: string;
  updated_at: string;
}
