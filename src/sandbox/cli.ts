/** `school-export sandbox`: serve the sandbox until SIGINT/SIGTERM, printing how to reach it. */
import {
  startSandbox,
  type ItemEnvelope,
  type PropertyPermissionNaming,
  type RegionMode,
  type RowsPerSchool,
  type Sandbox,
} from './index.ts';

export interface SandboxCommandOptions {
  port?: number;
  seed?: number;
  schools?: number;
  achievements?: number;
  rowsPerSchool?: RowsPerSchool;
  itemEnvelope?: ItemEnvelope;
  regionMode?: RegionMode;
  propertyPermissionNaming?: PropertyPermissionNaming;
  cursorMaxAgeMs?: number;
  webhookUrl?: string;
}

/** The banner the command prints (sandbox tokens are fake, so printing them is fine). */
export function describeSandbox(sb: Sandbox, webhookUrl?: string): string {
  const lines = ['school-export sandbox: an imitation of the service, on loopback', '', 'Regions:'];
  for (const r of sb.regions) lines.push(`  ${r.code.padEnd(7)} ${r.domain.padEnd(24)} ${r.url}`);
  lines.push('', 'Tokens (fake, sandbox only):', `  full     ${sb.tokens.full}`, `  limited  ${sb.tokens.limited}`);
  lines.push('', `Control API: ${sb.url}/_control  (same Authorization, full token; routes in docs/sandbox.md)`);
  lines.push('', 'Try:', `  curl -H "Authorization: Bearer ${sb.tokens.full}" --compressed ${sb.url}/v1.0/schools`);
  const control = `curl -H "Authorization: Bearer ${sb.tokens.full}" -X PUT ${sb.url}/_control/schools/A9001/access -d '{"state":"approved"}'`;
  if (webhookUrl) lines.push('', `Webhooks: POSTed to ${webhookUrl} when a school's access or MIS changes, e.g.`, `  ${control}`);
  else lines.push('', 'Webhooks: off (start with --webhook-url URL, or PUT /_control/webhook-url {"url": ...})');
  const domainFlags = sb.regions.map((r) => `--domain ${r.domain}=${r.url}`).join(' ');
  lines.push('', 'Export from it:', `  SCHOOL_API_TOKEN=${sb.tokens.full} school-export run --api-url ${sb.url} ${domainFlags}`);
  lines.push('', 'Ctrl-C stops it.');
  return lines.join('\n');
}

export async function runSandboxCommand(opts: SandboxCommandOptions): Promise<void> {
  const sb = await startSandbox({
    port: opts.port,
    seed: opts.seed,
    schools: opts.schools,
    achievementsPerSchool: opts.achievements,
    rowsPerSchool: opts.rowsPerSchool,
    itemEnvelope: opts.itemEnvelope,
    regionMode: opts.regionMode,
    propertyPermissionNaming: opts.propertyPermissionNaming,
    cursorMaxAgeMs: opts.cursorMaxAgeMs,
    webhookUrl: opts.webhookUrl,
  });
  process.stdout.write(describeSandbox(sb, opts.webhookUrl) + '\n');
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await sb.close();
}
