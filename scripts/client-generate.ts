/**
 * `npm run client:generate`: writes the TypeScript client's generated types and operation table
 * (packages/client/src/generated/) from the OpenAPI document of an app built in this process: no
 * running server needed.
 * `npm run client:generate -- --check`: writes nothing, and fails naming every file that differs.
 */
import { renderClientFiles } from './client-content.ts';
import { syncGeneratedFiles } from './generated-files.ts';

syncGeneratedFiles(await renderClientFiles(), {
  check: process.argv.slice(2).includes('--check'),
  command: 'npm run client:generate',
  what: 'client files',
});
