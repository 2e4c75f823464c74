import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../errors.ts';

/** `school-export init [FILE]`: a commented starter pipeline file that runs against the sandbox as written. */
interface InitArgs {
  file?: string;
  force?: boolean;
}

export async function initCommandRun(a: InitArgs, io: { err: NodeJS.WritableStream } = { err: process.stderr }): Promise<string> {
  const [{ starterPipeline }, { writeFile }, { isYamlPath }] = await Promise.all([
    import('../config/starter.ts'),
    import('node:fs/promises'),
    import('../config/file.ts'),
  ]);
  const file = a.file ?? 'pipeline.yaml';
  if (!isYamlPath(file)) throw new ConfigError(`${file}: the starter pipeline is YAML: name a .yaml or .yml file`, 'E_USAGE');
  try {
    await writeFile(file, starterPipeline(file), { flag: a.force ? 'w' : 'wx' });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new ConfigError(`${file} exists: choose another name, or --force to replace it`, 'E_USAGE');
    throw new ConfigError(`${file}: cannot write it (${code ?? (e as Error).message})`, 'E_USAGE');
  }
  io.err.write(`wrote ${file}: \`school-export run ${file}\` exports the built-in sandbox to ./exports; edit it for the real service\n`);
  return file;
}

export const initCommand: CommandModule<object, InitArgs> = {
  command: 'init [file]',
  describe: 'write a commented starter pipeline file (YAML) that runs against the built-in sandbox as written',
  builder: (y: Argv) =>
    y
      .positional('file', { type: 'string', describe: 'the file to write (default pipeline.yaml)' })
      .option('force', { type: 'boolean', describe: 'replace the file if it exists' }) as unknown as Argv<InitArgs>,
  handler: async (a) => {
    await initCommandRun(a);
  },
};
