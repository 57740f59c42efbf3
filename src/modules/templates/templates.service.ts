import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { TemplatesTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import {
  isProviderError,
  providerErrorToAppError,
  type Provider,
  type ProviderCredentials,
  type ProviderError,
  type TemplateCategory,
  type TemplateStatus,
} from '../../provider/provider.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import { connectionScopeOf, type Actor, type Principal } from '../credentials/principal.ts';
import { checkDefinition, componentsJson, toPortComponents, type ParameterFormat } from './template-components.ts';
import { checkSendShape, matchParameters, type TemplateContent } from './template-send.ts';
import type { CreateTemplateInput, Template, TemplateParameters, TemplateSendInput, TemplateSync } from './templates.schemas.ts';
import type { TemplateFilters, TemplatesStore } from './templates.store.ts';

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
    parameter_format: row.parameter_format as ParameterFormat,
    components: JSON.parse(row.components) as Template['components'],
    provider_template_id: row.provider_template_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The connection a template belongs to, with what reaching its account at the provider takes. */
export interface TemplateOwner {
  connectionId: string;
  organizationId: string;
  credentials: ProviderCredentials;
}

/** What the endpoints need of connections (the connections service answers it). */
export interface TemplateConnections {
  /** A connection the caller may address (`param` names the body field in its 404), refused unless connected. */
  providerAccess(principal: Principal, id: string, param?: string): Promise<TemplateOwner>;
  /** Marks the connection when the provider refused its token. */
  reportProviderError(connectionId: string, error: ProviderError): Promise<void>;
}

/** A template checked for sending, with the content the provider port sends. */
export interface PreparedTemplate {
  templateId: string;
  category: TemplateCategory | undefined;
  content: TemplateContent;
}

/** An approved template, read once, that sends' parameters are checked against. */
export interface ApprovedTemplate {
  id: string;
  name: string;
  language: string;
  category: TemplateCategory | null;
  /** The port's content for these parameters, or the refusal naming the field under `parametersParam`. */
  prepare(parameters: TemplateParameters, parametersParam: string): TemplateContent;
}

export interface TemplatesServiceDeps {
  db: Db;
  store: TemplatesStore;
  clock: Clock;
  events: EventSink;
  audit: Pick<AuditEventsService, 'record'>;
  provider: Provider;
  connections: TemplateConnections;
}

export function createTemplatesService(deps: TemplatesServiceDeps) {
  const { db, store, clock, events, audit, provider, connections } = deps;

  async function changeStatus(
    trx: Trx,
    row: TemplatesTable,
    status: TemplateStatus,
    reason: string | null,
    extra: Partial<TemplatesTable> = {},
  ): Promise<boolean> {
    const changes = { ...extra, status, status_reason: reason, updated_at: clock.now().toISOString() };
    await store.update(trx, row.id, changes);
    if (row.status === status) return false;
    await events.emit(trx, {
      type: 'template.status_changed',
      organizationId: row.organization_id,
      connectionId: row.connection_id,
      object: toTemplate({ ...row, ...changes }),
    });
    return true;
  }

  /** A deleted template may have been created again under its name: the live record wins. */
  /** The template a send names: it must exist on the connection and be approved. */
  async function approvedRow(
    executor: Db,
    owner: { organizationId: string; connectionId: string },
    input: TemplateSendInput,
    param: string,
    parametersParam = param,
  ) {
    checkSendShape(input, param, parametersParam);
    const byId = input.id !== undefined;
    const at = `${param}/${byId ? 'id' : 'name'}`;
    const row = byId ? await store.find(executor, owner, input.id!) : await findByName(executor, owner.connectionId, input.name!, input.language!);
    if (!row) {
      throw new AppError(
        'resource_not_found',
        byId ? `No template ${input.id} on this connection.` : `No template named ${input.name} in ${input.language} on this connection.`,
        { param: at },
      );
    }
    if (row.status !== 'approved') {
      throw new AppError('template_not_approved', `Template ${row.name} (${row.language}) is ${row.status}, not approved.`, {
        param: at,
        extra: { template_status: row.status },
      });
    }
    return row;
  }

  async function approvedForSend(
    executor: Db,
    owner: { organizationId: string; connectionId: string },
    input: TemplateSendInput,
    param: string,
    parametersParam: string,
  ): Promise<ApprovedTemplate> {
    const row = await approvedRow(executor, owner, input, param, parametersParam);
    const template = {
      name: row.name,
      language: row.language,
      parameterFormat: row.parameter_format as ParameterFormat,
      components: JSON.parse(row.components) as Record<string, unknown>[],
    };
    return {
      id: row.id,
      name: row.name,
      language: row.language,
      category: (row.category ?? null) as TemplateCategory | null,
      prepare(parameters, at) {
        const send = { id: row.id, ...parameters };
        checkSendShape(send, param, at);
        return matchParameters(template, send, at);
      },
    };
  }

  async function findByName(executor: Db, connectionId: string, name: string, language: string): Promise<TemplatesTable | undefined> {
    const rows = await store.listByName(executor, connectionId, name, language);
    return rows.find((row) => row.status !== 'deleted') ?? rows[0];
  }

  async function getRow(principal: Principal, id: string): Promise<TemplatesTable> {
    const row = await store.find(db, connectionScopeOf(principal), id);
    if (!row) throw notFound('template');
    return row;
  }

  /**
   * Provider access for a connection named in a body: not visible is a 404 on `param`, and a
   * connection that cannot reach the provider is refused before anything is asked of it.
   */
  async function ownerFor(principal: Principal, connectionId: string, param: string): Promise<TemplateOwner> {
    return connections.providerAccess(principal, connectionId, param);
  }

  /** Calls the provider outside any transaction; its failure is the API's provider_* error. */
  async function atProvider<T>(owner: TemplateOwner, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (!isProviderError(error)) throw error;
      await connections.reportProviderError(owner.connectionId, error);
      throw providerErrorToAppError(error);
    }
  }

  /** Reads the account's templates and records them; see `sync` below. */
  async function syncOwner(owner: TemplateOwner): Promise<Omit<TemplateSync, 'object' | 'connection_id' | 'synced_at'>> {
    const remote = await provider.listTemplates(owner.credentials);
    const summary = { total: remote.length, added: 0, status_changed: 0, deleted: 0 };
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
          if (await changeStatus(trx, row, template.status, template.rejectedReason ?? row.status_reason, fields)) summary.status_changed += 1;
        } else {
          await store.insert(trx, {
            id: newId('template', clock.now().getTime()),
            organization_id: owner.organizationId,
            connection_id: owner.connectionId,
            provider_template_id: template.providerTemplateId,
            status: template.status,
            status_reason: template.rejectedReason ?? null,
            ...fields,
            created_at: now,
            updated_at: now,
          });
          summary.added += 1;
        }
      }
      for (const gone of known.values()) {
        if (gone.status !== 'deleted' && (await changeStatus(trx, gone, 'deleted', null))) summary.deleted += 1;
      }
    });
    return summary;
  }

  return {
    /**
     * Reads every template of the connection's account and records it: new ones are added, a changed
     * status is `template.status_changed`, and one the provider no longer has turns `deleted`.
     * The provider call happens outside any transaction.
     */
    sync: syncOwner,

    async get(principal: Principal, id: string): Promise<Template> {
      return toTemplate(await getRow(principal, id));
    },

    /** The category of a template a message was sent with, for usage: no caller, read in the caller's transaction. */
    async categoryOf(executor: Db, id: string): Promise<TemplateCategory | null> {
      return ((await store.categoryOf(executor, id)) ?? null) as TemplateCategory | null;
    },

    /** A filter naming another organization's (or an invisible) connection simply matches nothing. */
    async list(principal: Principal, filters: TemplateFilters, page: PageRequest): Promise<Page<Template>> {
      return mapPage(await store.list(db, connectionScopeOf(principal), filters, page), toTemplate);
    },

    /**
     * Submits a definition for review and records it with the provider's id, status and category
     * (usually `pending`; the review arrives as `template.status_changed`). A (name, language) the
     * connection already has, deleted ones aside, is refused before the provider is asked.
     */
    async create(actor: Actor, input: CreateTemplateInput): Promise<Template> {
      const format = input.parameter_format ?? 'positional';
      checkDefinition(input.components, format);
      const owner = await ownerFor(actor.principal, input.connection_id, '/connection_id');
      const taken = await findByName(db, owner.connectionId, input.name, input.language);
      if (taken && taken.status !== 'deleted')
        throw new AppError('resource_exists', `The connection has a template named ${input.name} in ${input.language}: ${taken.id}.`, { param: '/name' });

      const components = toPortComponents(input.components);
      const created = await atProvider(owner, () =>
        provider.createTemplate(owner.credentials, {
          name: input.name,
          language: input.language,
          category: input.category,
          components,
          parameterFormat: format,
        }),
      );
      return db.transaction().execute(async (trx) => {
        // A sync running meanwhile may have recorded it already.
        const synced = await store.findByProviderId(trx, owner.connectionId, created.providerTemplateId);
        const now = clock.now().toISOString();
        const row: TemplatesTable = synced ?? {
          id: newId('template', clock.now().getTime()),
          organization_id: owner.organizationId,
          connection_id: owner.connectionId,
          provider_template_id: created.providerTemplateId,
          name: input.name,
          language: input.language,
          category: created.category ?? null,
          status: created.status,
          status_reason: null,
          parameter_format: format,
          components: componentsJson(components),
          created_at: now,
          updated_at: now,
        };
        if (!synced) await store.insert(trx, row);
        await audit.record(trx, actor, {
          action: 'template.created',
          target: { type: 'template', id: row.id },
          data: { connection_id: owner.connectionId, name: row.name, language: row.language, category: row.category, status: row.status },
        });
        return toTemplate(row);
      });
    },

    /**
     * Deletes this language of the template at the provider, then keeps the record as `deleted`
     * (messages sent with it still name it), with `template.status_changed`. Deleting a deleted
     * template asks nothing of the provider and answers the same.
     */
    async delete(actor: Actor, id: string): Promise<{ id: string; object: 'template'; deleted: true }> {
      const row = await getRow(actor.principal, id);
      const answer = { id, object: 'template' as const, deleted: true as const };
      if (row.status === 'deleted') return answer;
      const owner = await ownerFor(actor.principal, row.connection_id, '/connection_id');
      await atProvider(owner, () => provider.deleteTemplate(owner.credentials, { name: row.name, providerTemplateId: row.provider_template_id }));
      await db.transaction().execute(async (trx) => {
        const current = await store.find(trx, connectionScopeOf(actor.principal), id);
        if (current && current.status !== 'deleted') await changeStatus(trx, current, 'deleted', null);
        await audit.record(trx, actor, {
          action: 'template.deleted',
          target: { type: 'template', id },
          data: { connection_id: row.connection_id, name: row.name, language: row.language },
        });
      });
      return answer;
    },

    /** `POST /v1/templates/sync`: the account's templates read again, answered as a summary. */
    async syncConnection(actor: Actor, connectionId: string): Promise<TemplateSync> {
      const owner = await ownerFor(actor.principal, connectionId, '/connection_id');
      const summary = await atProvider(owner, () => syncOwner(owner));
      return { object: 'template_sync', connection_id: owner.connectionId, ...summary, synced_at: clock.now().toISOString() };
    },

    /**
     * Checks the `template` of a send against the connection's template: it must exist there, be
     * approved, and take exactly the parameters sent. Answers the content to send; every refusal
     * happens here, before the provider, with `param` pointing below `param`.
     */
    async prepareSend(
      executor: Db,
      owner: { organizationId: string; connectionId: string },
      input: TemplateSendInput,
      param = '/template',
      /** Where the parameters sit, when not in the template object itself (the notification rail). */
      parametersParam = param,
    ): Promise<PreparedTemplate> {
      const template = await approvedForSend(executor, owner, input, param, parametersParam);
      const { header, body, buttons } = input;
      return { templateId: template.id, category: template.category ?? undefined, content: template.prepare({ header, body, buttons }, parametersParam) };
    },

    /**
     * The approved template a send names, found once for many sends (a batch): its description, and
     * `prepare` to check each send's parameters against it without reading it again.
     */
    findApprovedForSend(
      executor: Db,
      owner: { organizationId: string; connectionId: string },
      input: Pick<TemplateSendInput, 'id' | 'name' | 'language'>,
      param = '/template',
    ): Promise<ApprovedTemplate> {
      return approvedForSend(executor, owner, input, param, param);
    },

    /**
     * Which of `wanted` are approved where an automation sends from: on its connection, or without
     * one on at least one connected connection of its mode. Answers the approved ones, with their category.
     */
    async approvedAmong(
      executor: Db,
      owner: { organizationId: string; connectionId: string | null; test: boolean },
      wanted: readonly { name: string; language: string }[],
    ): Promise<{ name: string; language: string; category: string | null }[]> {
      const approved = await store.approvedNamed(executor, owner, [...new Set(wanted.map((template) => template.name))]);
      const keyOf = (template: { name: string; language: string }) => `${template.name} ${template.language}`;
      // A name approved on several connections may differ in category there: marketing wins, the stricter reading.
      const categories = new Map<string, string | null>();
      for (const template of approved) {
        if (!categories.has(keyOf(template)) || template.category === 'marketing') categories.set(keyOf(template), template.category);
      }
      return wanted
        .filter((template) => categories.has(keyOf(template)))
        .map((template) => ({ ...template, category: categories.get(keyOf(template)) ?? null }));
    },

    /** The connection's approved templates, by name: what a refused free-form send can offer instead. */
    async listApproved(executor: Db, connectionId: string): Promise<Array<{ id: string; name: string; language: string; category: string | null }>> {
      return (await store.listApproved(executor, connectionId)).map(({ id, name, language, category }) => ({ id, name, language, category }));
    },

    /**
     * The provider's review changed a template's status. Answers false for a template this
     * connection has not synced yet (the next sync records it with its status).
     */
    async statusChanged(
      trx: Trx,
      connectionId: string,
      update: { providerTemplateId: string; status: TemplateStatus | undefined; reason: string | undefined },
    ): Promise<boolean> {
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
