/**
 * Writing generated files, or checking that the committed ones are current: what `npm run docs` and
 * `npm run client:generate` share. With `check`, nothing is written and the process fails naming
 * every file that differs from what the code generates now.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GeneratedDoc } from './docs-content.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The files of `docs` whose committed content differs from theirs (missing ones included). */
export function staleFiles(docs: readonly GeneratedDoc[]): string[] {
  return docs.filter((doc) => readOrUndefined(path.join(root, doc.path)) !== doc.content).map((doc) => doc.path);
}

export function syncGeneratedFiles(docs: readonly GeneratedDoc[], options: { check: boolean; command: string; what: string }): void {
  const stale = staleFiles(docs);
  if (options.check && stale.length > 0) {
    process.stderr.write(
      `These generated ${options.what} no longer match the code:\n${stale.map((p) => `  ${p}\n`).join('')}Run \`${options.command}\` and commit the result.\n`,
    );
    process.exit(1);
  }
  if (!options.check) {
    for (const doc of docs.filter((candidate) => stale.includes(candidate.path))) {
      const file = path.join(root, doc.path);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, doc.content);
    }
  }
  process.stdout.write(
    options.check
      ? `${options.what} are up to date (${docs.length} files)\n`
      : stale.length > 0
        ? `wrote ${stale.join(', ')}\n`
        : `${options.what} already up to date (${docs.length} files)\n`,
  );
}
