#!/usr/bin/env node
// The installed command. tsx's loader compiles src/ on the fly (and caches it), so there
// is no build step between `npm ci` and the first run.
import { register } from 'tsx/esm/api';

// The AWS SDK warns on Node 20 about versions it will publish in 2027; our lockfile pins the
// SDK, and a multi-line warning would break the one-JSON-object-per-line logs cron users parse.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
register();
await import('../src/cli/main.ts');
