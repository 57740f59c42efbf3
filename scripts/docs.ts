/**
 * `npm run docs`: writes the generated reference pages under docs/reference/.
 * `npm run docs -- --check`: writes nothing, and fails naming every page that differs from the code.
 */
import { renderAll } from './docs-content.ts';
import { syncGeneratedFiles } from './generated-files.ts';

syncGeneratedFiles(await renderAll(), { check: process.argv.slice(2).includes('--check'), command: 'npm run docs', what: 'docs' });
