import { createInterface } from 'node:readline/promises';
import type { Argv, CommandModule } from 'yargs';
import type { ApiClient } from '../source/client.ts';
import { assertSafeId } from '../ids.ts';
import { buildContacts } from '../discovery/contacts.ts';
import { ConfigError } from '../errors.ts';
import { requestAccess, revokeAccess, type AccessResult } from '../discovery/service.ts';
import { terminalSafe } from '../discovery/render.ts';
import { clientFromArgs, regionalDomains } from './client.ts';
import { wantsJson, withApiOptions, write, type ApiArgs } from './common.ts';
import type { CliIo } from './schools.ts';

/** `school-export access request|revoke`: adapts arguments; validation and calls live in src/discovery/. */
interface RequestArgs extends ApiArgs {
  id: string;
  contact?: string[];
  phone?: string[];
  notes?: string[];
  json?: boolean;
}
interface RevokeArgs extends ApiArgs {
  id: string;
  yes?: boolean;
  json?: boolean;
}
export interface AccessIo extends CliIo {
  /** a terminal to ask on, or undefined when there is none (scripts, CI) */
  confirm?: (question: string) => Promise<boolean>;
}

const stdio = (): AccessIo => ({
  out: process.stdout,
  err: process.stderr,
  confirm:
    process.stdin.isTTY && process.stderr.isTTY
      ? async (q) => {
          const rl = createInterface({ input: process.stdin, output: process.stderr });
          try {
            return /^y(es)?$/i.test((await rl.question(q)).trim());
          } finally {
            rl.close();
          }
        }
      : undefined,
});

async function print(r: AccessResult, json: boolean | undefined, io: CliIo): Promise<void> {
  if (wantsJson(json, io.out as NodeJS.WriteStream)) await write(io.out, JSON.stringify(r) + '\n');
  else
    await write(
      io.out,
      terminalSafe(`${r.school_id}: ${r.success ? 'ok' : 'not done'}, state ${r.state}${r.message ? ` — ${r.message}` : ''}`) + '\n',
    );
}

/** Contacts are parsed and checked before the client (and its token) is even created. */
export async function accessRequest(a: RequestArgs, io: AccessIo = stdio(), client?: ApiClient): Promise<AccessResult> {
  const id = assertSafeId(a.id);
  const contacts = buildContacts(a.contact ?? [], a.phone ?? [], a.notes ?? []);
  if (!contacts.length) io.err.write('note: no --contact given; naming a contact at the school may speed approval\n');
  const c = client ?? clientFromArgs(a);
  try {
    const r = await requestAccess(c, id, contacts, regionalDomains(a));
    await print(r, a.json, io);
    return r;
  } finally {
    await c.close();
  }
}

export async function accessRevoke(a: RevokeArgs, io: AccessIo = stdio(), client?: ApiClient): Promise<AccessResult> {
  const id = assertSafeId(a.id);
  if (!a.yes) {
    if (!io.confirm)
      throw new ConfigError(`refusing to revoke access to ${id} without confirmation: no terminal to ask on, pass --yes`, 'E_USAGE');
    const ok = await io.confirm(
      `Revoke this application's access to school ${id}? The school must approve a new request to undo it. [y/N] `,
    );
    if (!ok) throw new ConfigError(`access to ${id} not revoked (not confirmed)`, 'E_USAGE');
  }
  const c = client ?? clientFromArgs(a);
  try {
    const r = await revokeAccess(c, id, regionalDomains(a));
    await print(r, a.json, io);
    return r;
  } finally {
    await c.close();
  }
}

const requestCommand: CommandModule<object, RequestArgs> = {
  command: 'request <id>',
  describe: 'ask a school for access (it becomes pending until the school approves)',
  builder: (y: Argv) =>
    withApiOptions(y)
      .positional('id', { type: 'string', demandOption: true, describe: 'school id (A<digits>)' })
      .option('contact', { type: 'string', array: true, describe: 'repeatable: "First Last <email>" (or "Last, First Names <email>")' })
      .option('phone', {
        type: 'string',
        array: true,
        describe: 'phone of the contact in the same position (n-th --phone → n-th --contact; "" for none)',
      })
      .option('notes', { type: 'string', array: true, describe: 'notes for the contact in the same position' })
      .option('json', { type: 'boolean', describe: 'print the result as JSON' }) as unknown as Argv<RequestArgs>,
  handler: async (a) => {
    await accessRequest(a);
  },
};

const revokeCommand: CommandModule<object, RevokeArgs> = {
  command: 'revoke <id>',
  describe: "revoke this application's access to a school (asks first on a terminal)",
  builder: (y: Argv) =>
    withApiOptions(y)
      .positional('id', { type: 'string', demandOption: true, describe: 'school id (A<digits>)' })
      .option('yes', { type: 'boolean', describe: 'do not ask (scripts); required when there is no terminal' })
      .option('json', { type: 'boolean', describe: 'print the result as JSON' }) as unknown as Argv<RevokeArgs>,
  handler: async (a) => {
    await accessRevoke(a);
  },
};

export const accessCommand: CommandModule = {
  command: 'access <command>',
  describe: 'request or revoke access to a school',
  builder: (y: Argv) => y.command(requestCommand).command(revokeCommand).demandCommand(1, 'name a subcommand: request or revoke'),
  handler: () => {},
};
