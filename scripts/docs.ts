/**
 * `npm run docs`: writes the generated reference pages under docs/reference/.
 * `npm run docs -- --check`: writes nothing, and fails naming every page that differs from the code.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderAll } from './docs-content.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const checkOnly = process.argv.slice(2).includes('--check');

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

const docs = await renderAll();
const stale: string[] = [];
for (const doc of docs) {
  const file = path.join(root, doc.path);
  if (readOrUndefined(file) === doc.content) continue;
  stale.push(doc.path);
  if (!checkOnly) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, doc.content);
  }
}

if (checkOnly && stale.length > 0) {
  process.stderr.write(`These generated docs no longer match the code:\n${stale.map((p) => `  ${p}\n`).join('')}Run \`npm run docs\` and commit the result.\n`);
  process.exit(1);
}
process.stdout.write(
  checkOnly
    ? `docs are up to date (${docs.length} files)\n`
    : stale.length > 0
      ? `wrote ${stale.join(', ')}\n`
      : `docs already up to date (${docs.length} files)\n`,
);
