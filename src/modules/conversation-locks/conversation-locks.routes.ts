import type { FastifyRequest } from 'fastify';
import { requirePrincipal, type Access } from '../../http/access.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { AcquireLockBody, ConversationLockSchema, RequestLockBody, TransferLockBody } from './conversation-locks.schemas.ts';
import type { ConversationLocksService } from './conversation-locks.service.ts';

const tags = ['Conversations'];
const read: Access = { scope: 'messages:read' };
/** A lock names a member as its holder: API keys and OAuth tokens have none, so only dashboard tokens take part. */
const member: Access = { scope: 'messages:write', credentials: ['dashboard_token'] };

/** Every field of these bodies is optional, so a request may carry none at all: it reads as `{}`. */
const optionalBody = async (request: FastifyRequest) => {
  request.body ??= {};
};

export function registerConversationLocksRoutes(app: HttpServer, service: ConversationLocksService): void {
  app.get('/v1/conversations/:id/lock', {
    config: { access: read },
    schema: {
      tags,
      summary: 'The lock held on a conversation; 404 when it is free',
      params: PathId('conversation'),
      response: { 200: ConversationLockSchema },
    },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/conversations/:id/lock', {
    config: { access: member },
    preValidation: optionalBody,
    schema: {
      tags,
      summary: 'Acquire the lock on a conversation (201), or renew the one you hold (200)',
      params: PathId('conversation'),
      body: AcquireLockBody,
      response: { 200: ConversationLockSchema, 201: ConversationLockSchema },
    },
    handler: async (request, reply) => {
      const { lock, acquired } = await service.acquire(requirePrincipal(request), request.params.id, request.body);
      return reply.code(acquired ? 201 : 200).send(lock);
    },
  });

  app.delete('/v1/conversations/:id/lock', {
    config: { access: member },
    schema: { tags, summary: 'Release the lock you hold', params: PathId('conversation'), response: { 200: ConversationLockSchema } },
    handler: async (request) => service.release(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/conversations/:id/lock/transfer', {
    config: { access: member },
    schema: {
      tags,
      summary: 'Hand the lock you hold to another member',
      params: PathId('conversation'),
      body: TransferLockBody,
      response: { 200: ConversationLockSchema },
    },
    handler: async (request) => service.transfer(requirePrincipal(request), request.params.id, request.body),
  });

  app.post('/v1/conversations/:id/lock/request', {
    config: { access: member },
    preValidation: optionalBody,
    schema: {
      tags,
      summary: 'Ask the holder to hand the lock over to you',
      params: PathId('conversation'),
      body: RequestLockBody,
      response: { 200: ConversationLockSchema },
    },
    handler: async (request) => service.request(requirePrincipal(request), request.params.id, request.body),
  });
}
