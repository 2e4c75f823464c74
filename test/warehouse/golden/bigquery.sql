-- school-export: bigquery load of gs://bucket/exports/
-- Runs: 20240101T000000Z-0001, 20240201T000000Z-0002
CREATE SCHEMA IF NOT EXISTS `schools_ds`;

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_runs` (`run_id` STRING NOT NULL, `manifest` STRING, `applied_at` TIMESTAMP, `merged_at` TIMESTAMP);

CREATE TABLE IF NOT EXISTS `schools_ds._school_export_snapshots` (`run_id` STRING NOT NULL, `school_id` STRING NOT NULL, `table_name` STRING NOT NULL);

CREATE TABLE IF NOT EXISTS `schools_ds._raw_achievements` (`id` STRING, `points` INT64, `score` FLOAT64, `comment` STRING, `parents_notified` BOOL, `details` STRING, `updated_at` TIMESTAMP, `updated_at__timezone` STRING, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds.achievements` (`id` STRING, `points` INT64, `score` FLOAT64, `comment` STRING, `parents_notified` BOOL, `details` STRING, `updated_at` TIMESTAMP, `updated_at__timezone` STRING, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds._raw_school_meta` (`online` BOOL, `approved` BOOL, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds.school_meta` (`online` BOOL, `approved` BOOL, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds._raw_school_permissions` (`identity` STRING, `approved` BOOL, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds.school_permissions` (`identity` STRING, `approved` BOOL, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds._raw_deletions` (`type` STRING, `id` STRING, `mis_id` STRING, `deleted_at` TIMESTAMP, `deleted_at__timezone` STRING, `restored_at` TIMESTAMP, `restored_at__timezone` STRING, `detected_by` STRING, `table` STRING, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds.deletions` (`type` STRING, `id` STRING, `mis_id` STRING, `deleted_at` TIMESTAMP, `deleted_at__timezone` STRING, `restored_at` TIMESTAMP, `restored_at__timezone` STRING, `detected_by` STRING, `table` STRING, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds._raw_achievement_students` (`achievement_id` STRING, `id` STRING, `_school_id` STRING, `_region` STRING, `_run_id` STRING, `_extracted_at` TIMESTAMP, `_extra` STRING);

CREATE TABLE IF NOT EXISTS `schools_ds.achievement_students` (`achievement_id` STRING, `id` STRING, `_school_id` STRING NOT NULL, `_region` STRING NOT NULL, `_run_id` STRING NOT NULL, `_extracted_at` TIMESTAMP NOT NULL, `_extra` STRING);

LOAD DATA INTO `schools_ds._raw_achievements` FROM FILES (format = 'PARQUET', uris = ['gs://bucket/exports/achievements/region=uk/school_id=A1/20240101T000000Z-0001-0001.parquet', 'gs://bucket/exports/achievements/region=uk/school_id=A1/20240201T000000Z-0002-0001.parquet']);

LOAD DATA INTO `schools_ds._raw_deletions` FROM FILES (format = 'PARQUET', uris = ['gs://bucket/exports/deletions/region=uk/school_id=A1/20240201T000000Z-0002-0002.parquet']);

LOAD DATA INTO `schools_ds._raw_achievement_students` FROM FILES (format = 'PARQUET', uris = ['gs://bucket/exports/achievement_students/region=uk/school_id=A1/20240101T000000Z-0001-0002.parquet']);

INSERT INTO `schools_ds._school_export_snapshots` (`run_id`, `school_id`, `table_name`) VALUES ('20240101T000000Z-0001', 'A1', 'achievements'), ('20240101T000000Z-0001', 'A1', 'achievement_students'), ('20240101T000000Z-0001', 'A1', 'school_permissions');

INSERT INTO `schools_ds._school_export_runs` (`run_id`, `manifest`, `applied_at`, `merged_at`) VALUES ('20240101T000000Z-0001', '_manifests/20240101T000000Z-0001.json', CURRENT_TIMESTAMP(), NULL), ('20240201T000000Z-0002', '_manifests/20240201T000000Z-0002.json', CURRENT_TIMESTAMP(), NULL);

MERGE INTO `schools_ds.achievements` AS tgt
USING (SELECT v.`id` AS `id`, v.`points` AS `points`, v.`score` AS `score`, v.`comment` AS `comment`, v.`parents_notified` AS `parents_notified`, v.`details` AS `details`, v.`updated_at` AS `updated_at`, v.`updated_at__timezone` AS `updated_at__timezone`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`) OR (del.`deleted_at` IS NOT NULL AND (del.`restored_at` IS NULL OR del.`restored_at` < del.`deleted_at`) AND del.`deleted_at` >= COALESCE(v.`updated_at`, v.`_extracted_at`) AND v.`_last_seen` <= del.`_extracted_at`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`id` ORDER BY r.`updated_at` DESC, r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`, r.`id`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`, r.`id`) AS `_last_seen` FROM `schools_ds._raw_achievements` AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'achievements' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` LEFT JOIN (SELECT dl.`_school_id`, dl.`id`, dl.`deleted_at`, dl.`restored_at`, dl.`_extracted_at` FROM (SELECT x.`_school_id`, x.`table`, x.`id`, x.`deleted_at`, x.`restored_at`, x.`_extracted_at`, ROW_NUMBER() OVER (PARTITION BY x.`_school_id`, x.`table`, x.`id` ORDER BY x.`_extracted_at` DESC, x.`_run_id` DESC) AS `_rn` FROM `schools_ds._raw_deletions` AS x WHERE x.`table` = 'achievements') AS dl WHERE dl.`_rn` = 1) AS del ON del.`_school_id` = v.`_school_id` AND del.`id` = v.`id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`id` IS NOT DISTINCT FROM src.`id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `points` = src.`points`, `score` = src.`score`, `comment` = src.`comment`, `parents_notified` = src.`parents_notified`, `details` = src.`details`, `updated_at` = src.`updated_at`, `updated_at__timezone` = src.`updated_at__timezone`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`id`, `points`, `score`, `comment`, `parents_notified`, `details`, `updated_at`, `updated_at__timezone`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`id`, src.`points`, src.`score`, src.`comment`, src.`parents_notified`, src.`details`, src.`updated_at`, src.`updated_at__timezone`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.school_meta` AS tgt
USING (SELECT v.`online` AS `online`, v.`approved` AS `approved`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`) AS `_last_seen` FROM `schools_ds._raw_school_meta` AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'school_meta' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `online` = src.`online`, `approved` = src.`approved`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`online`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`online`, src.`approved`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.school_permissions` AS tgt
USING (SELECT v.`identity` AS `identity`, v.`approved` AS `approved`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`identity` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`, r.`identity`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`, r.`identity`) AS `_last_seen` FROM `schools_ds._raw_school_permissions` AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'school_permissions' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`identity` IS NOT DISTINCT FROM src.`identity`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `approved` = src.`approved`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`identity`, `approved`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`identity`, src.`approved`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.deletions` AS tgt
USING (SELECT v.`type` AS `type`, v.`id` AS `id`, v.`mis_id` AS `mis_id`, v.`deleted_at` AS `deleted_at`, v.`deleted_at__timezone` AS `deleted_at__timezone`, v.`restored_at` AS `restored_at`, v.`restored_at__timezone` AS `restored_at__timezone`, v.`detected_by` AS `detected_by`, v.`table` AS `table`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, ((snap.`run_id` IS NOT NULL AND v.`_last_run` < snap.`run_id`)) AS `_gone` FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`type`, r.`id` ORDER BY r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn`, MAX(r.`_run_id`) OVER (PARTITION BY r.`_school_id`, r.`type`, r.`id`) AS `_last_run`, MAX(r.`_extracted_at`) OVER (PARTITION BY r.`_school_id`, r.`type`, r.`id`) AS `_last_seen` FROM `schools_ds._raw_deletions` AS r) AS v LEFT JOIN (SELECT s.`school_id`, MAX(s.`run_id`) AS `run_id` FROM `schools_ds._school_export_snapshots` AS s WHERE s.`table_name` = 'deletions' GROUP BY s.`school_id`) AS snap ON snap.`school_id` = v.`_school_id` WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`type` IS NOT DISTINCT FROM src.`type` AND tgt.`id` IS NOT DISTINCT FROM src.`id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `mis_id` = src.`mis_id`, `deleted_at` = src.`deleted_at`, `deleted_at__timezone` = src.`deleted_at__timezone`, `restored_at` = src.`restored_at`, `restored_at__timezone` = src.`restored_at__timezone`, `detected_by` = src.`detected_by`, `table` = src.`table`, `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`type`, `id`, `mis_id`, `deleted_at`, `deleted_at__timezone`, `restored_at`, `restored_at__timezone`, `detected_by`, `table`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`type`, src.`id`, src.`mis_id`, src.`deleted_at`, src.`deleted_at__timezone`, src.`restored_at`, src.`restored_at__timezone`, src.`detected_by`, src.`table`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

MERGE INTO `schools_ds.achievement_students` AS tgt
USING (SELECT v.`achievement_id` AS `achievement_id`, v.`id` AS `id`, v.`_school_id` AS `_school_id`, v.`_region` AS `_region`, v.`_run_id` AS `_run_id`, v.`_extracted_at` AS `_extracted_at`, v.`_extra` AS `_extra`, (v.`_parent_run` IS NULL) AS `_gone` FROM (SELECT r.*, p.`_run_id` AS `_parent_run`, ROW_NUMBER() OVER (PARTITION BY r.`_school_id`, r.`achievement_id`, r.`id` ORDER BY CASE WHEN p.`_run_id` IS NULL THEN 1 ELSE 0 END, r.`_extracted_at` DESC, r.`_run_id` DESC) AS `_rn` FROM `schools_ds._raw_achievement_students` AS r LEFT JOIN `schools_ds.achievements` AS p ON p.`_school_id` = r.`_school_id` AND p.`id` = r.`achievement_id` AND p.`_run_id` = r.`_run_id`) AS v WHERE v.`_rn` = 1) AS src
ON tgt.`_school_id` IS NOT DISTINCT FROM src.`_school_id` AND tgt.`achievement_id` IS NOT DISTINCT FROM src.`achievement_id` AND tgt.`id` IS NOT DISTINCT FROM src.`id`
WHEN MATCHED AND src.`_gone` THEN DELETE
WHEN MATCHED THEN UPDATE SET `_region` = src.`_region`, `_run_id` = src.`_run_id`, `_extracted_at` = src.`_extracted_at`, `_extra` = src.`_extra`
WHEN NOT MATCHED AND NOT src.`_gone` THEN INSERT (`achievement_id`, `id`, `_school_id`, `_region`, `_run_id`, `_extracted_at`, `_extra`) VALUES (src.`achievement_id`, src.`id`, src.`_school_id`, src.`_region`, src.`_run_id`, src.`_extracted_at`, src.`_extra`);

UPDATE `schools_ds._school_export_runs` SET `merged_at` = CURRENT_TIMESTAMP() WHERE `merged_at` IS NULL;
