import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

/** The module specifiers a file imports at run time (`import … from`, `import '…'`, `import(…)`), comments aside. */
function runtimeImports(file: URL): string[] {
  const code = readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
  return [...code.matchAll(/\bimport\s*(?:[\w{},*\s]+\s+from\s+)?\(?\s*['"]([^'"]+)['"]/g)].map((match) => match[1]!);
}

describe('the checkpoint thread', () => {
  it('loads no TypeScript, so that it starts no TypeScript stripper of its own (10 MiB)', () => {
    const seen = new Set<string>();
    const visit = (file: URL) => {
      if (seen.has(file.href)) return;
      seen.add(file.href);
      assert.ok(file.pathname.endsWith('.js'), `${file.pathname} is loaded by the checkpoint thread`);
      for (const specifier of runtimeImports(file)) {
        if (specifier.startsWith('.')) visit(new URL(specifier, file));
        else assert.ok(specifier.startsWith('node:'), `${file.pathname} imports ${specifier}: the thread imports Node's modules only`);
      }
    };
    visit(new URL('./sqlite-checkpoint-worker.js', import.meta.url));
    assert.deepEqual(
      [...seen].map((href) => href.split('/').at(-1)),
      ['sqlite-checkpoint-worker.js', 'sqlite-checkpoint-round.js'],
    );
  });
});
