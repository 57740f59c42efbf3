// @ts-check
/**
 * The service's TypeScript files, stripped of their types once and kept: `npm start` imports this
 * first (`--import`), and each later start loads the kept JavaScript instead of stripping again.
 *
 * Why: Node strips types with a WebAssembly build of SWC, which it instantiates in the process on
 * the first `.ts` file it loads and keeps for the process's life. The instance and its memory, with
 * each file's text held twice while it loads, were about 17 MiB of the service's idle 142–147 MiB
 * resident (docs/benchmarks.md, sixteenth pass). A process that finds every file kept never starts
 * the stripper. Node's own compile cache would also keep the stripped text, but it keeps V8's code
 * for every function as well and loads it all at start: a warm start idled 10 MiB higher, not lower
 * (fifteenth pass).
 *
 * A file is kept under the hash of its text and of the Node version (whose stripper made it), so an
 * edited file is stripped again, never served stale. Nothing is removed: the directory grows by a
 * file for each edit until `npm ci` (or anyone) clears it, and a cleared directory is refilled by the
 * next start. The stripping is Node's own (`module.stripTypeScriptTypes`, in the mode Node uses),
 * which replaces each type with spaces: lines and columns stay where they were, and stack traces
 * point into the `.ts` file as before. A cache
 * that cannot be written (a read-only deployment) only means stripping on every start, as without
 * it. Files under `node_modules` are left to Node, which refuses to strip them anyway.
 *
 * Plain JavaScript, type-checked from its JSDoc: it runs before anything can be stripped.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { registerHooks, stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
/** `STRIP_TYPES_CACHE_DIR` moves it (where `node_modules` is read-only); it is read before any configuration. */
const cacheDirectory = process.env.STRIP_TYPES_CACHE_DIR || path.join(root, 'node_modules', '.cache', 'strip-types');

/** Whether the directory could be made; past a failure, every file is stripped in memory only. */
let writable = true;

/**
 * @param {string} file
 * @param {string} text
 */
function keep(file, text) {
  if (!writable) return;
  try {
    mkdirSync(cacheDirectory, { recursive: true });
    // Written beside, then renamed: a process starting at the same moment reads a whole file or none.
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, text);
    renameSync(partial, file);
  } catch {
    writable = false;
  }
}

/** @param {string} source */
function stripped(source) {
  const key = createHash('sha256').update(process.version).update('\0').update(source).digest('hex');
  const file = path.join(cacheDirectory, `${key}.js`);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    const text = stripTypeScriptTypes(source, { mode: 'strip' });
    keep(file, text);
    return text;
  }
}

registerHooks({
  load(url, context, nextLoad) {
    if (!url.startsWith('file:') || !url.endsWith('.ts') || url.includes('/node_modules/')) return nextLoad(url, context);
    const source = readFileSync(fileURLToPath(url), 'utf8');
    // The package is `"type": "module"`, so Node would load the stripped text as an ES module too.
    return { format: 'module', source: stripped(source), shortCircuit: true };
  },
});
