import yargs, { type Argv, type CommandModule } from 'yargs';
import { CONFIG_CODES, ExportError } from '../errors.ts';
import { packageVersion } from './version.ts';

/**
 * The command table. Each command's module (and what it imports: the pipeline, the AWS SDK,
 * DuckDB, the sandbox) is loaded only when that command runs, so `--version`, `--help` and every
 * other command start without paying for it. The one-line descriptions live here so the top-level
 * help needs no module at all.
 */
/** Each command module types its own arguments; the table holds them alike. */
const cmd = (m: unknown) => m as CommandModule;

const COMMANDS: { name: string; usage: string; describe: string; load: () => Promise<CommandModule> }[] = [
  {
    name: 'run',
    usage: 'run [pipeline]',
    describe: 'export data: the pipeline file, or --api-url with defaults, or (with neither) the built-in sandbox to ./exports',
    load: async () => cmd((await import('./run.ts')).runCommand),
  },
  {
    name: 'status',
    usage: 'status [pipeline]',
    describe: 'what a destination holds: per table the schools, watermark lag and failures, the worst schools, recent runs, the lease',
    load: async () => cmd((await import('./status.ts')).statusCommand),
  },
  {
    name: 'init',
    usage: 'init [file]',
    describe: 'write a commented starter pipeline file (YAML) that runs against the built-in sandbox as written',
    load: async () => cmd((await import('./init.ts')).initCommand),
  },
  {
    name: 'report',
    usage: 'report [pipeline]',
    describe: 'one HTML file about a destination: volume per table, lag per school, failures, throughput, the personal-data policy',
    load: async () => cmd((await import('./report.ts')).reportCommand),
  },
  {
    name: 'sandbox',
    usage: 'sandbox',
    describe: 'serve the built-in imitation of the service (prints URLs, tokens and a curl to try)',
    load: async () => cmd((await import('./sandbox.ts')).sandboxCommand),
  },
  {
    name: 'schools',
    usage: 'schools <command>',
    describe: 'discover schools: list by access state, show one',
    load: async () => cmd((await import('./schools.ts')).schoolsCommand),
  },
  {
    name: 'access',
    usage: 'access <command>',
    describe: 'request or revoke access to a school',
    load: async () => cmd((await import('./access.ts')).accessCommand),
  },
  {
    name: 'webhooks',
    usage: 'webhooks <command>',
    describe: 'the webhook receiver',
    load: async () => cmd((await import('./webhooks.ts')).webhooksCommand),
  },
  {
    name: 'datamap',
    usage: 'datamap [pipeline]',
    describe: 'every table and column with its personal-data class, where the class comes from, and what the policy does to it',
    load: async () => cmd((await import('./datamap.ts')).dataMapCommand),
  },
  {
    name: 'warehouse',
    usage: 'warehouse <command>',
    describe: 'load exports into DuckDB, or render BigQuery / Snowflake load SQL',
    load: async () => cmd((await import('./warehouse.ts')).warehouseCommand),
  },
  {
    name: 'compact',
    usage: 'compact [pipeline]',
    describe: "merge each partition's small files into one, under the destination's lease (docs/compaction.md)",
    load: async () => cmd((await import('./compact.ts')).compactCommand),
  },
];

/**
 * A group of subcommands (`warehouse <action>`, `schools <command>`) is registered by its name
 * alone: its builder demands the subcommand with a message naming them ("name an action: load,
 * sql, dbt or manifests"), which a required positional would pre-empt with yargs' own "Not
 * enough non-option arguments: got 0, need at least 1".
 */
function groupName(command: CommandModule['command']): string | undefined {
  return typeof command === 'string' ? /^(\S+) <[^>]+>$/.exec(command)?.[1] : undefined;
}

/** The command named on the command line: the first word that is not an option. */
export function commandName(argv: string[]): string | undefined {
  return argv.find((a) => !a.startsWith('-'));
}

/**
 * Exit status: 0 every task committed; 1 some task failed (the summary names it); 2 usage or
 * configuration error (an invalid token included). Errors are one line, never a stack, never
 * the token.
 */
export async function buildCli(argv: string[]): Promise<Argv> {
  const wanted = commandName(argv);
  let cli = yargs(argv).scriptName('school-export');
  for (const c of COMMANDS) {
    // only the command that runs is loaded; the others are listed by name for --help
    const mod = c.name === wanted ? await c.load() : { command: c.usage, describe: c.describe, handler: () => {} };
    cli = cli.command({ ...mod, command: groupName(mod.command) ?? mod.command, describe: c.describe } as CommandModule);
  }
  if (!argv.includes('--help') && !argv.includes('-h')) skipHelpCache(cli);
  return cli
    .demandCommand(1, 'name a command, e.g. school-export run')
    .strict()
    .version(packageVersion())
    .help()
    .epilogue(
      'Settings: flags win over SCHOOL_EXPORT_<KEY> environment variables, which win over the pipeline file, which wins over defaults (see `school-export run --help`).',
    )
    .fail((msg, err) => {
      if (err) throw err;
      process.stderr.write(
        `school-export: ${msg}\n(see school-export ${wanted && COMMANDS.some((c) => c.name === wanted) ? `${wanted} ` : ''}--help)\n`,
      );
      process.exit(2);
    });
}

export function exitCodeFor(e: unknown): number {
  return e instanceof ExportError && CONFIG_CODES.has(e.code) ? 2 : 1;
}

/**
 * yargs renders a command's whole help text (cliui, wrap-ansi, string-width) as it starts the
 * command's handler, in case the handler later asks for it: about a tenth of a small run's start.
 * Ours never does (failures print one line and point at --help), so unless help was asked for,
 * that rendering is skipped (the Angular CLI does the same, angular/angular-cli#34087).
 */
function skipHelpCache(cli: Argv): void {
  const internal = (cli as unknown as { getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: () => void } } })
    .getInternalMethods?.()
    .getUsageInstance?.();
  if (internal && typeof internal.cacheHelpMessage === 'function') internal.cacheHelpMessage = () => {};
}
