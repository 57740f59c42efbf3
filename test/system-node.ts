/** The machine's own Node, for checking that what we ship runs on the Node its users have. */
import assert from 'node:assert/strict';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * The machine's own `node`, not the project's Node 24 (node_modules/.bin comes first on PATH under
 * npm): receivers run whatever Node they have, and the package must load on the oldest we promise.
 */
export function systemNode(): string {
  for (const directory of (process.env.PATH ?? '').split(path.delimiter)) {
    if (directory === '' || path.resolve(directory).startsWith(path.join(root, 'node_modules'))) continue;
    const candidate = path.join(directory, 'node');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  assert.fail('no `node` on PATH besides the project’s own: the package cannot be checked on the Node receivers run');
}
