import { randomInt } from 'node:crypto';
import { pooledRandomBytes } from '../../lib/crypto.ts';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { Clock } from '../../lib/clock.ts';
import { bodyTooLargeMessage, discardRefusedBody, isBodyTooLarge } from './body-size.ts';
import type { SandboxEvents } from './events.ts';
import { GraphError, graphErrorBody, newTraceId, unknownObject } from './graph-errors.ts';
import type { Limits, UsageKind } from './limits.ts';
import type { MediaStore } from './media.ts';
import type { Behaviour, SandboxNumber, SandboxState, SandboxToken } from './state.ts';
import type { TemplateStore } from './templates.ts';

/**
 * The HTTP conventions of the provider's Graph API, applied inside the sandbox's `/graph` scope so
 * that they hold whatever the host application configured: its own body parsers, the provider's
 * response headers, the Graph error envelope for every failure, bearer-token authentication, the
 * throttle and the usage header.
 */

export interface GraphDeps {
  clock: Clock;
  state: SandboxState;
  media: MediaStore;
  templates: TemplateStore;
  limits: Limits;
  events: SandboxEvents;
  appSecret: string;
  /** Merged into every route's `config` (the host's access declarations). */
  routeConfig: Record<string, unknown>;
}

export type Json = Record<string, unknown>;

/** The version the provider answers unversioned calls with, and the download URLs are minted under. */
export const DEFAULT_VERSION = 'v24.0';
const VERSION = /^v\d+\.\d+$/;
/** The CDN-style path media downloads are served from (`lookaside.fbsbx.com` for the provider). */
export const DOWNLOAD_PATH = '/whatsapp_business/attachments';

/** A multipart body: its text fields and its files (only the media upload takes files). */
export class MultipartBody {
  readonly fields: Record<string, string>;
  readonly files: Map<string, File>;

  constructor(fields: Record<string, string>, files: Map<string, File>) {
    this.fields = fields;
    this.files = files;
  }
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Graph takes JSON values inside form fields (`-F 'template={...}'`); other values stay strings. */
function decodeFormValue(value: string): unknown {
  if (/^\s*[[{]/.test(value)) {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  }
  return value;
}

function formObject(entries: Iterable<[string, string]>): Json {
  const object: Json = {};
  for (const [key, value] of entries) object[key] = decodeFormValue(value);
  return object;
}

/** Graph's own timestamp spelling: ISO 8601 with a `+0000` offset and no milliseconds. */
export function graphTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, '+0000');
}

/** `?fields=a,b` narrows a node to those fields (plus id), as Graph does; without it, all are returned. */
export function pickFields(node: Json, fields: unknown): Json {
  if (typeof fields !== 'string' || fields.trim() === '') return node;
  const wanted = new Set(['id', ...fields.split(',').map((field) => field.trim())]);
  return Object.fromEntries(Object.entries(node).filter(([key]) => wanted.has(key)));
}

/** The number the path names, if it exists and belongs to the token's account; else the provider's code 100/33. */
export function ownedNumber(call: Pick<GraphCall, 'number' | 'params'>, method: 'get' | 'post'): SandboxNumber {
  if (call.number === undefined) throw unknownObject(call.params.id ?? '', method);
  return call.number;
}

/** The body as an object whatever its encoding (JSON, form or multipart fields); undefined if none. */
export function bodyObject(body: unknown): Json | undefined {
  if (body instanceof MultipartBody) return formObject(Object.entries(body.fields));
  return isObject(body) ? body : undefined;
}

export interface GraphCall {
  request: FastifyRequest;
  reply: FastifyReply;
  /** The account the business token reaches. */
  wabaId: string;
  token: string;
  grant: SandboxToken;
  params: Record<string, string>;
  query: Json;
  /** The control API's behaviour, read once for the call. */
  behaviour: Behaviour;
  /** The number the path's `{id}` names, when it is one of the token's account. */
  number: SandboxNumber | undefined;
  /** Set by a send: the count of the number's current second, which the usage header reports. */
  sendsThisSecond?: number;
}

export interface GraphRouter {
  /** The Graph scope's own prefix (e.g. `/sandbox/graph`), for URLs the sandbox hands out. */
  prefix: string;
  /** A call with a business token: authenticated, throttled and metered against the token's account. */
  authed(method: HTTPMethods, url: string, usage: UsageKind, handler: (call: GraphCall) => Promise<unknown>, options?: { bodyLimit?: number }): void;
  /** A call that authenticates itself, or needs no token (the code exchange). */
  open(method: HTTPMethods, url: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>): void;
  /** The token's grant; 190 (HTTP 401) when it is missing, unknown or revoked. */
  authenticate(request: FastifyRequest): Promise<{ token: string; grant: SandboxToken }>;
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined) return /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  // Graph also takes the token as a query parameter; some SDKs rely on it for GETs.
  const query = request.query as Json;
  return typeof query.access_token === 'string' ? query.access_token : undefined;
}

