import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { S3_OPERATIONS } from '../../src/sink/s3-ops.ts';

/**
 * docs/s3.md is the minimal IAM policy users copy: every S3 operation the code can send must be in
 * its table with the IAM action that allows it, and in S3_OPERATIONS (which names the permission
 * in a warning). Operations are found as the command classes imported from @aws-sdk/client-s3,
 * plus what lib-storage's Upload sends when the code uses it.
 */
const SRC = join(import.meta.dirname, '../../src');
const UPLOAD_SENDS = ['CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload', 'AbortMultipartUpload', 'PutObject'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function operationsInCode(): string[] {
  const ops = new Set<string>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'@aws-sdk\/client-s3'/g)) {
      for (const name of m[1]!.split(',').map((n) => n.trim().replace(/^type\s+/, ''))) {
        const op = /^(\w+)Command$/.exec(name)?.[1];
        if (op) ops.add(op);
      }
    }
    if (/from\s*'@aws-sdk\/lib-storage'/.test(text)) UPLOAD_SENDS.forEach((op) => ops.add(op));
  }
  return [...ops].sort();
}

describe('docs/s3.md lists every S3 operation the code can send', () => {
  const doc = readFileSync(join(import.meta.dirname, '../../docs/s3.md'), 'utf8');
  const rows = doc.split('\n').filter((l) => l.startsWith('| `'));

  it('finds the operations (the scan itself works)', () => {
    expect(operationsInCode()).toEqual(
      expect.arrayContaining(['GetObject', 'PutObject', 'ListMultipartUploads', 'UploadPart', 'HeadBucket']),
    );
  });

  it.each(operationsInCode())('%s: in the table with its IAM action, and in S3_OPERATIONS', (op) => {
    const action = (S3_OPERATIONS as Record<string, string>)[op];
    expect(action, `${op} is missing from S3_OPERATIONS (src/sink/s3-ops.ts)`).toBeDefined();
    const row = rows.find((r) => r.split('|')[1]!.includes(`\`${op}\``));
    expect(row, `${op} is missing from the table in docs/s3.md`).toBeDefined();
    expect(row!.split('|')[2]).toContain(`\`${action}\``);
    expect(row!.split('|')[3]!.trim()).toMatch(/^(required|optional)$/);
  });

  it('the policy grants every required and optional action the table names', () => {
    const policy = /```json\n([\s\S]*?)```/.exec(doc)![1]!;
    const granted = new Set((JSON.parse(policy) as { Statement: { Action: string[] }[] }).Statement.flatMap((s) => s.Action));
    for (const action of new Set(Object.values(S3_OPERATIONS))) expect(granted.has(action), action).toBe(true);
  });
});
