-- school-export: snowflake load of s3://bucket/exports
-- Static: run it unchanged after every export. It applies each committed task not applied yet (see docs/warehouse.md).
CREATE STAGE IF NOT EXISTS school_export_stage URL = 's3://bucket/exports/' STORAGE_INTEGRATION = school_export_integration FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE);

CREATE FILE FORMAT IF NOT EXISTS school_export_json TYPE = JSON;

CREATE TABLE IF NOT EXISTS _school_export_tasks (run_id VARCHAR NOT NULL, school_id VARCHAR NOT NULL, resource VARCHAR NOT NULL, seq NUMBER(38,0) NOT NULL, manifest VARCHAR, mode VARCHAR, snapshot VARCHAR, applied_at TIMESTAMP_TZ, merged_at TIMESTAMP_TZ);

CREATE TABLE IF NOT EXISTS _school_export_snapshots (run_id VARCHAR NOT NULL, school_id VARCHAR NOT NULL, table_name VARCHAR NOT NULL);

CREATE TABLE IF NOT EXISTS _school_export_masked (run_id VARCHAR NOT NULL, school_id VARCHAR NOT NULL, table_name VARCHAR NOT NULL);

CREATE TABLE IF NOT EXISTS _raw_achievements (id VARCHAR, points NUMBER(38,0), score FLOAT, comment VARCHAR, parents_notified BOOLEAN, details VARCHAR, updated_at TIMESTAMP_TZ, updated_at__timezone VARCHAR, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARCHAR);

CREATE TABLE IF NOT EXISTS achievements (id VARCHAR, points NUMBER(38,0), score FLOAT, comment VARCHAR, parents_notified BOOLEAN, details VARIANT, updated_at TIMESTAMP_TZ, updated_at__timezone VARCHAR, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARIANT) CLUSTER BY (_school_id, id);

CREATE TABLE IF NOT EXISTS _raw_school_meta (online BOOLEAN, approved BOOLEAN, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARCHAR);

CREATE TABLE IF NOT EXISTS school_meta (online BOOLEAN, approved BOOLEAN, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARIANT);

CREATE TABLE IF NOT EXISTS _raw_school_permissions (identity VARCHAR, approved BOOLEAN, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARCHAR);

CREATE TABLE IF NOT EXISTS school_permissions (identity VARCHAR, approved BOOLEAN, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARIANT);

CREATE TABLE IF NOT EXISTS _raw_deletions (type VARCHAR, id VARCHAR, mis_id VARCHAR, deleted_at TIMESTAMP_TZ, deleted_at__timezone VARCHAR, restored_at TIMESTAMP_TZ, restored_at__timezone VARCHAR, detected_by VARCHAR, "TABLE" VARCHAR, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARCHAR);

CREATE TABLE IF NOT EXISTS deletions (type VARCHAR, id VARCHAR, mis_id VARCHAR, deleted_at TIMESTAMP_TZ, deleted_at__timezone VARCHAR, restored_at TIMESTAMP_TZ, restored_at__timezone VARCHAR, detected_by VARCHAR, "TABLE" VARCHAR, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARIANT) CLUSTER BY (_school_id, type, id);

CREATE TABLE IF NOT EXISTS _raw_achievement_students (achievement_id VARCHAR, id VARCHAR, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARCHAR);

CREATE TABLE IF NOT EXISTS achievement_students (achievement_id VARCHAR, id VARCHAR, _school_id VARCHAR NOT NULL, _region VARCHAR NOT NULL, _run_id VARCHAR NOT NULL, _extracted_at TIMESTAMP_TZ NOT NULL, _extra VARIANT) CLUSTER BY (_school_id, achievement_id, id);

EXECUTE IMMEDIATE $$
DECLARE
  stmt VARCHAR;
  school_export_check_1 EXCEPTION (-20001, 'school-export: a manifest lists an unsafe or misplaced file path; nothing was loaded');
  school_export_check_2 EXCEPTION (-20002, 'school-export: a pending task wrote files that are not Parquet; export with --format parquet (or load with warehouse load)');
  school_export_check_3 EXCEPTION (-20003, 'school-export: staged achievements rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded');
  school_export_check_4 EXCEPTION (-20004, 'school-export: staged school_meta rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded');
  school_export_check_5 EXCEPTION (-20005, 'school-export: staged school_permissions rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded');
  school_export_check_6 EXCEPTION (-20006, 'school-export: staged deletions rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded');
  school_export_check_7 EXCEPTION (-20007, 'school-export: staged achievement_students rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded');
