/**
 * Builds the dashboard (web/) into web/dist when its sources changed since the last build.
 *
 *   node scripts/build-dashboard.ts             build if changed; a failure warns and exits 0
 *   node scripts/build-dashboard.ts --required  build if changed; a failure exits 1 (CI, the test suite)
 *   node scripts/build-dashboard.ts --force     build even if unchanged
 *
 * "Changed" is a content hash of web/ (without dist) and the lockfile (the versions it is built
 * with), written to web/dist/.build-hash after a build: `npm start` pays for a build once, then
 * nothing. `npm start` must serve the API even where the build cannot run (no devDependencies, as
 * in `npm ci --omit=dev`), so there a failure is a warning and /dashboard answers 503.
 *
 * It prints the size of what the inbox route loads, gzipped, and fails past the budget: the
 * people answering customers open it all day, on any connection.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = path.resolve(import.meta.dirname, '..');
const webDir = path.join(root, 'web');
const distDir = path.join(webDir, 'dist');
const hashFile = path.join(distDir, '.build-hash');
/** The inbox route's gzipped JavaScript and CSS (issue 19's quality bar). */
const INBOX_BUDGET_BYTES = 300 * 1024;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return full === distDir || entry.name === 'node_modules' ? [] : sourceFiles(full);
      return [full];
    })
    .sort();
}

function sourceHash(): string {
  const hash = createHash('sha256');
  for (const file of [...sourceFiles(webDir), path.join(root, 'package-lock.json')]) {
    hash.update(path.relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

/** index.html's script and stylesheet, and every chunk they preload: what the first visit downloads. */
function inboxRouteAssets(): string[] {
  const html = readFileSync(path.join(distDir, 'index.html'), 'utf8');
  return [...html.matchAll(/(?:src|href)="\/dashboard\/(assets\/[^"]+\.(?:js|css))"/g)].map((match) => match[1]!);
}

function report(): number {
  let gzipped = 0;
  for (const asset of inboxRouteAssets()) {
    const bytes = readFileSync(path.join(distDir, asset));
    const size = gzipSync(bytes, { level: 9 }).length;
    gzipped += size;
    console.log(`  ${asset.padEnd(44)} ${(bytes.length / 1024).toFixed(1).padStart(7)} KB  ${(size / 1024).toFixed(1).padStart(6)} KB gzipped`);
  }
  console.log(`dashboard: the inbox route loads ${(gzipped / 1024).toFixed(1)} KB gzipped (budget ${INBOX_BUDGET_BYTES / 1024} KB)`);
  return gzipped;
}

/** Brotli and gzip copies beside each asset, served by @fastify/static's `preCompressed`: compressed once here, not per request. */
function precompress(): void {
  const assets = path.join(distDir, 'assets');
  for (const name of readdirSync(assets)) {
    if (!/\.(js|css|svg)$/.test(name)) continue;
    const bytes = readFileSync(path.join(assets, name));
    writeFileSync(path.join(assets, `${name}.br`), brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
    writeFileSync(path.join(assets, `${name}.gz`), gzipSync(bytes, { level: 9 }));
  }
}

async function build(): Promise<void> {
  const { build: viteBuild } = await import('vite');
  await viteBuild({ configFile: path.join(webDir, 'vite.config.ts'), logLevel: 'warn' });
  precompress();
}

const args = new Set(process.argv.slice(2));
const required = args.has('--required');
const hash = sourceHash();
if (!args.has('--force') && existsSync(hashFile) && readFileSync(hashFile, 'utf8') === hash) {
  console.log('dashboard: up to date (web/dist)');
} else {
  const started = performance.now();
  try {
    await build();
    writeFileSync(hashFile, hash);
    console.log(`dashboard: built into web/dist in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    if (report() > INBOX_BUDGET_BYTES) {
      console.error('dashboard: the inbox route is over its size budget');
      process.exitCode = 1;
    }
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (required) {
      console.error(`dashboard: the build failed: ${reason}`);
      process.exitCode = 1;
    } else {
      console.warn(`dashboard: not built (${reason.split('\n')[0]}); the API starts without it, and /dashboard answers 503.`);
    }
  }
}
