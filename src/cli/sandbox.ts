import type { Argv, CommandModule } from 'yargs';

interface SandboxArgs {
  port?: number;
  seed?: number;
  schools?: number;
  achievements?: number;
}

export const sandboxCommand: CommandModule<object, SandboxArgs> = {
  command: 'sandbox',
  describe: 'serve the built-in imitation of the service (prints URLs, tokens and a curl to try)',
  builder: (y: Argv) =>
    y
      .option('port', { type: 'number', describe: 'port of the default region (others follow); default: any free port' })
      .option('seed', { type: 'number', describe: 'data seed (default 1)' })
      .option('schools', { type: 'number', describe: 'approved schools with data (default 6)' })
      .option('achievements', { type: 'number', describe: 'achievements per school (default 120)' }) as Argv<SandboxArgs>,
  handler: async (a) => {
    const { runSandboxCommand } = await import('../sandbox/cli.ts');
    await runSandboxCommand({ port: a.port, seed: a.seed, schools: a.schools, achievements: a.achievements });
  },
};
