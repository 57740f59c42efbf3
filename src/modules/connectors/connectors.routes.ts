import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import {
  ConnectorAccountListQuery,
  ConnectorAccountListSchema,
  ConnectorAccountSchema,
  ConnectorListSchema,
  CreateConnectorAccountBody,
} from './connectors.schemas.ts';
import type { ConnectorsService } from './connectors.service.ts';

const tags = ['Connectors'];
const read: Access = { scope: 'connectors:read' };
const write: Access = { scope: 'connectors:write' };

export function registerConnectorsRoutes(app: HttpServer, service: ConnectorsService): void {
  app.get('/v1/connectors', {
    config: { access: read },
    schema: { tags, summary: 'The connector catalogue: what an account can be made for', response: { 200: ConnectorListSchema } },
    handler: async () => service.catalogue(),
  });

  app.post('/v1/connector-accounts', {
    // Connecting sends the connector's test request: no request transaction is held across it.
    config: { access: write, waitsOnNetwork: true },
    schema: {
      tags,
      summary: 'Connect an account: its test request must answer 2xx, or nothing is stored',
      body: CreateConnectorAccountBody,
      response: { 201: ConnectorAccountSchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.connect({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/connector-accounts', {
    config: { access: read },
    schema: {
      tags,
      summary: 'List connector accounts (never their secrets)',
      querystring: ConnectorAccountListQuery,
      response: { 200: ConnectorAccountListSchema },
    },
    handler: async (request) => {
      const { status, connector, ...list } = request.query;
      return service.list(requirePrincipal(request), { status, connector }, toPageRequest(list));
    },
  });

  app.get('/v1/connector-accounts/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get a connector account (never its secrets)', params: PathId('connectorAccount'), response: { 200: ConnectorAccountSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.delete('/v1/connector-accounts/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Disconnect an account: its secrets are wiped and it stays, `revoked`, for the runs that name it',
      params: PathId('connectorAccount'),
      response: { 200: ConnectorAccountSchema },
    },
    handler: async (request) => service.disconnect({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });
}
