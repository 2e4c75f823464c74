import { isAbsolute, relative, resolve, sep } from 'node:path';
import { SCHEMA_PATH } from './schema.ts';

/**
 * The pipeline file `school-export init` writes: YAML with the schema line (editors complete and
 * check the keys), the built-in sandbox switched on so `school-export run FILE` works at once with
 * no token and no network, and every setting a nightly export needs next to it as a comment.
 */
export function starterPipeline(file: string): string {
  const schema = schemaRef(file);
  return `# yaml-language-server: $schema=${schema}
# A school-export pipeline file. Run it with:   npx school-export run ${file.split(sep).pop()}
# Every key also has a flag (--per-page) and an environment variable (SCHOOL_EXPORT_PER_PAGE):
# flag > variable > this file > default.  \${NAME} in a string value is read from the environment.
$schema: ${schema}
description: Starter pipeline written by school-export init

# As written, this runs against the built-in sandbox (a seeded imitation of the service, started
# in-process): no token, no network. To export from the real service, delete the sandbox block,
# set api_url, and put the token in SCHOOL_API_TOKEN (or token_file); never in this file.
sandbox:
  seed: 1
  schools: 3
  achievements_per_school: 100
# api_url: https://<default domain>
# domains:                          # regional domains schools name in region.domain
#   <apac domain>: https://<apac domain>
# token_file: /etc/school-export/token

# Where files go: a folder, or s3://bucket/prefix (credentials from the standard AWS chain).
dest: ./exports
# s3_sse: AES256
format: parquet                     # ndjson | csv | parquet
concurrency: 4                      # tasks (school x table) reading at once
# resources: [schools, achievements] # default: every table
# schools: [A1001]                  # default: every approved school
# shard: 0/4                        # one of N machines (stable hash of the school id)

# Retries: a 503 "maintenance" lasting minutes should not fail the night.
max_retries: 5
max_retry_seconds: 300
# snapshot_every_hours: 168         # full snapshots of tables without deletion records

# Children's personal data: what each class of column becomes (docs/personal-data.md).
# personal_data:
#   person_id: pseudonymise         # keep | pseudonymise
#   direct_identifier: drop         # keep | pseudonymise | drop
#   free_text: drop                 # keep | drop
# pseudonymise_key_file: ./pseudonymise.key

# For monitoring: the run's figures for node_exporter's textfile collector.
# metrics_file: /var/lib/node_exporter/textfile/school_export.prom
`;
}

/**
 * The shipped schema as the file should name it: relative to the file when the package sits below
 * the file's folder or its parent (a project that installed it: node_modules/school-export/...),
 * else absolute (a global install, another tree).
 */
export function schemaRef(file: string): string {
  const rel = relative(resolve(file, '..'), SCHEMA_PATH);
  return isAbsolute(rel) || rel.split(sep).filter((p) => p === '..').length > 1 ? SCHEMA_PATH : rel.split(sep).join('/');
}
