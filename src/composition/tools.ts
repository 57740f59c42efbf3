import { createMcpModule } from '../modules/mcp/index.ts';
import type { Area } from './area.ts';
import type { BillingServices } from './billing.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { OutreachServices } from './outreach.ts';
import type { PlatformServices } from './platform.ts';

/** The tool server (MCP): tools over the services of every area before it, so built last. */
export function buildTools(
  core: Core,
  services: Pick<PlatformServices, 'organizations' | 'idempotencyKeys'> &
    Pick<MessagingServices, 'connections' | 'templates' | 'conversations' | 'notes' | 'contacts' | 'messages' | 'sending'> &
    Pick<OutreachServices, 'notifications'> &
    Pick<BillingServices, 'usage'>,
  options: { apiVersion: string },
) {
  const { store, config } = core;
  const mcp = createMcpModule({
    ...services,
    gate: services.idempotencyKeys,
    openTransaction: store.openRequestTransaction,
    isUnavailable: store.dialect.isUnavailable,
    publicBaseUrl: config.publicBaseUrl,
    version: options.apiVersion,
  });
  return { modules: [mcp], services: {} } satisfies Area<object>;
}
