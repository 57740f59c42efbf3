import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { check, installControlConventions, invalid, notFound } from './control-http.ts';
import {
  ACCESS_ENDING_EVENTS,
  AccountUpdateSchema,
  BehaviourSchema,
  ControlStatusSchema,
  EchoSchema,
  HistorySchema,
  InboundSchema,
  LimitTierSchema,
  QualitySchema,
  RevokeTokenSchema,
  StateSyncSchema,
  TemplateStatusSchema,
  ThroughputSchema,
} from './control.schemas.ts';
import type { SandboxEvents } from './events.ts';
import { echoMessage, historyEntry, inboundMessage } from './inbound.ts';
import type { MediaStore } from './media.ts';
import { LIMIT_TIERS, type Behaviour, type LimitTier, type SandboxNumber, type SandboxState } from './state.ts';
import type { SandboxTemplate, TemplateStore } from './templates.ts';
import { displayDigits, providerErrorObject, unixSeconds, type WebhookDelivery } from './webhooks.ts';

export interface ControlDeps {
  clock: Clock;
  state: SandboxState;
  media: MediaStore;
  templates: TemplateStore;
  events: SandboxEvents;
  deliveries: () => Promise<WebhookDelivery[]>;
  /** Merged into every route's `config` (the host's access declarations). */
  routeConfig: Record<string, unknown>;
  /** Where the error reference is served (the host's base URL), for the envelope's `doc_url`. */
  docsBaseUrl: string;
}

type Json = Record<string, unknown>;

function deliveryReport(delivery: WebhookDelivery): Json {
  return { status: delivery.status ?? null, ...(delivery.error === undefined ? {} : { error: delivery.error }) };
}

function behaviourView(behaviour: Behaviour): Json {
  const { latencyMs, failNext, failNextAsync, autoStatus, throttle, throughputMps, templateReview } = behaviour;
  return {
    latency_ms: latencyMs,
    fail_next: failNext === undefined ? null : { code: failNext.code, http_status: failNext.httpStatus ?? null, details: failNext.details ?? null },
    fail_next_async: failNextAsync === undefined ? null : { code: failNextAsync.code, details: failNextAsync.details ?? null },
    auto_status: autoStatus,
    throttle:
      throttle === undefined
        ? null
        : { code: throttle.code, estimated_time_to_regain_access: throttle.regainMinutes, calls: throttle.remaining ?? null, waba_id: throttle.wabaId ?? null },
    throughput_mps: throughputMps ?? null,
    template_review: templateReview,
  };
}

async function numberView(state: SandboxState, number: SandboxNumber): Promise<Json> {
  return {
    phone_number_id: number.phoneNumberId,
    waba_id: number.wabaId,
    display_phone_number: number.displayPhoneNumber,
    coexistence: number.coexistence,
    quality_rating: number.qualityRating,
    messaging_limit_tier: number.messagingLimitTier,
    throughput_level: number.throughputLevel,
    pin_enabled: number.pinEnabled,
    subscribed: (await state.subscriptions(number.wabaId)).length > 0,
  };
}

