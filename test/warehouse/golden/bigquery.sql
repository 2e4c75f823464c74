-- school-export: bigquery load of gs://bucket/exports/ into schools_ds
-- Static: run it unchanged after every export. It applies each committed task not applied yet (see docs/warehouse.md).
DECLARE se_message STRING;

CREATE SCHEMA IF NOT EXISTS `schools_ds`;

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_tasks` (`run_id` STRING NOT NULL, `school_id` STRING NOT NULL, `resource` STRING NOT NULL, `seq` INT64 NOT NULL, `manifest` STRING, `mode` STRING, `snapshot` STRING, `applied_at` TIMESTAMP, `merged_at` TIMESTAMP);

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_snapshots` (`run_id` STRING NOT NULL, `school_id` STRING NOT NULL, `table_name` STRING NOT NULL);

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_masked` (`run_id` STRING NOT NULL, `school_id` STRING NOT NULL, `table_name` STRING NOT NULL, `column_name` STRING NOT NULL);

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_guarded` (`table_name` STRING NOT NULL, `column_name` STRING NOT NULL);

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_touched` (`school_id` STRING NOT NULL, `table_name` STRING NOT NULL);

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_superseded` (`run_id` STRING NOT NULL, `school_id` STRING NOT NULL, `table_name` STRING NOT NULL, `superseded_at` TIMESTAMP, `superseded_by` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds._raw_achievements` (`id` STRING, `points` INT64, `score` FLOAT64, `comment` STRING, `parents_notified` BOOL, `details` STRING, `updated_at` TIMESTAMP, `updated_at__timezone` STRING, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING) CLUSTER BY `_school_id`, `id`;

CREATE TABLE IF NOT EXISTS `schools_ds.achievements` (`id` STRING, `points` INT64, `score` FLOAT64, `comment` STRING, `parents_notified` BOOL, `details` STRING, `updated_at` TIMESTAMP, `updated_at__timezone` STRING, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING) CLUSTER BY `_school_id`, `id`;

CREATE TABLE IF NOT EXISTS `schools_ds._raw_school_meta` (`online` BOOL, `approved` BOOL, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING) CLUSTER BY `_school_id`;

CREATE TABLE IF NOT EXISTS `schools_ds.school_meta` (`online` BOOL, `approved` BOOL, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING) CLUSTER BY `_school_id`;

CREATE TABLE IF NOT EXISTS `schools_ds._raw_school_permissions` (`identity` STRING, `approved` BOOL, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING) CLUSTER BY `_school_id`, `identity`;

CREATE TABLE IF NOT EXISTS `schools_ds.school_permissions` (`identity` STRING, `approved` BOOL, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING) CLUSTER BY `_school_id`, `identity`;

CREATE TABLE IF NOT EXISTS `schools_ds._raw_deletions` (`type` STRING, `id` STRING, `mis_id` STRING, `deleted_at` TIMESTAMP, `deleted_at__timezone` STRING, `restored_at` TIMESTAMP, `restored_at__timezone` STRING, `detected_by` STRING, `table` STRING, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING) CLUSTER BY `_school_id`, `type`, `id`;

CREATE TABLE IF NOT EXISTS `schools_ds.deletions` (`type` STRING, `id` STRING, `mis_id` STRING, `deleted_at` TIMESTAMP, `deleted_at__timezone` STRING, `restored_at` TIMESTAMP, `restored_at__timezone` STRING, `detected_by` STRING, `table` STRING, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING) CLUSTER BY `_school_id`, `type`, `id`;

CREATE TABLE IF NOT EXISTS `schools_ds._raw_achievement_students` (`achievement_id` STRING, `id` STRING, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING) CLUSTER BY `_school_id`, `achievement_id`, `id`;

CREATE TABLE IF NOT EXISTS `schools_ds.achievement_students` (`achievement_id` STRING, `id` STRING, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING) CLUSTER BY `_school_id`, `achievement_id`, `id`;

CREATE OR REPLACE EXTERNAL TABLE `schools_ds._school_export_manifest_lines` (`line` STRING) OPTIONS (format = 'CSV', uris = ['gs://bucket/exports/_manifests/*'], field_delimiter = '\t', quote = '', max_bad_records = 0);

CREATE OR REPLACE TEMP TABLE `_se_docs` AS SELECT REGEXP_EXTRACT(_FILE_NAME, r'_manifests/[^/]+(?:/[^/]+)?$') AS `manifest`, `line` AS `doc` FROM `schools_ds._school_export_manifest_lines` WHERE ENDS_WITH(_FILE_NAME, '.json');

CREATE OR REPLACE TEMP TABLE `_se_tasks` AS SELECT d.`manifest` AS `manifest`, JSON_VALUE(d.doc, '$.run_id') AS `run_id`, CASE WHEN JSON_VALUE(d.doc, '$.personal_data.person_id') = 'pseudonymise' THEN 1 ELSE 0 END AS `pseudonymised`, JSON_VALUE(t, '$.school_id') AS `school_id`, JSON_VALUE(t, '$.resource') AS `resource`, JSON_VALUE(t, '$.status') AS `status`, JSON_VALUE(t, '$.mode') AS `mode`, COALESCE(CAST(JSON_VALUE(t, '$.checkpoint.seq') AS INT64), 0) AS `seq`, CASE WHEN JSON_VALUE(t, '$.checkpoint.final') = 'false' OR JSON_VALUE(t, '$.status') <> 'committed' THEN 0 ELSE 1 END AS `piece_final`, COALESCE(JSON_VALUE(t, '$.checkpoint.snapshot'), JSON_VALUE(d.doc, '$.run_id')) AS `snapshot`, JSON_VALUE(t, '$.unchanged_since') AS `since`, t AS `task` FROM `_se_docs` AS d, UNNEST(JSON_QUERY_ARRAY(d.doc, '$.tasks')) AS t;

CREATE OR REPLACE TEMP TABLE `_se_files` AS SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, JSON_VALUE(f, '$.table') AS `table_name`, JSON_VALUE(f, '$.path') AS `path`, CAST(JSON_VALUE(f, '$.rows') AS INT64) AS `row_count`, JSON_VALUE(f, '$.sha256') AS `sha256` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.files')) AS f;

CREATE OR REPLACE TEMP TABLE `_se_purges` AS SELECT COALESCE(JSON_VALUE(p, '$.before_run'), JSON_VALUE(d.doc, '$.run_id')) AS `run_id`, JSON_VALUE(p, '$.school_id') AS `school_id` FROM `_se_docs` AS d, UNNEST(JSON_QUERY_ARRAY(d.doc, '$.purged')) AS p;

CREATE OR REPLACE TEMP TABLE `_se_masked` AS SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'achievements' AS `table_name`, JSON_VALUE(mc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_masked.achievements')) AS mc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'school_meta' AS `table_name`, JSON_VALUE(mc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_masked.school_meta')) AS mc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'school_permissions' AS `table_name`, JSON_VALUE(mc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_masked.school_permissions')) AS mc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'deletions' AS `table_name`, JSON_VALUE(mc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_masked.deletions')) AS mc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'achievement_students' AS `table_name`, JSON_VALUE(mc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_masked.achievement_students')) AS mc;

CREATE OR REPLACE TEMP TABLE `_se_guarded` AS SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'achievements' AS `table_name`, JSON_VALUE(gc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_guarded.achievements')) AS gc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'school_meta' AS `table_name`, JSON_VALUE(gc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_guarded.school_meta')) AS gc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'school_permissions' AS `table_name`, JSON_VALUE(gc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_guarded.school_permissions')) AS gc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'deletions' AS `table_name`, JSON_VALUE(gc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_guarded.deletions')) AS gc UNION ALL SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, 'achievement_students' AS `table_name`, JSON_VALUE(gc, '$') AS `column_name` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.scope_guarded.achievement_students')) AS gc;

CREATE OR REPLACE TEMP TABLE `_se_sources` AS SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, JSON_VALUE(cs, '$.path') AS `source_path`, JSON_VALUE(cs, '$.run_id') AS `source_run`, COALESCE(CAST(JSON_VALUE(cs, '$.seq') AS INT64), 0) AS `source_seq`, CAST(JSON_VALUE(cs, '$.rows') AS INT64) AS `row_count` FROM `_se_tasks` AS t, UNNEST(JSON_QUERY_ARRAY(t.task, '$.compaction.sources')) AS cs WHERE t.`status` = 'compacted';

CREATE OR REPLACE TEMP TABLE `_se_known` AS SELECT 'achievements' AS `table_name` UNION ALL SELECT 'school_meta' AS `table_name` UNION ALL SELECT 'school_permissions' AS `table_name` UNION ALL SELECT 'deletions' AS `table_name` UNION ALL SELECT 'achievement_students' AS `table_name`;

CREATE OR REPLACE TEMP TABLE `_se_moved` AS SELECT x.`source_path`, x.`source_run` AS `run_id`, x.`school_id`, x.`row_count`, f.`table_name`, f.`path`, f.`sha256` FROM (SELECT s.*, ROW_NUMBER() OVER (PARTITION BY s.`source_path` ORDER BY s.`run_id` DESC, s.`seq` DESC) AS `_rn` FROM `_se_sources` AS s) AS x JOIN `_se_files` AS f ON f.`run_id` = x.`run_id` AND f.`school_id` = x.`school_id` AND f.`resource` = x.`resource` AND f.`seq` = x.`seq` WHERE x.`_rn` = 1;

CREATE OR REPLACE TEMP TABLE `_se_pending` AS SELECT t.`run_id`, t.`school_id`, t.`resource`, t.`seq`, MIN(t.`manifest`) AS `manifest`, MIN(t.`mode`) AS `mode`, MIN(t.`piece_final`) AS `piece_final`, MIN(t.`snapshot`) AS `snapshot`, MIN(t.`pseudonymised`) AS `pseudonymised` FROM `_se_tasks` AS t WHERE t.`status` IN ('committed', 'unchanged') AND NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks` AS a WHERE a.`run_id` = t.`run_id` AND a.`school_id` = t.`school_id` AND a.`resource` = t.`resource` AND a.`seq` = t.`seq`) AND NOT EXISTS (SELECT 1 FROM `_se_purges` AS p WHERE p.`school_id` = t.`school_id` AND t.`run_id` < p.`run_id`) GROUP BY t.`run_id`, t.`school_id`, t.`resource`, t.`seq`;