function versionOf(url: string): string | undefined {
  const segment = /\/graph\/([^/?]+)/.exec(url)?.[1];
  return segment !== undefined && VERSION.test(segment) ? segment : undefined;
}

function toGraphError(error: FastifyError | GraphError, request: FastifyRequest): GraphError {
  if (error instanceof GraphError) return error;
  if (isBodyTooLarge(error)) {
    return request.url.split('?')[0]?.endsWith('/media')
      ? new GraphError(131053, 'The file is larger than the provider accepts for any kind of media (100 MB for documents).', { status: 413 })
      : new GraphError(100, bodyTooLargeMessage(request), { status: 413 });
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new GraphError(100, `Unsupported Content-Type ${String(request.headers['content-type'])}: send JSON, a form or multipart/form-data.`);
  }
  if ((error.statusCode ?? 500) < 500) return new GraphError(100, error.message);
  request.log.error({ err: error }, 'sandbox graph handler failed');
  return new GraphError(1, 'An unknown error occurred.', { status: 500, message: 'An unknown error has occurred.' });
}

/** Installs parsers, hooks and handlers on the Graph scope and answers the router its routes use. */
export function installGraphConventions(app: FastifyInstance, deps: GraphDeps): GraphRouter {
  const { state, limits } = deps;
  // The behaviour each call read before its handler, so that it is read once per call.
  const behaviours = new WeakMap<FastifyRequest, Behaviour>();

  // The host's parsers would answer in its own words; inside this scope only the provider's apply.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body: string, done) => {
    if (body.trim() === '') return done(null, {});
    try {
      done(null, JSON.parse(body));
    } catch {
      done(new GraphError(100, 'The request body is not valid JSON.'), undefined);
    }
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body: string, done) => {
    done(null, formObject(new URLSearchParams(body)));
  });
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer' }, async (request: FastifyRequest, body: Buffer) => {
    let form: FormData;
    try {
      form = await new Response(body, { headers: { 'content-type': String(request.headers['content-type']) } }).formData();
    } catch {
      throw new GraphError(100, 'The multipart/form-data body could not be parsed.');
    }
    const fields: Record<string, string> = {};
    const files = new Map<string, File>();
    for (const [name, value] of form) {
      if (typeof value === 'string') fields[name] = value;
      else files.set(name, value);
    }
    return new MultipartBody(fields, files);
  });

  app.addHook('onRequest', async (request, reply) => {
    const version = versionOf(request.url);
    void reply.headers({
      'facebook-api-version': version ?? DEFAULT_VERSION,
      'x-fb-trace-id': newTraceId(),
      'x-fb-request-id': pooledRandomBytes(12).toString('base64url'),
      'x-fb-rev': String(randomInt(1_000_000_000, 2_000_000_000)),
      'cache-control': 'private, no-cache, no-store, must-revalidate',
      pragma: 'no-cache',
      expires: 'Sat, 01 Jan 2000 00:00:00 GMT',
      'access-control-allow-origin': '*',
    });
    const unversioned = request.routeOptions.url?.endsWith(DOWNLOAD_PATH) ?? false;
    if (version === undefined && !unversioned) {
      throw new GraphError(100, 'The path must start with a version such as /v24.0/.', { message: 'Unknown path components' });
    }
  });

  // Latency and injected failures apply to every Graph call, before authentication, so a caller can
  // rehearse its handling of any of them on whichever call comes next.
  app.addHook('preHandler', async (request) => {
    const behaviour = await state.behaviour();
    behaviours.set(request, behaviour);
    if (behaviour.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, behaviour.latencyMs));
    const failure = behaviour.failNext;
    if (failure !== undefined && (await state.take('failNext', failure))) {
      throw new GraphError(
        failure.code,
        failure.details ?? 'Injected by the sandbox control API (fail_next).',
        failure.httpStatus === undefined ? {} : { status: failure.httpStatus },
      );
    }
  });

  // The provider spells its JSON content type this way (§8.4).
  app.addHook('onSend', async (_request, reply, payload) => {
    if (String(reply.getHeader('content-type') ?? '').startsWith('application/json')) void reply.header('content-type', 'application/json; charset=UTF-8');
    return payload;
  });

  app.setErrorHandler(async (error: FastifyError | GraphError, request: FastifyRequest, reply: FastifyReply) => {
    if (isBodyTooLarge(error)) await discardRefusedBody(request);
    const graphError = toGraphError(error, request);
    const traceId = reply.getHeader('x-fb-trace-id');
    return reply
      .status(graphError.status)
      .type('application/json')
      .send(graphErrorBody(graphError, typeof traceId === 'string' ? traceId : undefined));
  });

  app.setNotFoundHandler((request, reply) => {
    const error = new GraphError(100, `No endpoint ${request.method} ${request.url.split('?')[0] ?? ''} in the sandbox.`, {
      message: 'Unknown path components',
    });
    const traceId = reply.getHeader('x-fb-trace-id');
    return reply
      .status(400)
      .type('application/json')
      .send(graphErrorBody(error, typeof traceId === 'string' ? traceId : undefined));
  });

  async function authenticate(request: FastifyRequest): Promise<{ token: string; grant: SandboxToken }> {
    const token = bearerToken(request);
    if (token === undefined) {
      throw new GraphError(190, 'An access token is required: send it as "Authorization: Bearer <token>".', {
        message: 'An active access token must be used to query information about the current user.',
      });
    }
    const grant = await state.findToken(token);
    if (grant === undefined)
      throw new GraphError(190, 'The access token is not one this sandbox issued.', {
        subcode: 467,
        message: 'Invalid OAuth access token - Cannot parse access token',
      });
    if (grant.revoked) {
      throw new GraphError(190, 'The token was revoked (sandbox control API); exchange a new code to re-authorise.', {
        subcode: 458,
        message: 'Error validating access token: The user has not authorized application.',
      });
    }
    return { token, grant };
  }

  return {
    prefix: app.prefix,
    authenticate,

    open(method, url, handler) {
      app.route({ method, url, config: { ...deps.routeConfig }, handler: async (request, reply) => handler(request, reply) });
    },

    authed(method, url, usage, handler, options = {}) {
      app.route({
        method,
        url,
        config: { ...deps.routeConfig },
        ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
        handler: async (request, reply) => {
          const { token, grant } = await authenticate(request);
          const behaviour = behaviours.get(request) ?? (await state.behaviour());
          const params = request.params as Record<string, string>;
          const candidate = params.id === undefined ? undefined : await state.findNumber(params.id);
          const number = candidate?.wabaId === grant.wabaId ? candidate : undefined;
          const throttle = await limits.takeThrottle(grant.wabaId, behaviour);
          if (throttle !== undefined) {
            void reply.header('x-business-use-case-usage', await limits.usageHeader(grant.wabaId, usage, { behaviour, throttle }));
            if (throttle.code === 4) {
              void reply.header(
                'x-app-usage',
                JSON.stringify({ call_count: 100, total_cputime: 100, total_time: 100, estimated_time_to_regain_access: throttle.regainMinutes }),
              );
            }
            throw new GraphError(throttle.code, `Throttled by the sandbox control API (behaviour.throttle); try again in ${throttle.regainMinutes} minute(s).`);
          }
          const managementCalls = usage === 'whatsapp_business_management' ? await limits.recordManagementCall(grant.wabaId) : undefined;
          const call: GraphCall = { request, reply, wabaId: grant.wabaId, token, grant, params, query: request.query as Json, behaviour, number };
          try {
            return await handler(call);
          } finally {
            const counts = {
              ...(call.sendsThisSecond === undefined ? {} : { sends: call.sendsThisSecond }),
              ...(managementCalls === undefined ? {} : { managementCalls }),
            };
            void reply.header(
              'x-business-use-case-usage',
              await limits.usageHeader(grant.wabaId, usage, { behaviour, ...counts, ...(number === undefined ? {} : { number }) }),
            );
          }
        },
      });
    },
  };
}
