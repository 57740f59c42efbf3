import { ConfigError, ensureMasterKey, loadConfig, type Config } from './config/config.ts';

function configOrExit(): Config {
  try {
    const config = loadConfig(process.env);
    ensureMasterKey(config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

const config = configOrExit();
// Loaded only after the configuration is known to be good, so a bad value fails in milliseconds.
const [{ default: closeWithGrace }, { createApp }, { migrateToLatest, openStore }, { systemClock }] = await Promise.all([
  import('close-with-grace'),
  import('./app.ts'),
  import('./db/connect.ts'),
  import('./lib/clock.ts'),
]);
const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
await migrateToLatest(store);
const app = await createApp({ config, store, clock: systemClock });
const log = app.server.log;

const media = config.mediaStorage;
log.info(
  {
    store: store.dialect.name,
    provider: config.providerMode,
    role: config.role,
    // Where the bytes go, without the URL's credentials.
    media_storage: media.kind === 'file' ? media.directory : `s3://${media.bucket}/${media.prefix}${media.endpoint ? ` at ${media.endpoint}` : ''}`,
  },
  store.dialect.name === 'sqlite'
    ? `embedded store at ${config.dataDir}; provider: ${config.providerMode}`
    : `PostgreSQL store; provider: ${config.providerMode}`,
);
if (app.sandbox) {
  log.warn(
    { provider: 'sandbox' },
    'provider: the sandbox, mounted at /sandbox (connect any code with POST /v1/connections; its control API at /sandbox/control is open to anyone who can reach this port, so never expose sandbox mode)',
  );
}

// SIGTERM: stop accepting, let in-flight requests finish (new ones on open connections get 503),
// then close the store. A second signal or 10 s without finishing exits at once.
closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'shutting down after an uncaught error');
  else log.info({ signal }, 'shutting down');
  // Stop taking work first: running jobs finish (or go back to the queue), then the server drains.
  await app.worker.stop(8_000);
  await app.server.close();
  await store.close();
});

if (config.role !== 'api') app.worker.start();
// A worker serves no API; with METRICS_TOKEN it listens for the scrapes alone.
const listening = config.role === 'worker' ? app.metricsServer : app.server;
await listening?.listen({ port: config.port, host: config.host });