CREATE OR REPLACE TEMP TABLE `_se_pending_files` AS SELECT DISTINCT f.`table_name`, f.`path`, f.`sha256`, f.`row_count`, f.`run_id`, f.`school_id`, 1 AS `keep` FROM `_se_files` AS f JOIN `_se_pending` AS t ON f.`run_id` = t.`run_id` AND f.`school_id` = t.`school_id` AND f.`resource` = t.`resource` AND f.`seq` = t.`seq` JOIN `_se_known` AS k ON k.`table_name` = f.`table_name` WHERE NOT EXISTS (SELECT 1 FROM `_se_moved` AS mv WHERE mv.`source_path` = f.`path`) AND NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_superseded` AS sx WHERE sx.`run_id` = f.`run_id` AND sx.`school_id` = f.`school_id` AND sx.`table_name` = f.`table_name`) UNION ALL SELECT mv.`table_name`, mv.`path`, mv.`sha256`, SUM(mv.`row_count`), mv.`run_id`, mv.`school_id`, MAX(CASE WHEN ps.`source_path` IS NULL THEN 0 ELSE 1 END) FROM `_se_moved` AS mv JOIN `_se_known` AS k ON k.`table_name` = mv.`table_name` LEFT JOIN (SELECT DISTINCT m2.`source_path`, m2.`path` FROM `_se_moved` AS m2 JOIN `_se_files` AS f ON f.`path` = m2.`source_path` JOIN `_se_pending` AS t ON f.`run_id` = t.`run_id` AND f.`school_id` = t.`school_id` AND f.`resource` = t.`resource` AND f.`seq` = t.`seq` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_superseded` AS sx WHERE sx.`run_id` = f.`run_id` AND sx.`school_id` = f.`school_id` AND sx.`table_name` = f.`table_name`)) AS ps ON ps.`source_path` = mv.`source_path` WHERE mv.`path` IN (SELECT ps2.`path` FROM (SELECT DISTINCT m2.`source_path`, m2.`path` FROM `_se_moved` AS m2 JOIN `_se_files` AS f ON f.`path` = m2.`source_path` JOIN `_se_pending` AS t ON f.`run_id` = t.`run_id` AND f.`school_id` = t.`school_id` AND f.`resource` = t.`resource` AND f.`seq` = t.`seq` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_superseded` AS sx WHERE sx.`run_id` = f.`run_id` AND sx.`school_id` = f.`school_id` AND sx.`table_name` = f.`table_name`)) AS ps2) GROUP BY mv.`table_name`, mv.`path`, mv.`sha256`, mv.`run_id`, mv.`school_id`;

CREATE OR REPLACE TEMP TABLE `_se_pending_purges` AS SELECT DISTINCT p.`run_id`, p.`school_id` FROM `_se_purges` AS p WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks` AS a WHERE a.`run_id` = p.`run_id` AND a.`school_id` = p.`school_id` AND a.`resource` = '_purge');

SET se_message = (SELECT 'school-export: the manifest of run ' || `run_id` || ' lists an unsafe or misplaced file path; nothing was loaded' FROM (SELECT `run_id`, `path` FROM `_se_pending_files` WHERE NOT (REGEXP_CONTAINS(`path`, '^(?:([A-Za-z0-9_=-][A-Za-z0-9_=.-]*/)*[A-Za-z0-9_=-][A-Za-z0-9_=.-]*)$')) OR SUBSTR(`path`, 1, LENGTH(`table_name`) + 1) <> `table_name` || '/') AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

SET se_message = (SELECT 'school-export: run ' || `run_id` || ' wrote ' || `path` || ': this load reads Parquet; export with --format parquet (or load with warehouse load)' FROM (SELECT `run_id`, `path` FROM `_se_pending_files` WHERE SUBSTR(`path`, LENGTH(`path`) - 7) <> '.parquet') AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

SET se_message = (SELECT 'school-export: ' || `run_id` || '/' || `school_id` || '/' || `table_name` || ' (_school_export_superseded): no later full read of ' || `table_name` || ' at ' || `school_id` || ': run school-export run --full-refresh --schools ' || `school_id` || ' --resources ' || `resource` || ' first; nothing was loaded' FROM (SELECT * FROM (SELECT s.`run_id`, s.`school_id`, s.`table_name`, MIN(f.`resource`) AS `resource`, MIN(j.`run_id`) AS `by_run` FROM `schools_ds._school_export_superseded` AS s JOIN `_se_files` AS f ON f.`run_id` = s.`run_id` AND f.`school_id` = s.`school_id` AND f.`table_name` = s.`table_name` JOIN `_se_pending` AS p ON f.`run_id` = p.`run_id` AND f.`school_id` = p.`school_id` AND f.`resource` = p.`resource` AND f.`seq` = p.`seq` LEFT JOIN (SELECT l.`run_id`, l.`school_id`, l.`resource`, CASE WHEN l.`status` = 'unchanged' THEN l.`since` ELSE l.`snapshot` END AS `after` FROM `_se_tasks` AS l WHERE (l.`status` = 'committed' AND l.`mode` = 'full' AND l.`piece_final` = 1) OR l.`status` = 'unchanged' UNION ALL SELECT a.`run_id`, a.`school_id`, a.`resource`, a.`snapshot` FROM `schools_ds._school_export_tasks` AS a WHERE a.`snapshot` IS NOT NULL) AS j ON j.`school_id` = s.`school_id` AND j.`resource` = f.`resource` AND j.`after` > s.`run_id` GROUP BY s.`run_id`, s.`school_id`, s.`table_name`) AS sp WHERE sp.`by_run` IS NULL) AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

CREATE OR REPLACE TABLE `schools_ds._stage_achievements` AS SELECT * FROM `schools_ds._raw_achievements` WHERE 1 = 0;

CREATE OR REPLACE TABLE `schools_ds._stage_school_meta` AS SELECT * FROM `schools_ds._raw_school_meta` WHERE 1 = 0;

CREATE OR REPLACE TABLE `schools_ds._stage_school_permissions` AS SELECT * FROM `schools_ds._raw_school_permissions` WHERE 1 = 0;

CREATE OR REPLACE TABLE `schools_ds._stage_deletions` AS SELECT * FROM `schools_ds._raw_deletions` WHERE 1 = 0;

CREATE OR REPLACE TABLE `schools_ds._stage_achievement_students` AS SELECT * FROM `schools_ds._raw_achievement_students` WHERE 1 = 0;

FOR f IN (SELECT STRING_AGG(CONCAT("'", 'gs://bucket/exports/', `path`, "'"), ', ') AS uris FROM (SELECT `path`, DIV(ROW_NUMBER() OVER (ORDER BY `path`) - 1, 2000) AS chunk FROM (SELECT DISTINCT `path` FROM `_se_pending_files` WHERE `table_name` = 'achievements')) GROUP BY chunk) DO
  EXECUTE IMMEDIATE CONCAT('LOAD DATA INTO `schools_ds._stage_achievements` FROM FILES (format = ''PARQUET'', uris = [', f.uris, '])');
END FOR;

FOR f IN (SELECT STRING_AGG(CONCAT("'", 'gs://bucket/exports/', `path`, "'"), ', ') AS uris FROM (SELECT `path`, DIV(ROW_NUMBER() OVER (ORDER BY `path`) - 1, 2000) AS chunk FROM (SELECT DISTINCT `path` FROM `_se_pending_files` WHERE `table_name` = 'school_meta')) GROUP BY chunk) DO
  EXECUTE IMMEDIATE CONCAT('LOAD DATA INTO `schools_ds._stage_school_meta` FROM FILES (format = ''PARQUET'', uris = [', f.uris, '])');
END FOR;

FOR f IN (SELECT STRING_AGG(CONCAT("'", 'gs://bucket/exports/', `path`, "'"), ', ') AS uris FROM (SELECT `path`, DIV(ROW_NUMBER() OVER (ORDER BY `path`) - 1, 2000) AS chunk FROM (SELECT DISTINCT `path` FROM `_se_pending_files` WHERE `table_name` = 'school_permissions')) GROUP BY chunk) DO
  EXECUTE IMMEDIATE CONCAT('LOAD DATA INTO `schools_ds._stage_school_permissions` FROM FILES (format = ''PARQUET'', uris = [', f.uris, '])');
END FOR;

FOR f IN (SELECT STRING_AGG(CONCAT("'", 'gs://bucket/exports/', `path`, "'"), ', ') AS uris FROM (SELECT `path`, DIV(ROW_NUMBER() OVER (ORDER BY `path`) - 1, 2000) AS chunk FROM (SELECT DISTINCT `path` FROM `_se_pending_files` WHERE `table_name` = 'deletions')) GROUP BY chunk) DO
  EXECUTE IMMEDIATE CONCAT('LOAD DATA INTO `schools_ds._stage_deletions` FROM FILES (format = ''PARQUET'', uris = [', f.uris, '])');
END FOR;

FOR f IN (SELECT STRING_AGG(CONCAT("'", 'gs://bucket/exports/', `path`, "'"), ', ') AS uris FROM (SELECT `path`, DIV(ROW_NUMBER() OVER (ORDER BY `path`) - 1, 2000) AS chunk FROM (SELECT DISTINCT `path` FROM `_se_pending_files` WHERE `table_name` = 'achievement_students')) GROUP BY chunk) DO
  EXECUTE IMMEDIATE CONCAT('LOAD DATA INTO `schools_ds._stage_achievement_students` FROM FILES (format = ''PARQUET'', uris = [', f.uris, '])');
END FOR;

SET se_message = (SELECT 'school-export: achievements files of run ' || `run_id` || ', school ' || `school_id` || ' hold ' || CAST(`staged` AS STRING) || ' rows, the manifests list ' || CAST(`expected` AS STRING) || ': a file changed after its run committed; nothing was loaded' FROM (SELECT COALESCE(e.`run_id`, s.`_run_id`) AS `run_id`, COALESCE(e.`school_id`, s.`_school_id`) AS `school_id`, COALESCE(e.`n`, 0) AS `expected`, COALESCE(s.`n`, 0) AS `staged` FROM (SELECT `run_id`, `school_id`, SUM(`row_count`) AS `n` FROM `_se_pending_files` WHERE `table_name` = 'achievements' GROUP BY `run_id`, `school_id`) AS e FULL OUTER JOIN (SELECT `_run_id`, `_school_id`, COUNT(*) AS `n` FROM `schools_ds._stage_achievements` GROUP BY `_run_id`, `_school_id`) AS s ON s.`_run_id` = e.`run_id` AND s.`_school_id` = e.`school_id` WHERE COALESCE(e.`n`, 0) <> COALESCE(s.`n`, 0)) AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

DELETE FROM `schools_ds._stage_achievements` s WHERE NOT EXISTS (SELECT 1 FROM `_se_pending_files` AS pf WHERE pf.`table_name` = 'achievements' AND pf.`keep` = 1 AND pf.`run_id` = s.`_run_id` AND pf.`school_id` = s.`_school_id`);

SET se_message = (SELECT 'school-export: school_meta files of run ' || `run_id` || ', school ' || `school_id` || ' hold ' || CAST(`staged` AS STRING) || ' rows, the manifests list ' || CAST(`expected` AS STRING) || ': a file changed after its run committed; nothing was loaded' FROM (SELECT COALESCE(e.`run_id`, s.`_run_id`) AS `run_id`, COALESCE(e.`school_id`, s.`_school_id`) AS `school_id`, COALESCE(e.`n`, 0) AS `expected`, COALESCE(s.`n`, 0) AS `staged` FROM (SELECT `run_id`, `school_id`, SUM(`row_count`) AS `n` FROM `_se_pending_files` WHERE `table_name` = 'school_meta' GROUP BY `run_id`, `school_id`) AS e FULL OUTER JOIN (SELECT `_run_id`, `_school_id`, COUNT(*) AS `n` FROM `schools_ds._stage_school_meta` GROUP BY `_run_id`, `_school_id`) AS s ON s.`_run_id` = e.`run_id` AND s.`_school_id` = e.`school_id` WHERE COALESCE(e.`n`, 0) <> COALESCE(s.`n`, 0)) AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

DELETE FROM `schools_ds._stage_school_meta` s WHERE NOT EXISTS (SELECT 1 FROM `_se_pending_files` AS pf WHERE pf.`table_name` = 'school_meta' AND pf.`keep` = 1 AND pf.`run_id` = s.`_run_id` AND pf.`school_id` = s.`_school_id`);

SET se_message = (SELECT 'school-export: school_permissions files of run ' || `run_id` || ', school ' || `school_id` || ' hold ' || CAST(`staged` AS STRING) || ' rows, the manifests list ' || CAST(`expected` AS STRING) || ': a file changed after its run committed; nothing was loaded' FROM (SELECT COALESCE(e.`run_id`, s.`_run_id`) AS `run_id`, COALESCE(e.`school_id`, s.`_school_id`) AS `school_id`, COALESCE(e.`n`, 0) AS `expected`, COALESCE(s.`n`, 0) AS `staged` FROM (SELECT `run_id`, `school_id`, SUM(`row_count`) AS `n` FROM `_se_pending_files` WHERE `table_name` = 'school_permissions' GROUP BY `run_id`, `school_id`) AS e FULL OUTER JOIN (SELECT `_run_id`, `_school_id`, COUNT(*) AS `n` FROM `schools_ds._stage_school_permissions` GROUP BY `_run_id`, `_school_id`) AS s ON s.`_run_id` = e.`run_id` AND s.`_school_id` = e.`school_id` WHERE COALESCE(e.`n`, 0) <> COALESCE(s.`n`, 0)) AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

DELETE FROM `schools_ds._stage_school_permissions` s WHERE NOT EXISTS (SELECT 1 FROM `_se_pending_files` AS pf WHERE pf.`table_name` = 'school_permissions' AND pf.`keep` = 1 AND pf.`run_id` = s.`_run_id` AND pf.`school_id` = s.`_school_id`);

SET se_message = (SELECT 'school-export: deletions files of run ' || `run_id` || ', school ' || `school_id` || ' hold ' || CAST(`staged` AS STRING) || ' rows, the manifests list ' || CAST(`expected` AS STRING) || ': a file changed after its run committed; nothing was loaded' FROM (SELECT COALESCE(e.`run_id`, s.`_run_id`) AS `run_id`, COALESCE(e.`school_id`, s.`_school_id`) AS `school_id`, COALESCE(e.`n`, 0) AS `expected`, COALESCE(s.`n`, 0) AS `staged` FROM (SELECT `run_id`, `school_id`, SUM(`row_count`) AS `n` FROM `_se_pending_files` WHERE `table_name` = 'deletions' GROUP BY `run_id`, `school_id`) AS e FULL OUTER JOIN (SELECT `_run_id`, `_school_id`, COUNT(*) AS `n` FROM `schools_ds._stage_deletions` GROUP BY `_run_id`, `_school_id`) AS s ON s.`_run_id` = e.`run_id` AND s.`_school_id` = e.`school_id` WHERE COALESCE(e.`n`, 0) <> COALESCE(s.`n`, 0)) AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

DELETE FROM `schools_ds._stage_deletions` s WHERE NOT EXISTS (SELECT 1 FROM `_se_pending_files` AS pf WHERE pf.`table_name` = 'deletions' AND pf.`keep` = 1 AND pf.`run_id` = s.`_run_id` AND pf.`school_id` = s.`_school_id`);

SET se_message = (SELECT 'school-export: achievement_students files of run ' || `run_id` || ', school ' || `school_id` || ' hold ' || CAST(`staged` AS STRING) || ' rows, the manifests list ' || CAST(`expected` AS STRING) || ': a file changed after its run committed; nothing was loaded' FROM (SELECT COALESCE(e.`run_id`, s.`_run_id`) AS `run_id`, COALESCE(e.`school_id`, s.`_school_id`) AS `school_id`, COALESCE(e.`n`, 0) AS `expected`, COALESCE(s.`n`, 0) AS `staged` FROM (SELECT `run_id`, `school_id`, SUM(`row_count`) AS `n` FROM `_se_pending_files` WHERE `table_name` = 'achievement_students' GROUP BY `run_id`, `school_id`) AS e FULL OUTER JOIN (SELECT `_run_id`, `_school_id`, COUNT(*) AS `n` FROM `schools_ds._stage_achievement_students` GROUP BY `_run_id`, `_school_id`) AS s ON s.`_run_id` = e.`run_id` AND s.`_school_id` = e.`school_id` WHERE COALESCE(e.`n`, 0) <> COALESCE(s.`n`, 0)) AS q LIMIT 1);
IF se_message IS NOT NULL THEN RAISE USING MESSAGE = se_message; END IF;

DELETE FROM `schools_ds._stage_achievement_students` s WHERE NOT EXISTS (SELECT 1 FROM `_se_pending_files` AS pf WHERE pf.`table_name` = 'achievement_students' AND pf.`keep` = 1 AND pf.`run_id` = s.`_run_id` AND pf.`school_id` = s.`_school_id`);

BEGIN TRANSACTION;

DELETE FROM `schools_ds._raw_achievements` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds.achievements` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds._raw_school_meta` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds.school_meta` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds._raw_school_permissions` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds.school_permissions` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds._raw_deletions` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds.deletions` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds._raw_achievement_students` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds.achievement_students` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds._school_export_snapshots` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

DELETE FROM `schools_ds._school_export_masked` WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_tasks`);

INSERT INTO `schools_ds._raw_achievements` (`id`, `points`, `score`, `comment`, `parents_notified`, `details`, `updated_at`, `updated_at__timezone`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) SELECT `id`, `points`, `score`, `comment`, `parents_notified`, `details`, `updated_at`, `updated_at__timezone`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra` FROM `schools_ds._stage_achievements`;

INSERT INTO `schools_ds._raw_school_meta` (`online`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) SELECT `online`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra` FROM `schools_ds._stage_school_meta`;

INSERT INTO `schools_ds._raw_school_permissions` (`identity`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) SELECT `identity`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra` FROM `schools_ds._stage_school_permissions`;

INSERT INTO `schools_ds._raw_deletions` (`type`, `id`, `mis_id`, `deleted_at`, `deleted_at__timezone`, `restored_at`, `restored_at__timezone`, `detected_by`, `table`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) SELECT `type`, `id`, `mis_id`, `deleted_at`, `deleted_at__timezone`, `restored_at`, `restored_at__timezone`, `detected_by`, `table`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra` FROM `schools_ds._stage_deletions`;

INSERT INTO `schools_ds._raw_achievement_students` (`achievement_id`, `id`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) SELECT `achievement_id`, `id`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra` FROM `schools_ds._stage_achievement_students`;

DELETE FROM `schools_ds._raw_achievements` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds.achievements` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds._raw_school_meta` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds.school_meta` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds._raw_school_permissions` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds.school_permissions` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds._raw_deletions` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds.deletions` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds._raw_achievement_students` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

DELETE FROM `schools_ds.achievement_students` r WHERE EXISTS (SELECT 1 FROM (SELECT `run_id`, `school_id` FROM `_se_pending_purges`) AS p WHERE p.`school_id` = r.`_school_id` AND r.`_run_id` < p.`run_id`);

INSERT INTO `schools_ds._school_export_snapshots` (`run_id`, `school_id`, `table_name`) SELECT DISTINCT x.`run_id`, x.`school_id`, x.`table_name` FROM (SELECT p.`snapshot` AS `run_id`, p.`school_id`, k.`table_name` FROM `_se_pending` AS p JOIN `_se_known` AS k ON k.`table_name` = p.`resource` WHERE p.`mode` = 'full' AND p.`piece_final` = 1 AND NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_superseded` AS sx WHERE sx.`run_id` = p.`run_id` AND sx.`school_id` = p.`school_id` AND sx.`table_name` = k.`table_name`) UNION ALL SELECT p.`snapshot`, p.`school_id`, f.`table_name` FROM `_se_pending` AS p JOIN `_se_files` AS f ON f.`run_id` = p.`run_id` AND f.`school_id` = p.`school_id` AND f.`resource` = p.`resource` AND f.`seq` = p.`seq` JOIN `_se_known` AS k ON k.`table_name` = f.`table_name` WHERE p.`mode` = 'full' AND p.`piece_final` = 1 AND NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_superseded` AS sx WHERE sx.`run_id` = p.`run_id` AND sx.`school_id` = p.`school_id` AND sx.`table_name` = f.`table_name`)) AS x WHERE x.`table_name` <> 'deletions';

INSERT INTO `schools_ds._school_export_masked` (`run_id`, `school_id`, `table_name`, `column_name`) SELECT DISTINCT m.`run_id`, m.`school_id`, m.`table_name`, m.`column_name` FROM `_se_masked` AS m JOIN `_se_pending` AS p ON m.`run_id` = p.`run_id` AND m.`school_id` = p.`school_id` AND m.`resource` = p.`resource` AND m.`seq` = p.`seq`;

INSERT INTO `schools_ds._school_export_guarded` (`table_name`, `column_name`) SELECT DISTINCT g.`table_name`, g.`column_name` FROM `_se_guarded` AS g WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_guarded` AS x WHERE x.`table_name` = g.`table_name` AND x.`column_name` = g.`column_name`);

INSERT INTO `schools_ds._school_export_touched` (`school_id`, `table_name`) SELECT DISTINCT x.`school_id`, x.`table_name` FROM (SELECT pf.`school_id`, pf.`table_name` FROM `_se_pending_files` AS pf WHERE pf.`keep` = 1 UNION ALL SELECT sn.`school_id`, sn.`table_name` FROM (SELECT p.`snapshot` AS `run_id`, p.`school_id`, k.`table_name` FROM `_se_pending` AS p JOIN `_se_known` AS k ON k.`table_name` = p.`resource` WHERE p.`mode` = 'full' AND p.`piece_final` = 1 AND NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_superseded` AS sx WHERE sx.`run_id` = p.`run_id` AND sx.`school_id` = p.`school_id` AND sx.`table_name` = k.`table_name`) UNION ALL SELECT p.`snapshot`, p.`school_id`, f.`table_name` FROM `_se_pending` AS p JOIN `_se_files` AS f ON f.`run_id` = p.`run_id` AND f.`school_id` = p.`school_id` AND f.`resource` = p.`resource` AND f.`seq` = p.`seq` JOIN `_se_known` AS k ON k.`table_name` = f.`table_name` WHERE p.`mode` = 'full' AND p.`piece_final` = 1 AND NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_superseded` AS sx WHERE sx.`run_id` = p.`run_id` AND sx.`school_id` = p.`school_id` AND sx.`table_name` = f.`table_name`)) AS sn UNION ALL SELECT dl.`_school_id`, dl.`table` FROM `schools_ds._stage_deletions` AS dl JOIN `_se_known` AS k ON k.`table_name` = dl.`table`) AS x WHERE NOT EXISTS (SELECT 1 FROM `schools_ds._school_export_touched` AS tt WHERE tt.`school_id` = x.`school_id` AND tt.`table_name` = x.`table_name`);

INSERT INTO `schools_ds._school_export_tasks` (`run_id`, `school_id`, `resource`, `seq`, `manifest`, `mode`, `snapshot`, `applied_at`, `merged_at`) SELECT `run_id`, `school_id`, `resource`, `seq`, `manifest`, `mode`, CASE WHEN `mode` = 'full' AND `piece_final` = 1 THEN `snapshot` END, CURRENT_TIMESTAMP(), NULL FROM `_se_pending` UNION ALL SELECT `run_id`, `school_id`, '_purge', 0, NULL, NULL, NULL, CURRENT_TIMESTAMP(), NULL FROM `_se_pending_purges`;

MERGE INTO `schools_ds.achievements` AS tgt
USING (SELECT v.`id` AS `id`, v.`_filled__points` AS `points`, v.`_filled__score` AS `score`, v.`_filled__comment` AS `comment`, v.`_filled__parents_notified` AS `parents_notified`, v.`_filled__details` AS `details`, v.`_filled__updated_at` AS `updated_at`, v.`_filled__updated_at__timezone` AS `updated_at__timezone`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`) OR (del.`deleted_at` IS NOT NULL AND (del.`restored_at` IS NULL OR del.`restored_at` < del.`deleted_at`) AND del.`deleted_at` >= COALESCE(v.`updated_at`, v.`_extracted_at`) AND v.`_last_seen` <= del.`_extracted_at`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`id` ORDER BY r.`updated_at` DESC, r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`, r.`id`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`, r.`id`) AS `_last_seen` FROM (SELECT r.*, CASE WHEN (g.cols IS NOT NULL AND (STRPOS(g.cols, ',points,') > 0)) THEN FIRST_VALUE(r.`points` IGNORE NULLS) OVER (PARTITION BY r.`_school_id`, r.`id`, r.`updated_at` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ELSE r.`points` END AS `_filled__points`, CASE WHEN (g.cols IS NOT NULL AND (STRPOS(g.cols, ',score,') > 0)) THEN FIRST_VALUE(r.`score` IGNORE NULLS) OVER (PARTITION BY r.`_school_id`, r.`id`, r.`updated_at` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ELSE r.`score` END AS `_filled__score`, CASE WHEN 1 = 1 THEN FIRST_VALUE(r.`comment` IGNORE NULLS) OVER (PARTITION BY r.`_school_id`, r.`id`, r.`updated_at` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ELSE r.`comment` END AS `_filled__comment`, CASE WHEN 1 = 1 THEN FIRST_VALUE(r.`parents_notified` IGNORE NULLS) OVER (PARTITION BY r.`_school_id`, r.`id`, r.`updated_at` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ELSE r.`parents_notified` END AS `_filled__parents_notified`, CASE WHEN (g.cols IS NOT NULL AND (STRPOS(g.cols, ',details,') > 0)) THEN FIRST_VALUE(r.`details` IGNORE NULLS) OVER (PARTITION BY r.`_school_id`, r.`id`, r.`updated_at` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ELSE r.`details` END AS `_filled__details`, CASE WHEN (g.cols IS NOT NULL AND (STRPOS(g.cols, ',updated_at,') > 0)) THEN FIRST_VALUE(r.`updated_at` IGNORE NULLS) OVER (PARTITION BY r.`_school_id`, r.`id`, r.`updated_at` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ELSE r.`updated_at` END AS `_filled__updated_at`, CASE WHEN (g.cols IS NOT NULL AND (STRPOS(g.cols, ',updated_at,') > 0 OR STRPOS(g.cols, ',updated_at__timezone,') > 0)) THEN FIRST_VALUE(r.`updated_at__timezone` IGNORE NULLS) OVER (PARTITION BY r.`_school_id`, r.`id`, r.`updated_at` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ELSE r.`updated_at__timezone` END AS `_filled__updated_at__timezone` FROM `schools_ds._raw_achievements` AS r CROSS JOIN (SELECT ',' || STRING_AGG(gc.`column_name`, ',') || ',' AS cols FROM (SELECT x.`column_name` FROM `schools_ds._school_export_guarded` AS x WHERE x.`table_name` = 'achievements' UNION ALL SELECT x.`column_name` FROM `schools_ds._school_export_masked` AS x WHERE x.`table_name` = 'achievements') AS gc) AS g WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('achievements'))) AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'achievements' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` LEFT JOIN (SELECT dl.`_school_id`, dl.`id`, dl.`deleted_at`, dl.`restored_at`, dl.`_extracted_at` FROM (SELECT x.`_school_id`, x.`table`, x.`id`, x.`deleted_at`, x.`restored_at`, x.`_extracted_at`, ROW_NUMBER() OVER (PARTITION BY x.`_school_id`, x.`table`, x.`id` ORDER BY x.`_extracted_at` DESC, x.`_run_id` DESC) AS `_rn` FROM `schools_ds._raw_deletions` AS x WHERE x.`table` = 'achievements') AS dl WHERE dl.`_rn` = 1) AS del ON del.`_school_id` = v.`_school_id` AND del.`id` = v.`id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`id` IS NOT DISTINCT FROM src.`id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `points` = src.`points`, `score` = src.`score`, `comment` = src.`comment`, `parents_notified` = src.`parents_notified`, `details` = src.`details`, `updated_at` = src.`updated_at`, `updated_at__timezone` = src.`updated_at__timezone`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`id`, `points`, `score`, `comment`, `parents_notified`, `details`, `updated_at`, `updated_at__timezone`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`id`, src.`points`, src.`score`, src.`comment`, src.`parents_notified`, src.`details`, src.`updated_at`, src.`updated_at__timezone`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.school_meta` AS tgt
USING (SELECT v.`online` AS `online`, v.`approved` AS `approved`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`) AS `_last_seen` FROM (SELECT r.* FROM `schools_ds._raw_school_meta` AS r WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('school_meta'))) AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'school_meta' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `online` = src.`online`, `approved` = src.`approved`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`online`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`online`, src.`approved`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.school_permissions` AS tgt
USING (SELECT v.`identity` AS `identity`, v.`approved` AS `approved`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`identity` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`, r.`identity`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`, r.`identity`) AS `_last_seen` FROM (SELECT r.* FROM `schools_ds._raw_school_permissions` AS r WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('school_permissions'))) AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'school_permissions' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`identity` IS NOT DISTINCT FROM src.`identity`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `approved` = src.`approved`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`identity`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`identity`, src.`approved`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.deletions` AS tgt
USING (SELECT v.`type` AS `type`, v.`id` AS `id`, v.`mis_id` AS `mis_id`, v.`deleted_at` AS `deleted_at`, v.`deleted_at__timezone` AS `deleted_at__timezone`, v.`restored_at` AS `restored_at`, v.`restored_at__timezone` AS `restored_at__timezone`, v.`detected_by` AS `detected_by`, v.`table` AS `table`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`type`, r.`id` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`, r.`type`, r.`id`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`, r.`type`, r.`id`) AS `_last_seen` FROM (SELECT r.* FROM `schools_ds._raw_deletions` AS r WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('deletions'))) AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'deletions' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`type` IS NOT DISTINCT FROM src.`type` AND tgt.`id` IS NOT DISTINCT FROM src.`id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `mis_id` = src.`mis_id`, `deleted_at` = src.`deleted_at`, `deleted_at__timezone` = src.`deleted_at__timezone`, `restored_at` = src.`restored_at`, `restored_at__timezone` = src.`restored_at__timezone`, `detected_by` = src.`detected_by`, `table` = src.`table`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`type`, `id`, `mis_id`, `deleted_at`, `deleted_at__timezone`, `restored_at`, `restored_at__timezone`, `detected_by`, `table`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`type`, src.`id`, src.`mis_id`, src.`deleted_at`, src.`deleted_at__timezone`, src.`restored_at`, src.`restored_at__timezone`, src.`detected_by`, src.`table`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.achievement_students` AS tgt
USING (SELECT v.`achievement_id` AS `achievement_id`, v.`id` AS `id`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, (v.`_parent_run` IS NULL) AS `_gone` FROM (SELECT r.*, p.`_run_id` AS `_parent_run`, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`achievement_id`, r.`id` ORDER BY CASE WHEN p.`_run_id` IS NULL THEN 1 ELSE 0 END, r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn` FROM `schools_ds._raw_achievement_students` AS r LEFT JOIN `schools_ds.achievements` AS p ON p.`_school_id` = r.`_school_id` AND p.`id` = r.`achievement_id` AND p.`_run_id` = r.`_run_id` WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('achievement_students', 'achievements'))) AS v WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`achievement_id` IS NOT DISTINCT FROM src.`achievement_id` AND tgt.`id` IS NOT DISTINCT FROM src.`id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`achievement_id`, `id`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`achievement_id`, src.`id`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

DELETE FROM `schools_ds._raw_achievements` r WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('achievements')) AND NOT EXISTS (SELECT 1 FROM (SELECT y.*, MIN(CASE WHEN y.`points` IS NOT NULL THEN y.`_o` END) OVER (PARTITION BY y.`_school_id`, y.`id`, y.`updated_at`) AS `_b__points`, MIN(CASE WHEN y.`score` IS NOT NULL THEN y.`_o` END) OVER (PARTITION BY y.`_school_id`, y.`id`, y.`updated_at`) AS `_b__score`, MIN(CASE WHEN y.`comment` IS NOT NULL THEN y.`_o` END) OVER (PARTITION BY y.`_school_id`, y.`id`, y.`updated_at`) AS `_b__comment`, MIN(CASE WHEN y.`parents_notified` IS NOT NULL THEN y.`_o` END) OVER (PARTITION BY y.`_school_id`, y.`id`, y.`updated_at`) AS `_b__parents_notified`, MIN(CASE WHEN y.`details` IS NOT NULL THEN y.`_o` END) OVER (PARTITION BY y.`_school_id`, y.`id`, y.`updated_at`) AS `_b__details`, MIN(CASE WHEN y.`updated_at` IS NOT NULL THEN y.`_o` END) OVER (PARTITION BY y.`_school_id`, y.`id`, y.`updated_at`) AS `_b__updated_at`, MIN(CASE WHEN y.`updated_at__timezone` IS NOT NULL THEN y.`_o` END) OVER (PARTITION BY y.`_school_id`, y.`id`, y.`updated_at`) AS `_b__updated_at__timezone` FROM (SELECT x.`_school_id`, x.`id`, x.`_run_id`, x.`_extracted_at`, x.`updated_at`, x.`points`, x.`score`, x.`comment`, x.`parents_notified`, x.`details`, x.`updated_at__timezone`, ROW_NUMBER() OVER (PARTITION BY x.`_school_id`, x.`id` ORDER BY x.`updated_at` DESC, x.`_extracted_at` DESC, x.`_run_id` DESC) AS `_rn`, MAX(x.`_run_id`) OVER (PARTITION BY x.`_school_id`, x.`id`) AS `_last_run`, ROW_NUMBER() OVER (PARTITION BY x.`_school_id`, x.`id`, x.`updated_at` ORDER BY x.`_extracted_at` DESC, x.`_run_id` DESC) AS `_o`, MAX(x.`updated_at`) OVER (PARTITION BY x.`_school_id`, x.`id`) AS `_latest` FROM `schools_ds._raw_achievements` AS x WHERE x.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('achievements'))) AS y) AS k WHERE (k.`_rn` = 1 OR k.`_run_id` = k.`_last_run` OR ((k.`_o` = k.`_b__points` OR k.`_o` = k.`_b__score` OR k.`_o` = k.`_b__comment` OR k.`_o` = k.`_b__parents_notified` OR k.`_o` = k.`_b__details` OR k.`_o` = k.`_b__updated_at` OR k.`_o` = k.`_b__updated_at__timezone`) AND (k.`updated_at` = k.`_latest` OR (k.`updated_at` IS NULL AND k.`_latest` IS NULL)))) AND k.`_school_id` = r.`_school_id` AND k.`id` IS NOT DISTINCT FROM r.`id` AND k.`_run_id` IS NOT DISTINCT FROM r.`_run_id` AND k.`_extracted_at` IS NOT DISTINCT FROM r.`_extracted_at` AND k.`updated_at` IS NOT DISTINCT FROM r.`updated_at`);

DELETE FROM `schools_ds._raw_school_meta` r WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('school_meta')) AND NOT EXISTS (SELECT 1 FROM (SELECT x.`_school_id`, x.`_run_id`, x.`_extracted_at`, ROW_NUMBER() OVER (PARTITION BY x.`_school_id` ORDER BY x.`_extracted_at` DESC, x.`_run_id` DESC) AS `_rn`, MAX(x.`_run_id`) OVER (PARTITION BY x.`_school_id`) AS `_last_run` FROM `schools_ds._raw_school_meta` AS x WHERE x.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('school_meta'))) AS k WHERE (k.`_rn` = 1 OR k.`_run_id` = k.`_last_run`) AND k.`_school_id` = r.`_school_id` AND k.`_run_id` IS NOT DISTINCT FROM r.`_run_id` AND k.`_extracted_at` IS NOT DISTINCT FROM r.`_extracted_at`);

DELETE FROM `schools_ds._raw_school_permissions` r WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('school_permissions')) AND NOT EXISTS (SELECT 1 FROM (SELECT x.`_school_id`, x.`identity`, x.`_run_id`, x.`_extracted_at`, ROW_NUMBER() OVER (PARTITION BY x.`_school_id`, x.`identity` ORDER BY x.`_extracted_at` DESC, x.`_run_id` DESC) AS `_rn`, MAX(x.`_run_id`) OVER (PARTITION BY x.`_school_id`, x.`identity`) AS `_last_run` FROM `schools_ds._raw_school_permissions` AS x WHERE x.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('school_permissions'))) AS k WHERE (k.`_rn` = 1 OR k.`_run_id` = k.`_last_run`) AND k.`_school_id` = r.`_school_id` AND k.`identity` IS NOT DISTINCT FROM r.`identity` AND k.`_run_id` IS NOT DISTINCT FROM r.`_run_id` AND k.`_extracted_at` IS NOT DISTINCT FROM r.`_extracted_at`);

DELETE FROM `schools_ds._raw_achievement_students` r WHERE r.`_school_id` IN (SELECT `school_id` FROM `schools_ds._school_export_touched` WHERE `table_name` IN ('achievement_students', 'achievements')) AND NOT EXISTS (SELECT 1 FROM `schools_ds._raw_achievements` AS p WHERE p.`_school_id` = r.`_school_id` AND p.`id` = r.`achievement_id` AND p.`_run_id` = r.`_run_id`);

DELETE FROM `schools_ds._school_export_snapshots` s WHERE s.`run_id` < (SELECT MAX(x.`run_id`) FROM `schools_ds._school_export_snapshots` AS x WHERE x.`school_id` = s.`school_id` AND x.`table_name` = s.`table_name`);

UPDATE `schools_ds._school_export_tasks` SET `merged_at` = CURRENT_TIMESTAMP() WHERE `merged_at` IS NULL;

DELETE FROM `schools_ds._school_export_touched` WHERE 1 = 1;

COMMIT TRANSACTION;

DROP TABLE IF EXISTS `schools_ds._stage_achievements`;

DROP TABLE IF EXISTS `schools_ds._stage_school_meta`;

DROP TABLE IF EXISTS `schools_ds._stage_school_permissions`;

DROP TABLE IF EXISTS `schools_ds._stage_deletions`;

DROP TABLE IF EXISTS `schools_ds._stage_achievement_students`;
