import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { CONFIG_CODES, ExportError, oneLine } from '../errors.ts';
import { runCommand } from './run.ts';
import { sandboxCommand } from './sandbox.ts';
import { schoolsCommand } from './schools.ts';
import { accessCommand } from './access.ts';
import { webhooksCommand } from './webhooks.ts';
import { warehouseCommand } from './warehouse.ts';

/**
 * Exit status: 0 every task committed; 1 some task failed (the summary names it); 2 usage or
 * configuration error. Errors are one line, never a stack, never the token.
 */
const cli = yargs(hideBin(process.argv))
  .scriptName('school-export')
  .command(runCommand)
  .command(sandboxCommand)
  .command(schoolsCommand)
  .command(accessCommand)
  .command(webhooksCommand)
  .command(warehouseCommand)
  .demandCommand(1, 'name a command, e.g. school-export run')
  .strict()
  .help()
  .fail((msg, err, y) => {
    if (err) throw err;
    process.stderr.write(`${y.help() ? '' : ''}school-export: ${msg}\n(see school-export --help)\n`);
    process.exit(2);
  });

try {
  await cli.parseAsync();
} catch (e) {
  const code = e instanceof ExportError && CONFIG_CODES.has(e.code) ? 2 : 1;
  process.stderr.write(`school-export: ${oneLine(e)}\n`);
  process.exit(code);
}
