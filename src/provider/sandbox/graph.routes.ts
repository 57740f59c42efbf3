import { randomBytes } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GraphError, graphErrorBody, unknownObject } from './graph-errors.ts';
import { parseSendRequest } from './send-validation.ts';
import type { SandboxMessage, SandboxNumber, SandboxState } from './state.ts';

export interface GraphDeps {
  state: SandboxState;
  appSecret: string;
  /** Starts the sent → delivered → read walk for an accepted message. */
  walk(message: SandboxMessage): void;
}

const VERSION = /^v\d+\.\d+$/;

function versionOf(url: string): string | undefined {
  const segment = /\/graph\/([^/?]+)/.exec(url)?.[1];
  return segment !== undefined && VERSION.test(segment) ? segment : undefined;
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined) return /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  // Graph also takes the token as a query parameter; some SDKs rely on it for GETs.
  const query = request.query as Record<string, unknown>;
  return typeof query.access_token === 'string' ? query.access_token : undefined;
}

function numberNode(number: SandboxNumber): Record<string, unknown> {
  return {
    verified_name: number.verifiedName,
    display_phone_number: number.displayPhoneNumber,
    id: number.phoneNumberId,
    quality_rating: 'GREEN',
    code_verification_status: 'VERIFIED',
    name_status: 'APPROVED',
    platform_type: 'CLOUD_API',
    throughput: { level: 'STANDARD' },
    account_mode: 'SANDBOX',
    status: 'CONNECTED',
    is_official_business_account: false,
    messaging_limit_tier: 'TIER_250',
    whatsapp_business_manager_messaging_limit: 'TIER_250',
  };
}

/** `?fields=a,b` narrows a node to those fields (plus id), as Graph does; without it, all are returned. */
function pickFields(node: Record<string, unknown>, fields: unknown): Record<string, unknown> {
  if (typeof fields !== 'string' || fields.trim() === '') return node;
  const wanted = new Set(['id', ...fields.split(',').map((field) => field.trim())]);
  return Object.fromEntries(Object.entries(node).filter(([key]) => wanted.has(key)));
}

