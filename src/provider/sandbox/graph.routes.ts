import type { FastifyInstance } from 'fastify';
import { accountRoutes } from './account.routes.ts';
import { GraphError, unknownObject } from './graph-errors.ts';
import {
  bodyObject,
  graphTime,
  installGraphConventions,
  isObject,
  ownedNumber,
  pickFields,
  type GraphDeps,
  type GraphRouter,
  type Json,
} from './graph-http.ts';
import { throughputCeiling } from './limits.ts';
import { mediaKindOf, MEDIA_KINDS, type MediaKind } from './media.ts';
import { mediaNode, mediaRoutes } from './media.routes.ts';
import { parseSendRequest } from './send-validation.ts';
import type { SandboxNumber } from './state.ts';
import { checkTemplateSend, templateNode } from './templates.ts';
import { templateRoutes } from './templates.routes.ts';

function numberNode(number: SandboxNumber): Json {
  return {
    verified_name: number.verifiedName,
    display_phone_number: number.displayPhoneNumber,
    id: number.phoneNumberId,
    quality_rating: number.qualityRating,
    code_verification_status: 'VERIFIED',
    name_status: 'APPROVED',
    platform_type: 'CLOUD_API',
    throughput: { level: number.throughputLevel },
    account_mode: 'SANDBOX',
    status: 'CONNECTED',
    is_official_business_account: false,
    is_on_biz_app: number.coexistence,
    is_pin_enabled: number.pinEnabled,
    last_onboarded_time: graphTime(number.onboardedAt),
    messaging_limit_tier: number.messagingLimitTier,
    whatsapp_business_manager_messaging_limit: number.messagingLimitTier,
  };
}

/**
 * Why a media message by `id` cannot be delivered, if it cannot: the provider accepts the send and
 * reports the failure later in a `failed` status (§8.3), so this is checked but not thrown.
 */
async function mediaProblem(deps: GraphDeps, wabaId: string, type: string, content: unknown): Promise<string | undefined> {
  if (!(MEDIA_KINDS as readonly string[]).includes(type) || !isObject(content) || typeof content.id !== 'string') return undefined;
  const media = await deps.media.find(content.id);
  if (media === undefined || media.wabaId !== wabaId) return `Media id ${content.id} is unknown to this account or has expired.`;
  const kind = mediaKindOf(media.mimeType);
  if (kind !== (type as MediaKind)) return `Media id ${content.id} is ${media.mimeType}, which cannot be sent as ${type}.`;
  return undefined;
}

