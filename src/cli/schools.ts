import type { Argv, CommandModule } from 'yargs';
import { assertSafeId } from '../ids.ts';
import { FILTERS, LIST_NAMES, type ListFilters, type SchoolListName } from '../discovery/lists.ts';
import { renderDetails, schoolSummary, tableHeader, tableRow } from '../discovery/render.ts';
import { listSchools, showSchool } from '../discovery/service.ts';
import { clientFromArgs, regionalDomains } from './client.ts';
import { integerOption, optionalIntegerFlag, wantsJson, withApiOptions, write, type ApiArgs } from './common.ts';

/** `school-export schools list|show`: argument parsing and output only; the logic is in src/discovery/. */
export interface CliIo {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
}
const stdio = (): CliIo => ({ out: process.stdout, err: process.stderr });

interface ListArgs extends ApiArgs, Partial<Record<(typeof FILTERS)[number], string>> {
  state: SchoolListName;
  json?: boolean;
  'per-page'?: number;
}

export async function schoolsList(a: ListArgs, io: CliIo = stdio(), client = clientFromArgs(a)): Promise<number> {
  const filters: ListFilters = {};
  for (const f of FILTERS) if (a[f] !== undefined) filters[f] = String(a[f]);
  const json = wantsJson(a.json, io.out as NodeJS.WriteStream);
  let n = 0;
  try {
    for await (const school of listSchools(client, a.state, filters, optionalIntegerFlag('per-page', a['per-page'], 1))) {
      if (!json && n === 0) await write(io.out, tableHeader() + '\n');
      await write(io.out, json ? JSON.stringify(school) + '\n' : tableRow(schoolSummary(school)) + '\n');
      n++;
    }
  } finally {
    await client.close();
  }
  // on stderr in both modes: a script piping NDJSON still sees that a listing came back empty
  io.err.write(`${n} ${a.state} school${n === 1 ? '' : 's'}\n`);
  return n;
}

interface ShowArgs extends ApiArgs {
  id: string;
  json?: boolean;
  'with-user-type'?: boolean;
}

export async function schoolsShow(a: ShowArgs, io: CliIo = stdio(), client = clientFromArgs(a)): Promise<void> {
  const id = assertSafeId(a.id);
  try {
    const details = await showSchool(client, id, { withUserType: a['with-user-type'], domains: regionalDomains(a) });
    if (wantsJson(a.json, io.out as NodeJS.WriteStream)) {
      await write(io.out, JSON.stringify(details) + '\n');
    } else {
      await write(io.out, renderDetails(details));
      for (const n of details.notes) io.err.write(`note: ${n}\n`);
    }
  } finally {
    await client.close();
  }
}

const kebab = (f: string) => f.replace(/_/g, '-');

const listCommand: CommandModule<object, ListArgs> = {
  command: 'list',
  describe: 'list schools of one access state (spec 4.2), every page',
  builder: (y: Argv) => {
    let b = withApiOptions(y)
      .option('state', { choices: LIST_NAMES, default: 'approved' as SchoolListName, describe: 'which list' })
      .option('json', { type: 'boolean', describe: 'NDJSON (one school object per line); the default when stdout is not a terminal' })
      .option('per-page', { ...integerOption('rows per request'), default: 100 });
    for (const f of FILTERS) {
      b = b.option(kebab(f), { type: 'string', describe: `filter: ${f} (only lists that support it)` });
    }
    return b as unknown as Argv<ListArgs>;
  },
  handler: async (a) => {
    const args = { ...a } as ListArgs & Record<string, unknown>;
    for (const f of FILTERS) args[f] = (a[kebab(f) as keyof ListArgs] as string | undefined) ?? a[f];
    await schoolsList(args);
  },
};

const showCommand: CommandModule<object, ShowArgs> = {
  command: 'show <id>',
  describe: "one school: its details, meta, permissions by group and ACL (from the school's regional domain)",
  builder: (y: Argv) =>
    withApiOptions(y)
      .positional('id', { type: 'string', demandOption: true, describe: 'school id (A<digits>)' })
      .option('json', { type: 'boolean', describe: 'one JSON object; the default when stdout is not a terminal' })
      .option('with-user-type', { type: 'boolean', describe: 'count ACL ids by type (student, contact)' }) as unknown as Argv<ShowArgs>,
  handler: async (a) => {
    await schoolsShow(a);
  },
};

export const schoolsCommand: CommandModule = {
  command: 'schools <command>',
  describe: 'discover schools: list by access state, show one',
  builder: (y: Argv) => y.command(listCommand).command(showCommand).demandCommand(1, 'name a subcommand: list or show'),
  handler: () => {},
};
