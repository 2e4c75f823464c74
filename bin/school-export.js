#!/usr/bin/env node
// The installed command. tsx's loader compiles src/ on the fly (and caches it), so there
// is no build step between `npm ci` and the first run.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
