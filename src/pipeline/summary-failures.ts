import { groupBy } from '../group-by.ts';
import type { RunSummary } from './summary.ts';

/**
 * The unfinished tasks as a person reads them: grouped by what happened (status and error code),
 * then by table, with counts and at most three examples each, so an interrupt that left 29 tasks
 * not started or a token without a scope at 12 schools is a few lines, not a wall. A group of one
 * task is its one line. The JSON summary and the manifest keep every task.
 */
type Failure = RunSummary['failures'][number];

export const EXAMPLES = 3;
const RESUMES = / \(\d+ checkpoint piece\(s\) committed: the next run resumes\)$/;

const label = (status: Failure['status']) => status.toUpperCase().replace('_', ' ');
const tableOf = (f: Failure) => (f.resource === '*' ? 'all tables' : f.resource);
const one = (f: Failure) => `${label(f.status)} ${f.school_id} ${f.resource}: [${f.code}] ${f.message}`;

/** The message with what differs from task to task (the school, the resume note) taken out. */
function shape(f: Failure): string {
  return f.message.replace(RESUMES, '').split(f.school_id).join('<school>');
}

export function failureLines(failures: Failure[]): string[] {
  const lines: string[] = [];
  const byWhat = [...groupBy(failures, (f) => `${f.status} ${f.code}`).values()].sort((a, b) => b.length - a.length);
  for (const group of byWhat) {
    if (group.length === 1) {
      lines.push(`  ${one(group[0]!)}`);
      continue;
    }
    const first = group[0]!;
    const shapes = new Set(group.map(shape));
    const alike = shapes.size === 1;
    lines.push(`  ${label(first.status)} [${first.code}] ${group.length} tasks${alike ? `: ${shape(first)}` : ''}`);
    const byTable = [...groupBy(group, tableOf).entries()].sort((a, b) => b[1].length - a[1].length);
    if (alike) {
      lines.push(...tableCounts(byTable));
      continue;
    }
    for (const [table, tasks] of byTable) {
      lines.push(`    ${table}: ${tasks.length}${tasks.length > EXAMPLES ? `, e.g.` : ''}`);
      for (const t of tasks.slice(0, EXAMPLES)) lines.push(`      ${t.school_id}: ${t.message.replace(RESUMES, '')}`);
    }
  }
  return lines;
}

/**
 * "    achievements: 12 (A1001, A1002, A1003 and 9 more)"; tables with the same count and schools
 * (an interrupt leaves every table of the schools it did not reach) share one line:
 * "    schools, school_meta, school_acl and 6 more tables: 6 each (A1003, A1004, A1005 and 3 more)".
 */
function tableCounts(byTable: [string, Failure[]][]): string[] {
  const same = groupBy(byTable, ([, tasks]) => tasks.map((t) => t.school_id).join(' '));
  return [...same.values()].map((tables) => {
    const tasks = tables[0]![1];
    const more = tasks.length > EXAMPLES ? ` and ${tasks.length - EXAMPLES} more` : '';
    const schools = `(${tasks
      .slice(0, EXAMPLES)
      .map((t) => t.school_id)
      .join(', ')}${more})`;
    if (tables.length === 1) return `    ${tables[0]![0]}: ${tasks.length} ${schools}`;
    const names = tables.slice(0, EXAMPLES).map(([name]) => name);
    const otherTables = tables.length > EXAMPLES ? ` and ${tables.length - EXAMPLES} more tables` : '';
    return `    ${names.join(', ')}${otherTables}: ${tasks.length} each ${schools}`;
  });
}
