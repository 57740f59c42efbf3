// Builds the package from the service's own source, src/events/webhook-signature.ts: one file, so
// that what receivers verify with is exactly what the service signs with. ES modules (.js) and
// CommonJS (.cjs), each with its type declarations. Plain JavaScript, so that it runs on the Node a
// receiver has (18 or later), with only TypeScript's compiler, found from here upwards.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const source = join(here, '../../src/events/webhook-signature.ts');
const dist = join(here, 'dist');

function compile(file) {
  const options = ['--outDir', dist, '--declaration', '--target', 'es2022', '--module', 'nodenext', '--types', 'node', '--strict', '--skipLibCheck'];
  // --ignoreConfig: the file is compiled on its own, not as part of the service's project.
  execFileSync(process.execPath, [tsc, file, '--ignoreConfig', ...options], { stdio: 'inherit', cwd: here });
}

rmSync(dist, { recursive: true, force: true });
// The source sits in the service's ES module package, so it compiles to ES modules (.js, .d.ts).
compile(source);
// The same file as .cts compiles to CommonJS (.cjs, .d.cts).
const staging = join(here, 'build-cjs');
mkdirSync(staging, { recursive: true });
try {
  copyFileSync(source, join(staging, 'webhook-signature.cts'));
  compile(join(staging, 'webhook-signature.cts'));
} finally {
  rmSync(staging, { recursive: true, force: true });
}
