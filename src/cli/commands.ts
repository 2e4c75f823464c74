import yargs, { type Argv, type CommandModule } from 'yargs';
import { CONFIG_CODES, ExportError } from '../errors.ts';

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
    describe: "what a destination holds: per school and table the watermark, lag and last failure; recent runs; the lock's holder",
    load: async () => cmd((await import('./status.ts')).statusCommand),
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
    cli = cli.command({ ...mod, describe: c.describe } as CommandModule);
  }
  return cli
    .demandCommand(1, 'name a command, e.g. school-export run')
    .strict()
    .help()
    .epilogue(
      'Settings: flags win over SCHOOL_EXPORT_<KEY> environment variables, which win over the pipeline file, which wins over defaults (see `school-export run --help`).',
    )
    .fail((msg, err) => {
      if (err) throw err;
      process.stderr.write(`school-export: ${msg}\n(see school-export --help)\n`);
      process.exit(2);
    });
}

export function exitCodeFor(e: unknown): number {
  return e instanceof ExportError && CONFIG_CODES.has(e.code) ? 2 : 1;
}
