/**
 * The real service for benchmarks, in a child process started by bench/lib.ts: what src/main.ts
 * does, except that it listens on a free port, reports that port and its memory to the parent over
 * IPC, can migrate into its own PostgreSQL schema (BENCH_SCHEMA) so runs never share data, and
 * answers the bench's commands (bench/app-commands.ts). The job worker runs only when a bench starts
 * it with a command, so a bench of plain routes has no poll loop in its figures.
 */
import { createApp } from '../src/app.ts';
import { ensureMasterKey, loadConfig } from '../src/config/config.ts';
import { migrateToLatest, openStore } from '../src/db/connect.ts';
import { systemClock } from '../src/lib/clock.ts';
import { createAppCommands } from './app-commands.ts';
import { reportToParent } from './lib.ts';

const config = loadConfig(process.env);
ensureMasterKey(config);
const schema = process.env.BENCH_SCHEMA || undefined;
const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, schema });
await migrateToLatest(store, schema);
const app = await createApp({ config, store, clock: systemClock });
await app.server.listen({ port: config.port, host: config.host });

const address = app.server.server.address();
if (!address || typeof address === 'string') throw new Error('the service did not bind a TCP port');
const bench = createAppCommands(app, store);
reportToParent(
  address.port,
  async () => {
    await bench.stop();
    await app.server.close();
    await store.close();
  },
  bench.commands,
);
