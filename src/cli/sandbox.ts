import type { Argv, CommandModule } from 'yargs';
import { integerOption, optionalIntegerFlag } from './common.ts';

interface SandboxArgs {
  port?: number;
  seed?: number;
  schools?: number;
  achievements?: number;
  'rows-per-school'?: 'default' | 'small';
  'item-envelope'?: 'bare' | 'data';
  'region-mode'?: 'lenient' | 'strict';
  'property-permission-naming'?: 'dotted' | 'underscore' | 'singular' | 'kebab' | 'upper' | 'opaque';
  'cursor-max-age-ms'?: number;
  'webhook-url'?: string;
}

export const sandboxCommand: CommandModule<object, SandboxArgs> = {
  command: 'sandbox',
  describe: 'serve the built-in imitation of the service (prints URLs, tokens and a curl to try)',
  builder: (y: Argv) =>
    y
      .option('port', integerOption('port of the default region (others follow); default: any free port'))
      .option('seed', integerOption('data seed (default 1)'))
      .option('schools', integerOption('approved schools with data (default 6)'))
      .option('achievements', integerOption('achievements per school (default 120; 2 with --rows-per-school small)'))
      .option('rows-per-school', {
        choices: ['default', 'small'] as const,
        describe: 'small: about two rows per table, for thousands of schools (--schools up to 20000)',
      })
      .option('item-envelope', {
        choices: ['bare', 'data'] as const,
        describe: 'item URLs answer the object itself (bare, the spec) or { data: object } (what the official PHP client reads)',
      })
      .option('region-mode', {
        choices: ['lenient', 'strict'] as const,
        describe: "strict: a school's paths answer only at its own regional domain (docs/sandbox.md, Regions)",
      })
      .option('property-permission-naming', {
        choices: ['dotted', 'underscore', 'singular', 'kebab', 'upper', 'opaque'] as const,
        describe:
          'how property permissions are named: achievements.comment.read (dotted, default), achievement_comment.read, achievement.comment.read, achievements-comment.read, ACHIEVEMENTS.COMMENT.READ, or opaque names',
      })
      .option('webhook-url', {
        type: 'string',
        describe: 'POST webhooks (schoolApproved, accessRevoked, ...) here when the control API changes a school (e.g. to webhooks serve)',
      })
      .option(
        'cursor-max-age-ms',
        integerOption('cursors older than this answer 400 cursor_expired (default: never)'),
      ) as Argv<SandboxArgs>,
  handler: async (a) => {
    const { runSandboxCommand } = await import('../sandbox/cli.ts');
    await runSandboxCommand({
      port: optionalIntegerFlag('port', a.port, 0, 65535),
      seed: optionalIntegerFlag('seed', a.seed, 0),
      schools: optionalIntegerFlag('schools', a.schools, 0),
      achievements: optionalIntegerFlag('achievements', a.achievements, 0),
      rowsPerSchool: a['rows-per-school'],
      itemEnvelope: a['item-envelope'],
      regionMode: a['region-mode'],
      propertyPermissionNaming: a['property-permission-naming'],
      cursorMaxAgeMs: optionalIntegerFlag('cursor-max-age-ms', a['cursor-max-age-ms'], 1),
      webhookUrl: a['webhook-url'],
    });
  },
};
