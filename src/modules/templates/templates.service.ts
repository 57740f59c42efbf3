import type { Db } from '../../db/connect.ts';
import type { TemplatesTable } from '../../db/schema.ts';
import type { EventEmitter } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import type { Provider, ProviderCredentials, TemplateComponent, TemplateStatus } from '../../provider/provider.ts';
import type { Template } from './templates.schemas.ts';
import type { TemplatesStore } from './templates.store.ts';

function toTemplate(row: TemplatesTable): Template {
  return {
    id: row.id,
    object: 'template',
    connection_id: row.connection_id,
    name: row.name,
    language: row.language,
    category: row.category as Template['category'],
    status: row.status as TemplateStatus,
    status_reason: row.status_reason,
    parameter_format: row.parameter_format as Template['parameter_format'],
    components: JSON.parse(row.components) as Template['components'],
    provider_template_id: row.provider_template_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const snake = (key: string) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * The port's components in the API's snake_case. What the provider defined itself (`definition`)
 * and named examples (`examples`, keyed by the template's own placeholder names) stay as they are.
 */
function toApiValue(value: unknown, key?: string): unknown {
  if (key === 'definition' || key === 'examples') return value;
  if (Array.isArray(value)) return value.map((item) => toApiValue(item));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([name, inner]) => [snake(name), toApiValue(inner, name)]));
}

const componentsJson = (components: TemplateComponent[]) => JSON.stringify(toApiValue(components));

/** The connection a template belongs to, with what reaching its account at the provider takes. */
export interface TemplateOwner {
  connectionId: string;
  organizationId: string;
  credentials: ProviderCredentials;
}

export function createTemplatesService(deps: { db: Db; store: TemplatesStore; clock: Clock; events: EventEmitter; provider: Provider }) {
  const { db, store, clock, events, provider } = deps;

  async function changeStatus(trx: Db, row: TemplatesTable, status: TemplateStatus, reason: string | null, extra: Partial<TemplatesTable> = {}): Promise<void> {
    const changes = { ...extra, status, status_reason: reason, updated_at: clock.now().toISOString() };
    await store.update(trx, row.id, changes);
    if (row.status === status) return;
    await events.emit(trx, { type: 'template.status_changed', organizationId: row.organization_id, connectionId: row.connection_id, object: toTemplate({ ...row, ...changes }) });
  }

  return {
    /**
     * Reads every template of the connection's account and records it: new ones are added, a changed
     * status is `template.status_changed`, and one the provider no longer has turns `deleted`.
     * Answers how many templates the account has. The provider call happens outside any transaction.
     */
    async sync(owner: TemplateOwner): Promise<number> {
      const remote = await provider.listTemplates(owner.credentials);
      await db.transaction().execute(async (trx) => {
        const known = new Map((await store.listForConnection(trx, owner.connectionId)).map((row) => [row.provider_template_id, row]));
        const now = clock.now().toISOString();
        for (const template of remote) {
          const row = known.get(template.providerTemplateId);
          known.delete(template.providerTemplateId);
          const fields = {
            name: template.name,
            language: template.language,
            category: template.category ?? null,
            parameter_format: template.parameterFormat,
            components: componentsJson(template.components),
          };
          if (row) {
            await changeStatus(trx, row, template.status, template.rejectedReason ?? row.status_reason, fields);
          } else {
            await store.insert(trx, {
              id: newId('template', clock.now().getTime()), organization_id: owner.organizationId, connection_id: owner.connectionId,
              provider_template_id: template.providerTemplateId, status: template.status, status_reason: template.rejectedReason ?? null,
              ...fields, created_at: now, updated_at: now,
            });
          }
        }
        for (const gone of known.values()) {
          if (gone.status !== 'deleted') await changeStatus(trx, gone, 'deleted', null);
        }
      });
      return remote.length;
    },

    /**
     * The provider's review changed a template's status. Answers false for a template this
     * connection has not synced yet (the next sync records it with its status).
     */
    async statusChanged(trx: Db, connectionId: string, update: { providerTemplateId: string; status: TemplateStatus | undefined; reason: string | undefined }): Promise<boolean> {
      const row = await store.findByProviderId(trx, connectionId, update.providerTemplateId);
      if (!row) return false;
      // REINSTATED and the like name no status: the template is read again by the next sync.
      if (update.status === undefined) return true;
      const reason = update.reason === undefined || update.reason === 'NONE' ? null : update.reason;
      await changeStatus(trx, row, update.status, reason);
      return true;
    },
  };
}

export type TemplatesService = ReturnType<typeof createTemplatesService>;