/** The sandbox's own control API under `/control`: makes the simulated world act on the service. */
export function controlRoutes(deps: ControlDeps) {
  const { state, events, media, templates } = deps;

  async function numberOf(phoneNumberId: string): Promise<SandboxNumber> {
    const number = await state.findNumber(phoneNumberId);
    if (number === undefined) throw notFound(`No sandbox number ${phoneNumberId}; exchange a code first.`);
    return number;
  }

  async function coexistenceNumber(phoneNumberId: string, what: string): Promise<SandboxNumber> {
    const number = await numberOf(phoneNumberId);
    if (!number.coexistence) {
      throw new AppError('invalid_state', `${what} exist only for coexistence numbers; create one by exchanging a code that starts with "coexistence".`);
    }
    return number;
  }

  async function findTemplate(input: {
    template_id?: string | undefined;
    waba_id?: string | undefined;
    name?: string | undefined;
    language?: string | undefined;
  }): Promise<SandboxTemplate> {
    if (input.template_id !== undefined) {
      const template = await templates.find(input.template_id);
      if (template === undefined) throw notFound(`No template ${input.template_id}.`);
      return template;
    }
    if (input.waba_id === undefined || input.name === undefined || input.language === undefined) {
      throw invalid('Name the template by `template_id`, or by `waba_id`, `name` and `language`.', { param: 'template_id' });
    }
    const template = await templates.findByName(input.waba_id, input.name, input.language);
    if (template === undefined) throw notFound(`No template ${input.name} (${input.language}) in account ${input.waba_id}.`);
    return template;
  }

  /** `phone_number_quality_update` (§3.4); the old limit only rides on limit changes. */
  function qualityUpdate(number: SandboxNumber, event: string, oldLimit?: LimitTier): Promise<WebhookDelivery> {
    return events.accountField(number.wabaId, 'phone_number_quality_update', {
      display_phone_number: displayDigits(number),
      event,
      ...(oldLimit === undefined ? {} : { old_limit: oldLimit }),
      current_limit: number.messagingLimitTier,
      max_daily_conversations_per_business: number.messagingLimitTier,
    });
  }

  return async function register(app: FastifyInstance): Promise<void> {
    installControlConventions(app, 'Control endpoints are listed in docs/sandbox.md.', deps.docsBaseUrl);

    const route = (method: HTTPMethods, url: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>): void => {
      app.route({ method, url, config: { ...deps.routeConfig }, handler });
    };

    route('GET', '/numbers', async () => ({ data: await Promise.all((await state.listNumbers()).map((number) => numberView(state, number))) }));

    // Re-authorisation: exchanging this code issues a new token for the same account and number.
    route('POST', '/numbers/:phone_number_id/code', async (request) => {
      const number = await numberOf((request.params as { phone_number_id: string }).phone_number_id);
      return { code: await state.mintReauthorisationCode(number.phoneNumberId), phone_number_id: number.phoneNumberId, waba_id: number.wabaId };
    });

    route('GET', '/webhooks', async () => ({
      data: (await deps.deliveries()).map((delivery) => ({
        ...deliveryReport(delivery),
        url: delivery.url ?? null,
        at: delivery.at.toISOString(),
        body: JSON.parse(delivery.body) as unknown,
      })),
    }));

    route('POST', '/inbound', async (request) => {
      const input = check(InboundSchema, request.body);
      const number = await numberOf(input.phone_number_id);
      const waId = input.from.replace(/\D/g, '');
      const message = state.draftMessage('inbound', number.phoneNumberId, waId, input.type);
      const payload = await inboundMessage(input, number, message, media);
      await state.recordInbound(message, { referral: input.referral !== undefined });
      const delivery = await events.messages(number, {
        contacts: [{ profile: { name: input.name ?? 'Sandbox User' }, wa_id: waId }],
        messages: [payload],
      });
      return { message_id: message.id, delivery: deliveryReport(delivery) };
    });

    route('POST', '/status', async (request) => {
      const input = check(ControlStatusSchema, request.body);
      const message = await state.findMessage(input.message_id);
      if (message === undefined || message.direction !== 'outbound') throw notFound(`No outbound message ${input.message_id} in the sandbox.`);
      const error =
        input.status === 'failed' || input.error !== undefined
          ? providerErrorObject(input.error?.code ?? 131000, input.error?.details ?? 'Injected by the sandbox control API.', input.error?.title)
          : undefined;
      const delivery = await events.emitStatus(message, input.status, error);
      return { message_id: message.id, status: input.status, delivery: deliveryReport(delivery) };
    });

    route('GET', '/behaviour', async () => behaviourView(await state.behaviour()));

    route('POST', '/behaviour', async (request) => {
      const input = check(BehaviourSchema, request.body ?? {});
      const behaviour: Partial<Behaviour> = {};
      if (input.latency_ms !== undefined) behaviour.latencyMs = input.latency_ms;
      if (input.auto_status !== undefined) behaviour.autoStatus = input.auto_status;
      if (input.template_review !== undefined) behaviour.templateReview = input.template_review;
      if (input.throughput_mps !== undefined) behaviour.throughputMps = input.throughput_mps ?? undefined;
      if (input.fail_next !== undefined) {
        behaviour.failNext =
          input.fail_next === null
            ? undefined
            : {
                code: input.fail_next.code,
                ...(input.fail_next.http_status === undefined ? {} : { httpStatus: input.fail_next.http_status }),
                ...(input.fail_next.details === undefined ? {} : { details: input.fail_next.details }),
              };
      }
      if (input.fail_next_async !== undefined) {
        behaviour.failNextAsync =
          input.fail_next_async === null
            ? undefined
            : { code: input.fail_next_async.code, ...(input.fail_next_async.details === undefined ? {} : { details: input.fail_next_async.details }) };
      }
      if (input.throttle !== undefined) {
        behaviour.throttle =
          input.throttle === null
            ? undefined
            : {
                code: input.throttle.code ?? 80007,
                regainMinutes: input.throttle.estimated_time_to_regain_access ?? 1,
                remaining: input.throttle.calls,
                wabaId: input.throttle.waba_id,
              };
      }
      return behaviourView(await state.updateBehaviour(behaviour));
    });

    route('POST', '/template-status', async (request) => {
      const input = check(TemplateStatusSchema, request.body);
      const { template, delivery } = await events.templateStatus(await findTemplate(input), input.status, input.reason ?? null);
      return { template_id: template.id, status: template.status, delivery: deliveryReport(delivery) };
    });

    route('POST', '/quality', async (request) => {
      const input = check(QualitySchema, request.body);
      const number = await state.updateNumber(await numberOf(input.phone_number_id), { qualityRating: input.quality_rating });
      const delivery = await qualityUpdate(number, input.event ?? (input.quality_rating === 'GREEN' ? 'UNFLAGGED' : 'FLAGGED'));
      return { ...(await numberView(state, number)), delivery: deliveryReport(delivery) };
    });

    route('POST', '/limit-tier', async (request) => {
      const input = check(LimitTierSchema, request.body);
      const before = await numberOf(input.phone_number_id);
      const old = before.messagingLimitTier;
      const number = await state.updateNumber(before, { messagingLimitTier: input.tier });
      const direction = LIMIT_TIERS.indexOf(input.tier) - LIMIT_TIERS.indexOf(old);
      const event = input.event ?? (direction > 0 ? 'UPGRADE' : direction < 0 ? 'DOWNGRADE' : 'ONBOARDING');
      const delivery = await qualityUpdate(number, event, old);
      return { ...(await numberView(state, number)), delivery: deliveryReport(delivery) };
    });

    // HIGH throughput needs an unlimited messaging limit (§8.1), so upgrading sets both.
    route('POST', '/throughput', async (request) => {
      const input = check(ThroughputSchema, request.body);
      const before = await numberOf(input.phone_number_id);
      if (before.coexistence && input.level === 'HIGH')
        throw new AppError('invalid_state', 'Coexistence numbers have a fixed throughput of 20 messages per second.', { param: 'level' });
      const upgraded = input.level === 'HIGH' && before.throughputLevel !== 'HIGH';
      const number = await state.updateNumber(before, { throughputLevel: input.level, ...(upgraded ? { messagingLimitTier: 'TIER_UNLIMITED' } : {}) });
      if (!upgraded) return { ...(await numberView(state, number)), delivery: null };
      const delivery = await qualityUpdate(number, 'THROUGHPUT_UPGRADE');
      return { ...(await numberView(state, number)), delivery: deliveryReport(delivery) };
    });

    route('POST', '/echo', async (request) => {
      const input = check(EchoSchema, request.body);
      const number = await coexistenceNumber(input.phone_number_id, 'Message echoes');
      const message = state.draftMessage('outbound', number.phoneNumberId, input.to.replace(/\D/g, ''), input.type);
      const delivery = await events.numberField(number, 'smb_message_echoes', { message_echoes: [await echoMessage(input, number, message, media)] });
      return { message_id: message.id, delivery: deliveryReport(delivery) };
    });

    route('POST', '/history', async (request) => {
      const input = check(HistorySchema, request.body);
      const number = await coexistenceNumber(input.phone_number_id, 'History webhooks');
      const delivery = await events.numberField(number, 'history', { history: [historyEntry(input, number, deps.clock.now())] });
      return { delivery: deliveryReport(delivery) };
    });

    route('POST', '/state-sync', async (request) => {
      const input = check(StateSyncSchema, request.body);
      const number = await coexistenceNumber(input.phone_number_id, 'Contact syncs');
      const timestamp = unixSeconds(deps.clock.now());
      const delivery = await events.numberField(number, 'smb_app_state_sync', {
        state_sync: input.contacts.map((contact) => {
          const action = contact.action ?? 'add';
          return {
            type: 'contact',
            contact: {
              // Names are left out when a contact is removed (§3.5).
              ...(action === 'add' && contact.full_name !== undefined ? { full_name: contact.full_name } : {}),
              ...(action === 'add' && contact.first_name !== undefined ? { first_name: contact.first_name } : {}),
              phone_number: contact.phone_number.replace(/\D/g, ''),
            },
            action,
            metadata: { timestamp },
          };
        }),
      });
      return { delivery: deliveryReport(delivery) };
    });

    route('POST', '/account-update', async (request) => {
      const { waba_id: wabaId, ...input } = check(AccountUpdateSchema, request.body);
      if ((await state.findWaba(wabaId)) === undefined) throw notFound(`No sandbox account ${wabaId}.`);
      const partnerEvent = input.event.startsWith('PARTNER_');
      const value = {
        ...input,
        ...(partnerEvent && input.waba_info === undefined ? { waba_info: { waba_id: wabaId, owner_business_id: wabaId } } : {}),
      };
      const delivery = await events.accountField(wabaId, 'account_update', value);
      // The notice goes out first, while the app is still subscribed; then the access it announces ends.
      const endsAccess = ACCESS_ENDING_EVENTS.includes(input.event);
      const revoked = endsAccess ? await state.revokeTokens({ wabaId }) : 0;
      if (endsAccess) await state.unsubscribe(wabaId);
      return { event: input.event, tokens_revoked: revoked, delivery: deliveryReport(delivery) };
    });

    route('POST', '/revoke-token', async (request) => {
      const input = check(RevokeTokenSchema, request.body);
      if ('access_token' in input) {
        if ((await state.findToken(input.access_token)) === undefined) throw notFound('No such token was issued by this sandbox.');
        return { revoked: await state.revokeTokens({ accessToken: input.access_token }) };
      }
      if ((await state.findWaba(input.waba_id)) === undefined) throw notFound(`No sandbox account ${input.waba_id}.`);
      return { revoked: await state.revokeTokens({ wabaId: input.waba_id }) };
    });
  };
}
