import path from 'node:path';

/** The embedded store's file in a data directory (a module of its own: the benches' children import it without the store). */
export const sqliteFileIn = (dataDir: string): string => path.join(dataDir, 'messaging.sqlite');
