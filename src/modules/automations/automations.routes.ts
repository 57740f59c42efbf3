import type { FastifyRequest } from 'fastify';
import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { DeletedResponse } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import {
  AutomationListQuery,
  AutomationListSchema,
  AutomationPath,
  AutomationSchema,
  AutomationVersionSchema,
  CreateAutomationBody,
  CreateVersionBody,
  DeleteAutomationQuery,
  DeployBody,
  DeploymentSchema,
  DisableBody,
  RollbackBody,
  UpdateAutomationBody,
  VersionListQuery,
  VersionListSchema,
  VersionPath,
} from './automations.schemas.ts';
import type { AutomationsService } from './automations.service.ts';

const tags = ['Automations'];
const read: Access = { scope: 'automations:read' };
const write: Access = { scope: 'automations:write' };

/** Rollback and disable take a body only to choose `in_flight`, which has a default: no body is `{}`. */
async function bodyOptional(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

export function registerAutomationsRoutes(app: HttpServer, service: AutomationsService): void {
  app.post('/v1/automations', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Create an automation (a draft); with a `definition`, its version 1',
      body: CreateAutomationBody,
      response: { 201: AutomationSchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/automations', {
    config: { access: read },
    schema: { tags, summary: 'List automations', querystring: AutomationListQuery, response: { 200: AutomationListSchema } },
    handler: async (request) => {
      const { status, connection_id: connectionId, ...list } = request.query;
      return service.list(requirePrincipal(request), { status, connectionId }, toPageRequest(list));
    },
  });

  app.get('/v1/automations/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get an automation', params: AutomationPath, response: { 200: AutomationSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.patch('/v1/automations/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Change an automation’s name, description or metadata (merged)',
      params: AutomationPath,
      body: UpdateAutomationBody,
      response: { 200: AutomationSchema },
    },
    handler: async (request) => service.update({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.delete('/v1/automations/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Delete an automation; refused while runs are active unless `cancel_runs=true`',
      params: AutomationPath,
      querystring: DeleteAutomationQuery,
      response: { 200: DeletedResponse('automation') },
    },
    handler: async (request) =>
      service.delete({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, { cancelRuns: request.query.cancel_runs ?? false }),
  });

  app.post('/v1/automations/:id/versions', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Write the next version of the definition (`based_on_version`: the latest you read)',
      params: AutomationPath,
      body: CreateVersionBody,
      response: { 201: AutomationVersionSchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.createVersion({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body)),
  });

  app.get('/v1/automations/:id/versions', {
    config: { access: read },
    schema: {
      tags,
      summary: 'An automation’s versions, newest first',
      params: AutomationPath,
      querystring: VersionListQuery,
      response: { 200: VersionListSchema },
    },
    handler: async (request) => service.listVersions(requirePrincipal(request), request.params.id, toPageRequest(request.query)),
  });

  app.get('/v1/automations/:id/versions/:number', {
    config: { access: read },
    schema: { tags, summary: 'Get one version of an automation', params: VersionPath, response: { 200: AutomationVersionSchema } },
    handler: async (request) => service.getVersion(requirePrincipal(request), request.params.id, request.params.number),
  });

  app.post('/v1/automations/:id/deploy', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Deploy a version: new runs start on it; `in_flight` says what happens to runs in flight',
      params: AutomationPath,
      body: DeployBody,
      response: { 200: DeploymentSchema },
    },
    handler: async (request) => service.deploy({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.post('/v1/automations/:id/rollback', {
    config: { access: write },
    preValidation: bodyOptional,
    schema: {
      tags,
      summary: 'Deploy the previously deployed version again',
      params: AutomationPath,
      body: RollbackBody,
      response: { 200: DeploymentSchema },
    },
    handler: async (request) => service.rollback({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.post('/v1/automations/:id/enable', {
    config: { access: write },
    schema: { tags, summary: 'Enable an automation: its deployed version starts runs', params: AutomationPath, response: { 200: AutomationSchema } },
    handler: async (request) => service.enable({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/automations/:id/disable', {
    config: { access: write },
    preValidation: bodyOptional,
    schema: {
      tags,
      summary: 'Disable an automation: no new runs; `in_flight` keeps or cancels the runs in flight',
      params: AutomationPath,
      body: DisableBody,
      response: { 200: AutomationSchema },
    },
    handler: async (request) => service.disable({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });
}
