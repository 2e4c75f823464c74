/** `npm run docs:personal-data`: regenerates docs/personal-data.md from the declarations. */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderPersonalDataDoc } from './docs.ts';

export const DOC_PATH = resolve(import.meta.dirname, '../../docs/personal-data.md');

writeFileSync(DOC_PATH, renderPersonalDataDoc());
process.stdout.write(`wrote ${DOC_PATH}\n`);