/** The provider's Graph endpoints, registered under `/graph`; every failure uses the Graph envelope. */
export function graphRoutes(deps: GraphDeps) {
  const { state } = deps;

  function authenticate(request: FastifyRequest): string {
    const token = bearerToken(request);
    if (token === undefined) {
      throw new GraphError(190, 'An access token is required: send it as "Authorization: Bearer <token>".', {
        message: 'An active access token must be used to query information about the current user.',
      });
    }
    const wabaId = state.wabaOfToken(token);
    if (wabaId === undefined) throw new GraphError(190, 'The access token is not one this sandbox issued.', { subcode: 467 });
    return wabaId;
  }

  function ownedNumber(wabaId: string, id: string, method: 'get' | 'post'): SandboxNumber {
    const number = state.numbers.get(id);
    if (number === undefined || number.wabaId !== wabaId) throw unknownObject(id, method);
    return number;
  }

  return async function register(app: FastifyInstance): Promise<void> {
    app.addHook('onRequest', async (request, reply) => {
      const version = versionOf(request.url);
      reply.header('facebook-api-version', version ?? 'v24.0');
      reply.header('x-fb-trace-id', randomBytes(8).toString('base64url'));
      reply.header('cache-control', 'private, no-cache, no-store, must-revalidate');
      if (version === undefined) throw new GraphError(100, 'The path must start with a version such as /v24.0/.', { message: 'Unknown path components' });
    });

    // Latency and injected failures apply to every Graph call, before authentication, so a caller can
    // rehearse its handling of any of them on whichever call comes next.
    app.addHook('preHandler', async () => {
      if (state.behaviour.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, state.behaviour.latencyMs));
      const failure = state.takeFailNext();
      if (failure !== undefined) {
        throw new GraphError(failure.code, failure.details ?? 'Injected by the sandbox control API (fail_next).', failure.httpStatus === undefined ? {} : { status: failure.httpStatus });
      }
    });

    app.setErrorHandler((error: FastifyError | GraphError, _request: FastifyRequest, reply: FastifyReply) => {
      const graphError =
        error instanceof GraphError
          ? error
          : (error.statusCode ?? 500) < 500
            ? new GraphError(100, error.message)
            : new GraphError(1, 'An unknown error occurred.', { status: 500, message: 'An unknown error has occurred.' });
      return reply.status(graphError.status).send(graphErrorBody(graphError));
    });

    app.setNotFoundHandler((request, reply) => {
      const error = new GraphError(100, `No endpoint ${request.method} ${request.url} in the sandbox.`, { message: 'Unknown path components' });
      return reply.status(400).send(graphErrorBody(error));
    });

    app.get('/:version/oauth/access_token', async (request) => {
      const query = request.query as Record<string, unknown>;
      for (const param of ['client_id', 'client_secret', 'code']) {
        if (typeof query[param] !== 'string' || query[param] === '') throw new GraphError(100, `The parameter ${param} is required.`);
      }
      if (query.client_secret !== deps.appSecret) throw new GraphError(1, 'client_secret does not match the app secret.', { message: 'Error validating client secret.' });
      const { accessToken, number } = state.createConnection();
      return {
        access_token: accessToken,
        token_type: 'bearer',
        // Sandbox extension: the real provider reports these ids to the browser (Embedded Signup's
        // session info), which a server-to-server test cannot see. debug_token and
        // /{waba}/phone_numbers give the same answer the provider's way.
        sandbox: { waba_id: number.wabaId, phone_number_id: number.phoneNumberId, display_phone_number: number.displayPhoneNumber },
      };
    });

    app.get('/:version/debug_token', async (request) => {
      authenticate(request);
      const query = request.query as Record<string, unknown>;
      const inputToken = typeof query.input_token === 'string' ? query.input_token : undefined;
      if (inputToken === undefined) throw new GraphError(100, 'The parameter input_token is required.');
      const wabaId = state.wabaOfToken(inputToken);
      if (wabaId === undefined) return { data: { is_valid: false, error: { code: 190, message: 'Invalid OAuth access token.' } } };
      const scopes = ['whatsapp_business_management', 'whatsapp_business_messaging'];
      return {
        data: {
          app_id: 'sandbox',
          type: 'SYSTEM_USER',
          application: 'Sandbox',
          is_valid: true,
          expires_at: 0,
          scopes,
          granular_scopes: scopes.map((scope) => ({ scope, target_ids: [wabaId] })),
        },
      };
    });

    app.get('/:version/:id', async (request) => {
      const wabaId = authenticate(request);
      const { id } = request.params as { id: string };
      const query = request.query as Record<string, unknown>;
      if (id === wabaId) {
        return pickFields({ id, name: 'Sandbox Business', timezone_id: '1', message_template_namespace: `sandbox_${id}` }, query.fields);
      }
      return pickFields(numberNode(ownedNumber(wabaId, id, 'get')), query.fields);
    });

    app.get('/:version/:id/phone_numbers', async (request) => {
      const wabaId = authenticate(request);
      const { id } = request.params as { id: string };
      if (id !== wabaId) throw unknownObject(id, 'get');
      const query = request.query as Record<string, unknown>;
      return { data: state.numbersOfWaba(wabaId).map((number) => pickFields(numberNode(number), query.fields)) };
    });

    app.post('/:version/:id/messages', async (request) => {
      const wabaId = authenticate(request);
      const { id } = request.params as { id: string };
      const number = ownedNumber(wabaId, id, 'post');
      const parsed = parseSendRequest(request.body);

      if (parsed.kind === 'read') {
        const message = state.findMessage(parsed.messageId);
        if (message === undefined || message.direction !== 'inbound' || message.phoneNumberId !== number.phoneNumberId) {
          throw new GraphError(100, `Param message_id '${parsed.messageId}' is not a message this number received.`);
        }
        return { success: true };
      }

      const inWindow = state.windowOpen(number.phoneNumberId, parsed.waId);
      if (!inWindow && parsed.type !== 'template') {
        throw new GraphError(131047, 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.');
      }
      const message = state.recordOutbound({
        phoneNumberId: number.phoneNumberId,
        waId: parsed.waId,
        type: parsed.type,
        inWindow,
        ...(parsed.bizOpaqueCallbackData === undefined ? {} : { bizOpaqueCallbackData: parsed.bizOpaqueCallbackData }),
      });
      if (state.behaviour.autoStatus) deps.walk(message);
      return {
        messaging_product: 'whatsapp',
        contacts: [{ input: parsed.to, wa_id: parsed.waId }],
        messages: [{ id: message.id, message_status: 'accepted' }],
      };
    });
  };
}