BEGIN
  CREATE OR REPLACE TEMPORARY TABLE _se_docs AS SELECT REGEXP_SUBSTR(METADATA$FILENAME, '_manifests/[^/]+(/[^/]+)?$') AS manifest, $1 AS doc FROM @school_export_stage/_manifests/ (FILE_FORMAT => 'school_export_json', PATTERN => '.*[.]json');
  CREATE OR REPLACE TEMPORARY TABLE _se_tasks AS SELECT d.manifest AS manifest, d.doc['run_id']::VARCHAR AS run_id, CASE WHEN d.doc['personal_data']['person_id']::VARCHAR = 'pseudonymise' THEN 1 ELSE 0 END AS pseudonymised, t.value['school_id']::VARCHAR AS school_id, t.value['resource']::VARCHAR AS resource, t.value['status']::VARCHAR AS status, t.value['mode']::VARCHAR AS mode, COALESCE(t.value['checkpoint']['seq']::NUMBER, 0) AS seq, CASE WHEN t.value['checkpoint']['final']::VARCHAR = 'false' THEN 0 ELSE 1 END AS piece_final, COALESCE(t.value['checkpoint']['snapshot']::VARCHAR, d.doc['run_id']::VARCHAR) AS snapshot, t.value AS task FROM _se_docs AS d, LATERAL FLATTEN(input => d.doc['tasks']) AS t;
  CREATE OR REPLACE TEMPORARY TABLE _se_files AS SELECT t.run_id, t.school_id, t.resource, t.seq, f.value['table']::VARCHAR AS table_name, f.value['path']::VARCHAR AS path, f.value['rows']::NUMBER AS row_count FROM _se_tasks AS t, LATERAL FLATTEN(input => t.task['files']) AS f;
  CREATE OR REPLACE TEMPORARY TABLE _se_purges AS SELECT d.doc['run_id']::VARCHAR AS run_id, p.value['school_id']::VARCHAR AS school_id FROM _se_docs AS d, LATERAL FLATTEN(input => d.doc['purged']) AS p;
  CREATE OR REPLACE TEMPORARY TABLE _se_masked AS SELECT t.run_id, t.school_id, t.resource, t.seq, 'achievements' AS table_name FROM _se_tasks AS t WHERE COALESCE(ARRAY_SIZE(t.task['scope_masked']['achievements']), 0) > 0 UNION ALL SELECT t.run_id, t.school_id, t.resource, t.seq, 'school_meta' AS table_name FROM _se_tasks AS t WHERE COALESCE(ARRAY_SIZE(t.task['scope_masked']['school_meta']), 0) > 0 UNION ALL SELECT t.run_id, t.school_id, t.resource, t.seq, 'school_permissions' AS table_name FROM _se_tasks AS t WHERE COALESCE(ARRAY_SIZE(t.task['scope_masked']['school_permissions']), 0) > 0 UNION ALL SELECT t.run_id, t.school_id, t.resource, t.seq, 'deletions' AS table_name FROM _se_tasks AS t WHERE COALESCE(ARRAY_SIZE(t.task['scope_masked']['deletions']), 0) > 0 UNION ALL SELECT t.run_id, t.school_id, t.resource, t.seq, 'achievement_students' AS table_name FROM _se_tasks AS t WHERE COALESCE(ARRAY_SIZE(t.task['scope_masked']['achievement_students']), 0) > 0;
  CREATE OR REPLACE TEMPORARY TABLE _se_known AS SELECT 'achievements' AS table_name UNION ALL SELECT 'school_meta' AS table_name UNION ALL SELECT 'school_permissions' AS table_name UNION ALL SELECT 'deletions' AS table_name UNION ALL SELECT 'achievement_students' AS table_name;
  CREATE OR REPLACE TEMPORARY TABLE _se_pending AS SELECT t.run_id, t.school_id, t.resource, t.seq, MIN(t.manifest) AS manifest, MIN(t.mode) AS mode, MIN(t.piece_final) AS piece_final, MIN(t.snapshot) AS snapshot, MIN(t.pseudonymised) AS pseudonymised FROM _se_tasks AS t WHERE t.status = 'committed' AND NOT EXISTS (SELECT 1 FROM _school_export_tasks AS a WHERE a.run_id = t.run_id AND a.school_id = t.school_id AND a.resource = t.resource AND a.seq = t.seq) AND NOT EXISTS (SELECT 1 FROM _se_purges AS p WHERE p.school_id = t.school_id AND t.run_id < p.run_id) GROUP BY t.run_id, t.school_id, t.resource, t.seq;
  CREATE OR REPLACE TEMPORARY TABLE _se_pending_files AS SELECT DISTINCT f.table_name, f.path, f.row_count, f.run_id, f.school_id FROM _se_files AS f JOIN _se_pending AS t ON f.run_id = t.run_id AND f.school_id = t.school_id AND f.resource = t.resource AND f.seq = t.seq JOIN _se_known AS k ON k.table_name = f.table_name;
  CREATE OR REPLACE TEMPORARY TABLE _se_pending_purges AS SELECT DISTINCT p.run_id, p.school_id FROM _se_purges AS p WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks AS a WHERE a.run_id = p.run_id AND a.school_id = p.school_id AND a.resource = '_purge');
  IF (EXISTS (SELECT run_id, path FROM _se_pending_files WHERE NOT (REGEXP_LIKE(path, '([A-Za-z0-9_=-][A-Za-z0-9_=.-]*/)*[A-Za-z0-9_=-][A-Za-z0-9_=.-]*')) OR SUBSTR(path, 1, LENGTH(table_name) + 1) <> table_name || '/')) THEN
    RAISE school_export_check_1;
  END IF;
  IF (EXISTS (SELECT run_id, path FROM _se_pending_files WHERE SUBSTR(path, LENGTH(path) - 7) <> '.parquet')) THEN
    RAISE school_export_check_2;
  END IF;
  CREATE OR REPLACE TEMPORARY TABLE _stage_achievements AS SELECT * FROM _raw_achievements WHERE 1 = 0;
  CREATE OR REPLACE TEMPORARY TABLE _stage_school_meta AS SELECT * FROM _raw_school_meta WHERE 1 = 0;
  CREATE OR REPLACE TEMPORARY TABLE _stage_school_permissions AS SELECT * FROM _raw_school_permissions WHERE 1 = 0;
  CREATE OR REPLACE TEMPORARY TABLE _stage_deletions AS SELECT * FROM _raw_deletions WHERE 1 = 0;
  CREATE OR REPLACE TEMPORARY TABLE _stage_achievement_students AS SELECT * FROM _raw_achievement_students WHERE 1 = 0;
  LET c_achievements CURSOR FOR SELECT LISTAGG('''' || SUBSTR(path, 14) || '''', ', ') AS files FROM (SELECT path, FLOOR((ROW_NUMBER() OVER (ORDER BY path) - 1) / 1000) AS chunk FROM _se_pending_files WHERE table_name = 'achievements') GROUP BY chunk;
  FOR f IN c_achievements DO
    stmt := 'COPY INTO _stage_achievements FROM @school_export_stage/achievements/ FILES = (' || f.files || ') FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = ABORT_STATEMENT FORCE = TRUE';
    EXECUTE IMMEDIATE stmt;
  END FOR;
  LET c_school_meta CURSOR FOR SELECT LISTAGG('''' || SUBSTR(path, 13) || '''', ', ') AS files FROM (SELECT path, FLOOR((ROW_NUMBER() OVER (ORDER BY path) - 1) / 1000) AS chunk FROM _se_pending_files WHERE table_name = 'school_meta') GROUP BY chunk;
  FOR f IN c_school_meta DO
    stmt := 'COPY INTO _stage_school_meta FROM @school_export_stage/school_meta/ FILES = (' || f.files || ') FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = ABORT_STATEMENT FORCE = TRUE';
    EXECUTE IMMEDIATE stmt;
  END FOR;
  LET c_school_permissions CURSOR FOR SELECT LISTAGG('''' || SUBSTR(path, 20) || '''', ', ') AS files FROM (SELECT path, FLOOR((ROW_NUMBER() OVER (ORDER BY path) - 1) / 1000) AS chunk FROM _se_pending_files WHERE table_name = 'school_permissions') GROUP BY chunk;
  FOR f IN c_school_permissions DO
    stmt := 'COPY INTO _stage_school_permissions FROM @school_export_stage/school_permissions/ FILES = (' || f.files || ') FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = ABORT_STATEMENT FORCE = TRUE';
    EXECUTE IMMEDIATE stmt;
  END FOR;
  LET c_deletions CURSOR FOR SELECT LISTAGG('''' || SUBSTR(path, 11) || '''', ', ') AS files FROM (SELECT path, FLOOR((ROW_NUMBER() OVER (ORDER BY path) - 1) / 1000) AS chunk FROM _se_pending_files WHERE table_name = 'deletions') GROUP BY chunk;
  FOR f IN c_deletions DO
    stmt := 'COPY INTO _stage_deletions FROM @school_export_stage/deletions/ FILES = (' || f.files || ') FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = ABORT_STATEMENT FORCE = TRUE';
    EXECUTE IMMEDIATE stmt;
  END FOR;
  LET c_achievement_students CURSOR FOR SELECT LISTAGG('''' || SUBSTR(path, 22) || '''', ', ') AS files FROM (SELECT path, FLOOR((ROW_NUMBER() OVER (ORDER BY path) - 1) / 1000) AS chunk FROM _se_pending_files WHERE table_name = 'achievement_students') GROUP BY chunk;
  FOR f IN c_achievement_students DO
    stmt := 'COPY INTO _stage_achievement_students FROM @school_export_stage/achievement_students/ FILES = (' || f.files || ') FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = ABORT_STATEMENT FORCE = TRUE';
    EXECUTE IMMEDIATE stmt;
  END FOR;
  IF (EXISTS (SELECT COALESCE(e.run_id, s._run_id) AS run_id, COALESCE(e.school_id, s._school_id) AS school_id, COALESCE(e.n, 0) AS expected, COALESCE(s.n, 0) AS staged FROM (SELECT run_id, school_id, SUM(row_count) AS n FROM _se_pending_files WHERE table_name = 'achievements' GROUP BY run_id, school_id) AS e FULL OUTER JOIN (SELECT _run_id, _school_id, COUNT(*) AS n FROM _stage_achievements GROUP BY _run_id, _school_id) AS s ON s._run_id = e.run_id AND s._school_id = e.school_id WHERE COALESCE(e.n, 0) <> COALESCE(s.n, 0))) THEN
    RAISE school_export_check_3;
  END IF;
  IF (EXISTS (SELECT COALESCE(e.run_id, s._run_id) AS run_id, COALESCE(e.school_id, s._school_id) AS school_id, COALESCE(e.n, 0) AS expected, COALESCE(s.n, 0) AS staged FROM (SELECT run_id, school_id, SUM(row_count) AS n FROM _se_pending_files WHERE table_name = 'school_meta' GROUP BY run_id, school_id) AS e FULL OUTER JOIN (SELECT _run_id, _school_id, COUNT(*) AS n FROM _stage_school_meta GROUP BY _run_id, _school_id) AS s ON s._run_id = e.run_id AND s._school_id = e.school_id WHERE COALESCE(e.n, 0) <> COALESCE(s.n, 0))) THEN
    RAISE school_export_check_4;
  END IF;
  IF (EXISTS (SELECT COALESCE(e.run_id, s._run_id) AS run_id, COALESCE(e.school_id, s._school_id) AS school_id, COALESCE(e.n, 0) AS expected, COALESCE(s.n, 0) AS staged FROM (SELECT run_id, school_id, SUM(row_count) AS n FROM _se_pending_files WHERE table_name = 'school_permissions' GROUP BY run_id, school_id) AS e FULL OUTER JOIN (SELECT _run_id, _school_id, COUNT(*) AS n FROM _stage_school_permissions GROUP BY _run_id, _school_id) AS s ON s._run_id = e.run_id AND s._school_id = e.school_id WHERE COALESCE(e.n, 0) <> COALESCE(s.n, 0))) THEN
    RAISE school_export_check_5;
  END IF;
  IF (EXISTS (SELECT COALESCE(e.run_id, s._run_id) AS run_id, COALESCE(e.school_id, s._school_id) AS school_id, COALESCE(e.n, 0) AS expected, COALESCE(s.n, 0) AS staged FROM (SELECT run_id, school_id, SUM(row_count) AS n FROM _se_pending_files WHERE table_name = 'deletions' GROUP BY run_id, school_id) AS e FULL OUTER JOIN (SELECT _run_id, _school_id, COUNT(*) AS n FROM _stage_deletions GROUP BY _run_id, _school_id) AS s ON s._run_id = e.run_id AND s._school_id = e.school_id WHERE COALESCE(e.n, 0) <> COALESCE(s.n, 0))) THEN
    RAISE school_export_check_6;
  END IF;
  IF (EXISTS (SELECT COALESCE(e.run_id, s._run_id) AS run_id, COALESCE(e.school_id, s._school_id) AS school_id, COALESCE(e.n, 0) AS expected, COALESCE(s.n, 0) AS staged FROM (SELECT run_id, school_id, SUM(row_count) AS n FROM _se_pending_files WHERE table_name = 'achievement_students' GROUP BY run_id, school_id) AS e FULL OUTER JOIN (SELECT _run_id, _school_id, COUNT(*) AS n FROM _stage_achievement_students GROUP BY _run_id, _school_id) AS s ON s._run_id = e.run_id AND s._school_id = e.school_id WHERE COALESCE(e.n, 0) <> COALESCE(s.n, 0))) THEN
    RAISE school_export_check_7;
  END IF;
  BEGIN TRANSACTION;
  DELETE FROM _raw_achievements WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM achievements WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM _raw_school_meta WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM school_meta WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM _raw_school_permissions WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM school_permissions WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM _raw_deletions WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM deletions WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM _raw_achievement_students WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM achievement_students WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM _school_export_snapshots WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  DELETE FROM _school_export_masked WHERE NOT EXISTS (SELECT 1 FROM _school_export_tasks);
  INSERT INTO _raw_achievements (id, points, score, comment, parents_notified, details, updated_at, updated_at__timezone, _school_id, _region, _run_id, _extracted_at, _extra) SELECT id, points, score, comment, parents_notified, details, updated_at, updated_at__timezone, _school_id, _region, _run_id, _extracted_at, _extra FROM _stage_achievements;
  INSERT INTO _raw_school_meta (online, approved, _school_id, _region, _run_id, _extracted_at, _extra) SELECT online, approved, _school_id, _region, _run_id, _extracted_at, _extra FROM _stage_school_meta;
  INSERT INTO _raw_school_permissions (identity, approved, _school_id, _region, _run_id, _extracted_at, _extra) SELECT identity, approved, _school_id, _region, _run_id, _extracted_at, _extra FROM _stage_school_permissions;
  INSERT INTO _raw_deletions (type, id, mis_id, deleted_at, deleted_at__timezone, restored_at, restored_at__timezone, detected_by, "TABLE", _school_id, _region, _run_id, _extracted_at, _extra) SELECT type, id, mis_id, deleted_at, deleted_at__timezone, restored_at, restored_at__timezone, detected_by, "TABLE", _school_id, _region, _run_id, _extracted_at, _extra FROM _stage_deletions;
  INSERT INTO _raw_achievement_students (achievement_id, id, _school_id, _region, _run_id, _extracted_at, _extra) SELECT achievement_id, id, _school_id, _region, _run_id, _extracted_at, _extra FROM _stage_achievement_students;
  DELETE FROM _raw_achievements AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM achievements AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM _raw_school_meta AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM school_meta AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM _raw_school_permissions AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM school_permissions AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM _raw_deletions AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM deletions AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM _raw_achievement_students AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  DELETE FROM achievement_students AS r WHERE EXISTS (SELECT 1 FROM (SELECT run_id, school_id FROM _se_pending_purges) AS p WHERE p.school_id = r._school_id AND r._run_id < p.run_id);
  INSERT INTO _school_export_snapshots (run_id, school_id, table_name) SELECT DISTINCT x.run_id, x.school_id, x.table_name FROM (SELECT p.snapshot AS run_id, p.school_id, k.table_name FROM _se_pending AS p JOIN _se_known AS k ON k.table_name = p.resource WHERE p.mode = 'full' AND p.piece_final = 1 UNION ALL SELECT p.snapshot, p.school_id, f.table_name FROM _se_pending AS p JOIN _se_files AS f ON f.run_id = p.run_id AND f.school_id = p.school_id AND f.resource = p.resource AND f.seq = p.seq JOIN _se_known AS k ON k.table_name = f.table_name WHERE p.mode = 'full' AND p.piece_final = 1) AS x WHERE x.table_name <> 'deletions';
  INSERT INTO _school_export_masked (run_id, school_id, table_name) SELECT DISTINCT m.run_id, m.school_id, m.table_name FROM _se_masked AS m JOIN _se_pending AS p ON m.run_id = p.run_id AND m.school_id = p.school_id AND m.resource = p.resource AND m.seq = p.seq;
  INSERT INTO _school_export_tasks (run_id, school_id, resource, seq, manifest, mode, snapshot, applied_at, merged_at) SELECT run_id, school_id, resource, seq, manifest, mode, CASE WHEN mode = 'full' AND piece_final = 1 THEN snapshot END, CURRENT_TIMESTAMP(), NULL FROM _se_pending UNION ALL SELECT run_id, school_id, '_purge', 0, NULL, NULL, NULL, CURRENT_TIMESTAMP(), NULL FROM _se_pending_purges;
  MERGE INTO achievements AS tgt
USING (SELECT v.id AS id, v.points AS points, v.score AS score, v.comment AS comment, v.parents_notified AS parents_notified, PARSE_JSON(v.details) AS details, v.updated_at AS updated_at, v.updated_at__timezone AS updated_at__timezone, v._school_id AS _school_id, v._region AS _region, v._run_id AS _run_id, v._extracted_at AS _extracted_at, PARSE_JSON(v._extra) AS _extra, ((snap.run_id IS NOT NULL AND v._last_run < snap.run_id) OR (del.deleted_at IS NOT NULL AND (del.restored_at IS NULL OR del.restored_at < del.deleted_at) AND del.deleted_at >= COALESCE(v.updated_at, v._extracted_at) AND v._last_seen <= del._extracted_at)) AS _gone FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r._school_id, r.id ORDER BY r.updated_at DESC NULLS LAST, CASE WHEN m.run_id IS NULL THEN 0 ELSE 1 END, r._extracted_at DESC NULLS LAST, r._run_id DESC NULLS LAST) AS _rn, MAX(r._run_id) OVER (PARTITION BY r._school_id, r.id) AS _last_run, MAX(r._extracted_at) OVER (PARTITION BY r._school_id, r.id) AS _last_seen FROM _raw_achievements AS r LEFT JOIN (SELECT DISTINCT run_id, school_id FROM _school_export_masked WHERE table_name IN ('achievements', 'achievement_students')) AS m ON m.run_id = r._run_id AND m.school_id = r._school_id WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS v LEFT JOIN (SELECT s.school_id, MAX(s.run_id) AS run_id FROM _school_export_snapshots AS s WHERE s.table_name = 'achievements' GROUP BY s.school_id) AS snap ON snap.school_id = v._school_id LEFT JOIN (SELECT dl._school_id, dl.id, dl.deleted_at, dl.restored_at, dl._extracted_at FROM (SELECT x._school_id, x."TABLE", x.id, x.deleted_at, x.restored_at, x._extracted_at, ROW_NUMBER() OVER (PARTITION BY x._school_id, x."TABLE", x.id ORDER BY x._extracted_at DESC NULLS LAST, x._run_id DESC NULLS LAST) AS _rn FROM _raw_deletions AS x WHERE x."TABLE" = 'achievements') AS dl WHERE dl._rn = 1) AS del ON del._school_id = v._school_id AND del.id = v.id WHERE v._rn = 1) AS src
ON tgt._school_id IS NOT DISTINCT FROM src._school_id AND tgt.id IS NOT DISTINCT FROM src.id
WHEN MATCHED AND src._gone THEN DELETE
WHEN MATCHED THEN UPDATE SET points = src.points, score = src.score, comment = src.comment, parents_notified = src.parents_notified, details = src.details, updated_at = src.updated_at, updated_at__timezone = src.updated_at__timezone, _region = src._region, _run_id = src._run_id, _extracted_at = src._extracted_at, _extra = src._extra
WHEN NOT MATCHED AND NOT src._gone THEN INSERT (id, points, score, comment, parents_notified, details, updated_at, updated_at__timezone, _school_id, _region, _run_id, _extracted_at, _extra) VALUES (src.id, src.points, src.score, src.comment, src.parents_notified, src.details, src.updated_at, src.updated_at__timezone, src._school_id, src._region, src._run_id, src._extracted_at, src._extra);
  MERGE INTO school_meta AS tgt
USING (SELECT v.online AS online, v.approved AS approved, v._school_id AS _school_id, v._region AS _region, v._run_id AS _run_id, v._extracted_at AS _extracted_at, PARSE_JSON(v._extra) AS _extra, ((snap.run_id IS NOT NULL AND v._last_run < snap.run_id)) AS _gone FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r._school_id ORDER BY r._extracted_at DESC NULLS LAST, r._run_id DESC NULLS LAST) AS _rn, MAX(r._run_id) OVER (PARTITION BY r._school_id) AS _last_run, MAX(r._extracted_at) OVER (PARTITION BY r._school_id) AS _last_seen FROM _raw_school_meta AS r WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS v LEFT JOIN (SELECT s.school_id, MAX(s.run_id) AS run_id FROM _school_export_snapshots AS s WHERE s.table_name = 'school_meta' GROUP BY s.school_id) AS snap ON snap.school_id = v._school_id WHERE v._rn = 1) AS src
ON tgt._school_id IS NOT DISTINCT FROM src._school_id
WHEN MATCHED AND src._gone THEN DELETE
WHEN MATCHED THEN UPDATE SET online = src.online, approved = src.approved, _region = src._region, _run_id = src._run_id, _extracted_at = src._extracted_at, _extra = src._extra
WHEN NOT MATCHED AND NOT src._gone THEN INSERT (online, approved, _school_id, _region, _run_id, _extracted_at, _extra) VALUES (src.online, src.approved, src._school_id, src._region, src._run_id, src._extracted_at, src._extra);
  MERGE INTO school_permissions AS tgt
USING (SELECT v.identity AS identity, v.approved AS approved, v._school_id AS _school_id, v._region AS _region, v._run_id AS _run_id, v._extracted_at AS _extracted_at, PARSE_JSON(v._extra) AS _extra, ((snap.run_id IS NOT NULL AND v._last_run < snap.run_id)) AS _gone FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r._school_id, r.identity ORDER BY r._extracted_at DESC NULLS LAST, r._run_id DESC NULLS LAST) AS _rn, MAX(r._run_id) OVER (PARTITION BY r._school_id, r.identity) AS _last_run, MAX(r._extracted_at) OVER (PARTITION BY r._school_id, r.identity) AS _last_seen FROM _raw_school_permissions AS r WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS v LEFT JOIN (SELECT s.school_id, MAX(s.run_id) AS run_id FROM _school_export_snapshots AS s WHERE s.table_name = 'school_permissions' GROUP BY s.school_id) AS snap ON snap.school_id = v._school_id WHERE v._rn = 1) AS src
ON tgt._school_id IS NOT DISTINCT FROM src._school_id AND tgt.identity IS NOT DISTINCT FROM src.identity
WHEN MATCHED AND src._gone THEN DELETE
WHEN MATCHED THEN UPDATE SET approved = src.approved, _region = src._region, _run_id = src._run_id, _extracted_at = src._extracted_at, _extra = src._extra
WHEN NOT MATCHED AND NOT src._gone THEN INSERT (identity, approved, _school_id, _region, _run_id, _extracted_at, _extra) VALUES (src.identity, src.approved, src._school_id, src._region, src._run_id, src._extracted_at, src._extra);
  MERGE INTO deletions AS tgt
USING (SELECT v.type AS type, v.id AS id, v.mis_id AS mis_id, v.deleted_at AS deleted_at, v.deleted_at__timezone AS deleted_at__timezone, v.restored_at AS restored_at, v.restored_at__timezone AS restored_at__timezone, v.detected_by AS detected_by, v."TABLE" AS "TABLE", v._school_id AS _school_id, v._region AS _region, v._run_id AS _run_id, v._extracted_at AS _extracted_at, PARSE_JSON(v._extra) AS _extra, ((snap.run_id IS NOT NULL AND v._last_run < snap.run_id)) AS _gone FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r._school_id, r.type, r.id ORDER BY r._extracted_at DESC NULLS LAST, r._run_id DESC NULLS LAST) AS _rn, MAX(r._run_id) OVER (PARTITION BY r._school_id, r.type, r.id) AS _last_run, MAX(r._extracted_at) OVER (PARTITION BY r._school_id, r.type, r.id) AS _last_seen FROM _raw_deletions AS r WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS v LEFT JOIN (SELECT s.school_id, MAX(s.run_id) AS run_id FROM _school_export_snapshots AS s WHERE s.table_name = 'deletions' GROUP BY s.school_id) AS snap ON snap.school_id = v._school_id WHERE v._rn = 1) AS src
ON tgt._school_id IS NOT DISTINCT FROM src._school_id AND tgt.type IS NOT DISTINCT FROM src.type AND tgt.id IS NOT DISTINCT FROM src.id
WHEN MATCHED AND src._gone THEN DELETE
WHEN MATCHED THEN UPDATE SET mis_id = src.mis_id, deleted_at = src.deleted_at, deleted_at__timezone = src.deleted_at__timezone, restored_at = src.restored_at, restored_at__timezone = src.restored_at__timezone, detected_by = src.detected_by, "TABLE" = src."TABLE", _region = src._region, _run_id = src._run_id, _extracted_at = src._extracted_at, _extra = src._extra
WHEN NOT MATCHED AND NOT src._gone THEN INSERT (type, id, mis_id, deleted_at, deleted_at__timezone, restored_at, restored_at__timezone, detected_by, "TABLE", _school_id, _region, _run_id, _extracted_at, _extra) VALUES (src.type, src.id, src.mis_id, src.deleted_at, src.deleted_at__timezone, src.restored_at, src.restored_at__timezone, src.detected_by, src."TABLE", src._school_id, src._region, src._run_id, src._extracted_at, src._extra);
  MERGE INTO achievement_students AS tgt
USING (SELECT v.achievement_id AS achievement_id, v.id AS id, v._school_id AS _school_id, v._region AS _region, v._run_id AS _run_id, v._extracted_at AS _extracted_at, PARSE_JSON(v._extra) AS _extra, (v._parent_run IS NULL) AS _gone FROM (SELECT r.*, p._run_id AS _parent_run, ROW_NUMBER() OVER (PARTITION BY r._school_id, r.achievement_id, r.id ORDER BY CASE WHEN p._run_id IS NULL THEN 1 ELSE 0 END, r._extracted_at DESC NULLS LAST, r._run_id DESC NULLS LAST) AS _rn FROM _raw_achievement_students AS r LEFT JOIN achievements AS p ON p._school_id = r._school_id AND p.id = r.achievement_id AND p._run_id = r._run_id WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS v WHERE v._rn = 1) AS src
ON tgt._school_id IS NOT DISTINCT FROM src._school_id AND tgt.achievement_id IS NOT DISTINCT FROM src.achievement_id AND tgt.id IS NOT DISTINCT FROM src.id
WHEN MATCHED AND src._gone THEN DELETE
WHEN MATCHED THEN UPDATE SET _region = src._region, _run_id = src._run_id, _extracted_at = src._extracted_at, _extra = src._extra
WHEN NOT MATCHED AND NOT src._gone THEN INSERT (achievement_id, id, _school_id, _region, _run_id, _extracted_at, _extra) VALUES (src.achievement_id, src.id, src._school_id, src._region, src._run_id, src._extracted_at, src._extra);
  DELETE FROM _raw_achievements AS r WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL) AND NOT EXISTS (SELECT 1 FROM (SELECT x._school_id, x.id, x._run_id, x._extracted_at, x.updated_at, ROW_NUMBER() OVER (PARTITION BY x._school_id, x.id ORDER BY x.updated_at DESC NULLS LAST, CASE WHEN m.run_id IS NULL THEN 0 ELSE 1 END, x._extracted_at DESC NULLS LAST, x._run_id DESC NULLS LAST) AS _rn, MAX(x._run_id) OVER (PARTITION BY x._school_id, x.id) AS _last_run FROM _raw_achievements AS x LEFT JOIN (SELECT DISTINCT run_id, school_id FROM _school_export_masked WHERE table_name IN ('achievements', 'achievement_students')) AS m ON m.run_id = x._run_id AND m.school_id = x._school_id WHERE x._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS k WHERE (k._rn = 1 OR k._run_id = k._last_run) AND k._school_id = r._school_id AND (k.id = r.id OR (k.id IS NULL AND r.id IS NULL)) AND (k._run_id = r._run_id OR (k._run_id IS NULL AND r._run_id IS NULL)) AND (k._extracted_at = r._extracted_at OR (k._extracted_at IS NULL AND r._extracted_at IS NULL)) AND (k.updated_at = r.updated_at OR (k.updated_at IS NULL AND r.updated_at IS NULL)));
  DELETE FROM _raw_school_meta AS r WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL) AND NOT EXISTS (SELECT 1 FROM (SELECT x._school_id, x._run_id, x._extracted_at, ROW_NUMBER() OVER (PARTITION BY x._school_id ORDER BY x._extracted_at DESC NULLS LAST, x._run_id DESC NULLS LAST) AS _rn, MAX(x._run_id) OVER (PARTITION BY x._school_id) AS _last_run FROM _raw_school_meta AS x WHERE x._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS k WHERE (k._rn = 1 OR k._run_id = k._last_run) AND k._school_id = r._school_id AND (k._run_id = r._run_id OR (k._run_id IS NULL AND r._run_id IS NULL)) AND (k._extracted_at = r._extracted_at OR (k._extracted_at IS NULL AND r._extracted_at IS NULL)));
  DELETE FROM _raw_school_permissions AS r WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL) AND NOT EXISTS (SELECT 1 FROM (SELECT x._school_id, x.identity, x._run_id, x._extracted_at, ROW_NUMBER() OVER (PARTITION BY x._school_id, x.identity ORDER BY x._extracted_at DESC NULLS LAST, x._run_id DESC NULLS LAST) AS _rn, MAX(x._run_id) OVER (PARTITION BY x._school_id, x.identity) AS _last_run FROM _raw_school_permissions AS x WHERE x._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL)) AS k WHERE (k._rn = 1 OR k._run_id = k._last_run) AND k._school_id = r._school_id AND (k.identity = r.identity OR (k.identity IS NULL AND r.identity IS NULL)) AND (k._run_id = r._run_id OR (k._run_id IS NULL AND r._run_id IS NULL)) AND (k._extracted_at = r._extracted_at OR (k._extracted_at IS NULL AND r._extracted_at IS NULL)));
  DELETE FROM _raw_achievement_students AS r WHERE r._school_id IN (SELECT school_id FROM _school_export_tasks WHERE merged_at IS NULL) AND NOT EXISTS (SELECT 1 FROM _raw_achievements AS p WHERE p._school_id = r._school_id AND p.id = r.achievement_id AND p._run_id = r._run_id);
  DELETE FROM _school_export_snapshots AS s WHERE s.run_id < (SELECT MAX(x.run_id) FROM _school_export_snapshots AS x WHERE x.school_id = s.school_id AND x.table_name = s.table_name);
  UPDATE _school_export_tasks SET merged_at = CURRENT_TIMESTAMP() WHERE merged_at IS NULL;
  COMMIT;
  RETURN 'school-export: load applied';
EXCEPTION
  WHEN OTHER THEN
    ROLLBACK;
    RAISE;
END;
$$;
