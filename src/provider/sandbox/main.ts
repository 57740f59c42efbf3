/**
 * Runs the sandbox provider alone (`npm run sandbox`), for trying the provider's shapes by hand or
 * pointing another process at it. The only sandbox file that reads the environment, and the one that
 * opens a store: `SANDBOX_DATABASE_URL` (PostgreSQL), or an SQLite file under `SANDBOX_DATA_DIR`.
 */
import Fastify from 'fastify';
import { migrateToLatest, openStore, storeFor } from '../../db/connect.ts';
import { systemClock } from '../../lib/clock.ts';
import { createSandboxProvider, type SandboxTables } from './index.ts';
import { TEMPLATE_REVIEWS, type TemplateReview } from './state.ts';

const port = Number(process.env.SANDBOX_PORT ?? 3100);
const host = process.env.SANDBOX_HOST ?? '127.0.0.1';
const appSecret = process.env.SANDBOX_APP_SECRET ?? 'sandbox-app-secret';
const webhookUrl = process.env.SANDBOX_WEBHOOK_URL || undefined;
const verifyToken = process.env.SANDBOX_VERIFY_TOKEN || undefined;
const templateReview = process.env.SANDBOX_TEMPLATE_REVIEW ?? 'approve';

if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`SANDBOX_PORT must be a port number, got "${process.env.SANDBOX_PORT}"`);
  process.exit(1);
}
if (!isTemplateReview(templateReview)) {
  console.error(`SANDBOX_TEMPLATE_REVIEW must be one of ${TEMPLATE_REVIEWS.join(', ')}, got "${templateReview}"`);
  process.exit(1);
}

function isTemplateReview(value: string): value is TemplateReview {
  return (TEMPLATE_REVIEWS as readonly string[]).includes(value);
}

const store = openStore({ databaseUrl: process.env.SANDBOX_DATABASE_URL || undefined, dataDir: process.env.SANDBOX_DATA_DIR ?? './data/sandbox' });
await migrateToLatest(store);
const sandbox = createSandboxProvider({
  store: storeFor<SandboxTables>(store),
  clock: systemClock,
  appSecret,
  ...(webhookUrl === undefined ? {} : { webhookUrl }),
  ...(verifyToken === undefined ? {} : { verifyToken }),
  // A second between steps makes the walk visible to a person watching a dashboard.
  statusStepMs: 1000,
  // A person trying templates by hand expects the provider's review to come back on its own.
  templateReview,
});
const app = Fastify({ logger: { level: process.env.SANDBOX_LOG_LEVEL ?? 'info' } });
await app.register(sandbox.plugin);
await app.listen({ port, host });
app.log.info(`sandbox provider: Graph API at http://${host}:${port}/graph/v24.0, control API at /control`);
app.log.info(webhookUrl === undefined ? 'no SANDBOX_WEBHOOK_URL: webhooks are only recorded (GET /control/webhooks)' : `webhooks go to ${webhookUrl}`);
app.log.info('webhooks of an account are sent once its app subscribes: POST /graph/v24.0/{waba_id}/subscribed_apps');
if (verifyToken !== undefined && webhookUrl !== undefined) {
  app.log.info(`webhook verification handshake ${(await sandbox.verifyWebhook().catch(() => false)) ? 'succeeded' : 'failed'}`);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    sandbox.close();
    void app
      .close()
      .then(() => store.close())
      .then(() => process.exit(0));
  });
}
