import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

const HOOK = path.resolve(import.meta.dirname, 'strip-types-cache.js');

// A program of two TypeScript files: what it prints, where its error is thrown, and whether the
// process started Node's type stripper (its WebAssembly build of SWC, `internal/deps/amaro`).
const MAIN = `import { greeting, fail } from './greeting.ts';
interface Options { readonly loud: boolean }
const options: Options = { loud: true };
const stack = (() => { try { fail(); } catch (error) { return (error as Error).stack ?? ''; } return ''; })();
const at = /greeting\\.ts:(\\d+:\\d+)/.exec(stack)?.[1];
const stripper = process.moduleLoadList.some((name: string) => name.includes('amaro'));
console.log(JSON.stringify({ text: greeting(options.loud), at, stripper }));
`;

const greetingFile = (word: string) => `export function greeting(loud: boolean): string {
  const text: string = '${word}';
  return loud ? text.toUpperCase() : text;
}

export function fail(): never {
  type Reason = string;
  const reason: Reason = 'on purpose';
  throw new Error(reason);
}
`;

interface Printed {
  text: string;
  at: string;
  stripper: boolean;
}

describe('the stripped TypeScript kept between starts (strip-types-cache.js)', () => {
  let dir: string;
  let cache: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'strip-types-'));
    cache = path.join(dir, 'cache');
    writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }');
    writeFileSync(path.join(dir, 'main.ts'), MAIN);
    writeFileSync(path.join(dir, 'greeting.ts'), greetingFile('hello'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function run(options: { hook: boolean; cacheDir?: string }): Printed {
    const result = spawnSync(process.execPath, [...(options.hook ? [`--import=${HOOK}`] : []), path.join(dir, 'main.ts')], {
      env: { PATH: process.env.PATH ?? '', STRIP_TYPES_CACHE_DIR: options.cacheDir ?? cache },
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, result.stderr);
    return JSON.parse(result.stdout) as Printed;
  }

  const kept = () => readdirSync(cache).sort();

  it('runs the program as Node does, keeps each file stripped, and a second start never starts the stripper', () => {
    const plain = run({ hook: false });
    assert.equal(plain.text, 'HELLO');
    assert.equal(plain.stripper, true, 'Node strips the files itself without the hook');

    const first = run({ hook: true });
    assert.deepEqual({ ...first, stripper: undefined }, { ...plain, stripper: undefined });
    assert.equal(kept().length, 2, 'one kept file for each of the two .ts files');

    const second = run({ hook: true });
    // The same line and column as Node's own stripping: the types were blanked, not removed.
    assert.deepEqual(second, { text: 'HELLO', at: plain.at, stripper: false });
    assert.match(plain.at, /^9:\d+$/);
  });

  it('strips an edited file again instead of serving what it kept', () => {
    const before = kept();
    writeFileSync(path.join(dir, 'greeting.ts'), greetingFile('bonjour'));
    assert.equal(run({ hook: true }).text, 'BONJOUR');
    assert.equal(kept().length, before.length + 1);
    const again = run({ hook: true });
    assert.deepEqual(again, { text: 'BONJOUR', at: again.at, stripper: false });
  });

  it('runs as without it where nothing can be kept', () => {
    // A directory under a regular file cannot be made, even by root.
    const blocked = path.join(dir, 'package.json', 'cache');
    const printed = run({ hook: true, cacheDir: blocked });
    assert.equal(printed.text, 'BONJOUR');
    assert.equal(printed.stripper, true);
  });

  it('fails a file Node cannot strip as Node does, and keeps nothing for it', () => {
    writeFileSync(path.join(dir, 'greeting.ts'), `export enum Mood { Happy }\n${greetingFile('hi')}`);
    const count = kept().length;
    for (const hook of [false, true]) {
      const result = spawnSync(process.execPath, [...(hook ? [`--import=${HOOK}`] : []), path.join(dir, 'main.ts')], {
        env: { PATH: process.env.PATH ?? '', STRIP_TYPES_CACHE_DIR: cache },
        encoding: 'utf8',
      });
      assert.notEqual(result.status, 0, `hook: ${hook}`);
      assert.match(result.stderr, /enum|not supported/i, `hook: ${hook}`);
    }
    assert.equal(kept().length, count);
  });
});
