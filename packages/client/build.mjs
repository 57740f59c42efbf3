// Builds the client into plain JavaScript (ES modules) with type declarations, from its sources
// here and the service's own webhook-signature code (src/events/webhook-signature.ts), staged side by
// side so that the package carries its one copy of it. Only TypeScript's compiler, found from here
// upwards; no bundler, no runtime dependency.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const staging = join(here, 'build-staging');
const dist = join(here, 'dist');

rmSync(dist, { recursive: true, force: true });
rmSync(staging, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
try {
  cpSync(join(here, 'src'), staging, { recursive: true });
  cpSync(join(here, '../../src/events/webhook-signature.ts'), join(staging, 'webhook-signature.ts'));
  // In the repository webhooks.ts imports the service's file where it lives; in the package, beside it.
  const webhooks = join(staging, 'webhooks.ts');
  const source = readFileSync(webhooks, 'utf8');
  const rewritten = source.replace("'../../../src/events/webhook-signature.ts'", "'./webhook-signature.ts'");
  if (rewritten === source) throw new Error('webhooks.ts no longer imports ../../../src/events/webhook-signature.ts: update build.mjs');
  writeFileSync(webhooks, rewritten);
  writeFileSync(join(staging, 'package.json'), JSON.stringify({ type: 'module' }));
  const options = [
    '--outDir',
    dist,
    '--rootDir',
    staging,
    '--declaration',
    '--target',
    'es2022',
    '--lib',
    'es2022,dom',
    '--module',
    'nodenext',
    '--types',
    'node',
    '--strict',
    '--skipLibCheck',
    '--rewriteRelativeImportExtensions',
    '--verbatimModuleSyntax',
  ];
  const files = ['index.ts', 'webhooks.ts'].map((file) => join(staging, file));
  // --ignoreConfig: compiled on its own, not as part of the service's project.
  execFileSync(process.execPath, [tsc, ...files, '--ignoreConfig', ...options], { stdio: 'inherit', cwd: here });
} finally {
  rmSync(staging, { recursive: true, force: true });
}

// tsc rewrites `./x.ts` to `./x.js` in the JavaScript only; declarations must name the .js too, or a
// consumer's compiler looks for sources the package does not ship.
for (const entry of readdirSync(dist, { recursive: true })) {
  const file = join(dist, String(entry));
  if (!file.endsWith('.d.ts')) continue;
  writeFileSync(file, readFileSync(file, 'utf8').replace(/(from\s+['"]\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1.js$2'));
}