function coreRoutes(router: GraphRouter, deps: GraphDeps): void {
  const { state, templates } = deps;

  router.open('GET', '/:version/oauth/access_token', async (request) => {
    const query = request.query as Json;
    for (const param of ['client_id', 'client_secret', 'code']) {
      if (typeof query[param] !== 'string' || query[param] === '') throw new GraphError(100, `The parameter ${param} is required.`);
    }
    if (query.client_secret !== deps.appSecret)
      throw new GraphError(1, 'client_secret does not match the app secret.', { message: 'Error validating client secret.' });
    const exchanged = await state.exchangeCode(String(query.code), String(query.client_id));
    if (exchanged === undefined)
      throw new GraphError(100, 'This authorization code has been used.', { subcode: 36009, message: 'This authorization code has been used.' });
    if (exchanged.created) await templates.seed(exchanged.number.wabaId);
    const { number } = exchanged;
    return {
      access_token: exchanged.accessToken,
      token_type: 'bearer',
      // Sandbox extension: the real provider reports these ids to the browser (Embedded Signup's
      // session info), which a server-to-server test cannot see. debug_token and
      // /{waba}/phone_numbers give the same answer the provider's way.
      sandbox: {
        waba_id: number.wabaId,
        phone_number_id: number.phoneNumberId,
        display_phone_number: number.displayPhoneNumber,
        coexistence: number.coexistence,
      },
    };
  });

  router.authed('GET', '/:version/debug_token', 'whatsapp_business_management', async ({ query, grant }) => {
    const inputToken = typeof query.input_token === 'string' ? query.input_token : undefined;
    if (inputToken === undefined) throw new GraphError(100, 'The parameter input_token is required.');
    const input = await state.findToken(inputToken);
    if (input === undefined || input.revoked) return { data: { is_valid: false, error: { code: 190, message: 'Invalid OAuth access token.' } } };
    const scopes = ['whatsapp_business_management', 'whatsapp_business_messaging'];
    return {
      data: {
        app_id: grant.appId,
        type: 'SYSTEM_USER',
        application: 'Sandbox',
        is_valid: true,
        expires_at: 0,
        scopes,
        granular_scopes: scopes.map((scope) => ({ scope, target_ids: [input.wabaId] })),
      },
    };
  });

  // One path, four kinds of node, as on Graph: the account, a number, a media file or a template.
  router.authed('GET', '/:version/:id', 'whatsapp_business_management', async (call) => {
    const { id } = call.params as { id: string };
    const { wabaId, query } = call;
    if (id === wabaId) {
      const waba = await state.findWaba(wabaId);
      return pickFields(
        { id, name: waba?.name ?? 'Sandbox Business', timezone_id: '1', message_template_namespace: `sandbox_${id}`, currency: 'USD' },
        query.fields,
      );
    }
    if (call.number !== undefined) return pickFields(numberNode(call.number), query.fields);
    const media = await deps.media.find(id);
    if (media !== undefined && media.wabaId === wabaId) {
      if (query.phone_number_id !== undefined && query.phone_number_id !== media.phoneNumberId) throw unknownObject(id, 'get');
      return mediaNode(media, call, router.prefix, deps.media.signDownload);
    }
    const template = await templates.find(id);
    if (template !== undefined && template.wabaId === wabaId) return pickFields(templateNode(template), query.fields);
    throw unknownObject(id, 'get');
  });

  router.authed('DELETE', '/:version/:id', 'whatsapp_business_management', async ({ params, wabaId, query }) => {
    const { id } = params as { id: string };
    const media = await deps.media.find(id);
    if (media === undefined || media.wabaId !== wabaId || (query.phone_number_id !== undefined && query.phone_number_id !== media.phoneNumberId)) {
      throw unknownObject(id, 'delete');
    }
    await deps.media.remove(id);
    return { success: true };
  });

  router.authed('GET', '/:version/:id/phone_numbers', 'whatsapp_business_management', async ({ params, wabaId, query }) => {
    const { id } = params as { id: string };
    if (id !== wabaId) throw unknownObject(id, 'get');
    return { data: (await state.numbersOfWaba(wabaId)).map((number) => pickFields(numberNode(number), query.fields)) };
  });

  router.authed('POST', '/:version/:id/messages', 'whatsapp', async (call) => {
    const { wabaId, request, behaviour } = call;
    const number = ownedNumber(call, 'post');
    const parsed = parseSendRequest(bodyObject(request.body));

    if (parsed.kind === 'read') {
      const message = await state.findMessage(parsed.messageId);
      if (message === undefined || message.direction !== 'inbound' || message.phoneNumberId !== number.phoneNumberId) {
        throw new GraphError(100, `Param message_id '${parsed.messageId}' is not a message this number received.`);
      }
      return { success: true };
    }

    const slot = await deps.limits.takeSend(number, behaviour);
    call.sendsThisSecond = slot.used;
    if (!slot.allowed) {
      throw new GraphError(130429, `This number may send ${throughputCeiling(number, behaviour)} messages per second; wait for the next second.`);
    }
    const conversation = await state.conversation(number.phoneNumberId, parsed.waId);
    const inWindow = conversation.windowOpen;
    let templateCategory: string | undefined;
    if (parsed.type === 'template') {
      const request = parsed.content as Json;
      const name = String(request.name);
      const language = String((request.language as Json).code);
      const template = checkTemplateSend(await templates.findByName(wabaId, name, language), {
        name,
        language,
        components: Array.isArray(request.components) ? request.components : undefined,
      });
      templateCategory = template.category.toLowerCase();
    } else if (!inWindow) {
      throw new GraphError(131047, 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.');
    }

    const message = await state.recordOutbound({
      phoneNumberId: number.phoneNumberId,
      waId: parsed.waId,
      type: parsed.type,
      inWindow,
      ...(templateCategory === undefined ? {} : { templateCategory }),
      ...(conversation.freeEntryPoint ? { freeEntryPoint: true } : {}),
      ...(parsed.bizOpaqueCallbackData === undefined ? {} : { bizOpaqueCallbackData: parsed.bizOpaqueCallbackData }),
    });
    const injected =
      behaviour.failNextAsync !== undefined && (await state.take('failNextAsync', behaviour.failNextAsync)) ? behaviour.failNextAsync : undefined;
    const problem = await mediaProblem(deps, wabaId, parsed.type, parsed.content);
    if (injected !== undefined) {
      deps.events.failLater(message, number, injected.code, injected.details ?? 'Injected by the sandbox control API (fail_next_async).');
    } else if (problem !== undefined) {
      deps.events.failLater(message, number, 131053, problem);
    } else if (behaviour.autoStatus) {
      deps.events.walk(message, number);
    }
    return {
      messaging_product: 'whatsapp',
      contacts: [{ input: parsed.to, wa_id: parsed.waId }],
      messages: [{ id: message.id, message_status: 'accepted' }],
    };
  });
}

/** The provider's Graph endpoints, registered under `/graph`; every failure uses the Graph envelope. */
export function graphRoutes(deps: GraphDeps) {
  return async function register(app: FastifyInstance): Promise<void> {
    const router = installGraphConventions(app, deps);
    coreRoutes(router, deps);
    accountRoutes(router, deps);
    mediaRoutes(router, deps);
    templateRoutes(router, deps);
  };
}
