/**
 * Templates: the message templates of a connection's account, as the provider reviews them. Owns
 * the /v1/templates endpoints (list, get, create for review, delete, sync), recording the review
 * (`template.status_changed`), and the checks a template send passes before it reaches the
 * provider (`prepareSend`: the template exists on the connection, is approved, and takes exactly
 * the parameters sent).
 */
import type { Module } from '../module.ts';
import { registerTemplatesRoutes } from './templates.routes.ts';
import { createTemplatesService, type TemplatesService, type TemplatesServiceDeps } from './templates.service.ts';
import { createTemplatesStore } from './templates.store.ts';

export function createTemplatesModule(deps: Omit<TemplatesServiceDeps, 'store'>): Module<TemplatesService> {
  const service = createTemplatesService({ ...deps, store: createTemplatesStore() });
  return { name: 'templates', service, routes: (server) => registerTemplatesRoutes(server, service) };
}

export type { ApprovedTemplate, PreparedTemplate, TemplateConnections, TemplateOwner, TemplatesService } from './templates.service.ts';
export { parameterSlotsOf, type ParameterSlots, type TemplateContent } from './template-send.ts';
export { TemplateSendSchema, type Template, type TemplateSendInput } from './templates.schemas.ts';
