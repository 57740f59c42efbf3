import { randomBytes } from 'node:crypto';
import { DAY, HOUR } from '../../lib/clock.ts';
import { GraphError, unknownObject } from './graph-errors.ts';
import { bodyObject, ownedNumber, type GraphDeps, type GraphRouter, type Json } from './graph-http.ts';
import { SYNC_TYPES, type SyncType } from './state.ts';
import { verifyCallback } from './webhooks.ts';

/** `/register` allows about 10 attempts per number per 72 hours (§7.2). */
const REGISTER_ATTEMPTS = 10;
const REGISTER_WINDOW_MS = 72 * HOUR;
/** Coexistence syncs must be requested within 24 hours of onboarding (§7.5). */
const SYNC_WINDOW_MS = DAY;

function requireWhatsapp(body: Json | undefined): Json {
  if (body === undefined || body.messaging_product === undefined) throw new GraphError(100, 'The parameter messaging_product is required.');
  if (body.messaging_product !== 'whatsapp')
    throw new GraphError(100, `Param messaging_product must be one of {WHATSAPP} - got ${JSON.stringify(body.messaging_product)}.`);
  return body;
}

/** Onboarding endpoints (§7.2, §7.3, §7.5): registration, coexistence syncs and webhook subscriptions. */
export function accountRoutes(router: GraphRouter, deps: GraphDeps): void {
  const { state, clock } = deps;

  router.authed('POST', '/:version/:id/register', 'whatsapp_business_management', async (call) => {
    const { request } = call;
    const number = ownedNumber(call, 'post');
    const body = requireWhatsapp(bodyObject(request.body));
    if (body.pin === undefined) throw new GraphError(100, 'The parameter pin is required.');
    if (typeof body.pin !== 'string' || !/^\d{6}$/.test(body.pin)) throw new GraphError(100, 'Param pin must be a string of exactly 6 digits.');
    if (number.coexistence) {
      // A coexistence number is registered by the WhatsApp Business app; registering it again would
      // take it away from the app (§7.5), so the sandbox refuses instead of pretending.
      throw new GraphError(100, 'This number is on the WhatsApp Business app (coexistence) and is already registered; do not call /register for it.');
    }
    // Only well-formed registrations count against the limit: a malformed request never reaches it.
    const now = clock.now().getTime();
    const recent = number.registerAttempts.filter((at) => now - at < REGISTER_WINDOW_MS);
    if (recent.length >= REGISTER_ATTEMPTS) {
      throw new GraphError(133016, `This number was registered or deregistered ${REGISTER_ATTEMPTS} times in the last 72 hours; try again later.`);
    }
    await state.updateNumber(number, { registerAttempts: [...recent, now], pinEnabled: true });
    return { success: true };
  });

  router.authed('POST', '/:version/:id/smb_app_data', 'whatsapp_business_management', async (call) => {
    const { request } = call;
    const number = ownedNumber(call, 'post');
    const body = requireWhatsapp(bodyObject(request.body));
    if (body.sync_type === undefined) throw new GraphError(100, 'The parameter sync_type is required.');
    if (typeof body.sync_type !== 'string' || !(SYNC_TYPES as readonly string[]).includes(body.sync_type)) {
      throw new GraphError(100, `Param sync_type must be one of {${SYNC_TYPES.join(', ')}}.`);
    }
    const syncType = body.sync_type as SyncType;
    if (!number.coexistence) {
      throw new GraphError(100, 'smb_app_data is only available for numbers onboarded from the WhatsApp Business app (coexistence).');
    }
    if (number.syncRequested[syncType] !== undefined)
      throw new GraphError(2593107, `The ${syncType} synchronization was already requested for this number; it can be requested once.`);
    const now = clock.now();
    if (now.getTime() - number.onboardedAt.getTime() > SYNC_WINDOW_MS) {
      throw new GraphError(2593108, `The ${syncType} synchronization must be requested within 24 hours of onboarding.`);
    }
    await state.updateNumber(number, { syncRequested: { ...number.syncRequested, [syncType]: now } });
    return { messaging_product: 'whatsapp', request_id: randomBytes(16).toString('hex') };
  });

  function ownedWaba(wabaId: string, id: string, method: 'get' | 'post' | 'delete'): void {
    if (id !== wabaId) throw unknownObject(id, method);
  }

  router.authed('GET', '/:version/:id/subscribed_apps', 'whatsapp_business_management', async ({ params, wabaId }) => {
    ownedWaba(wabaId, (params as { id: string }).id, 'get');
    return {
      data: (await state.subscriptions(wabaId)).map(({ appId, ...subscription }) => ({
        whatsapp_business_api_data: { id: appId, link: `https://www.facebook.com/games/?app_id=${appId}`, name: 'Sandbox App' },
        ...(subscription.overrideCallbackUri === undefined ? {} : { override_callback_uri: subscription.overrideCallbackUri }),
      })),
    };
  });

  router.authed('POST', '/:version/:id/subscribed_apps', 'whatsapp_business_management', async ({ params, wabaId, grant, request }) => {
    ownedWaba(wabaId, (params as { id: string }).id, 'post');
    const body = bodyObject(request.body) ?? {};
    let overrideCallbackUri: string | undefined;
    if (body.override_callback_uri !== undefined) {
      if (typeof body.override_callback_uri !== 'string' || !/^https?:\/\//.test(body.override_callback_uri)) {
        throw new GraphError(100, 'Param override_callback_uri must be an http or https URL.');
      }
      if (typeof body.verify_token !== 'string' || body.verify_token === '')
        throw new GraphError(100, 'The parameter verify_token is required with override_callback_uri.');
      if (!(await verifyCallback(body.override_callback_uri, body.verify_token))) {
        throw new GraphError(100, 'Callback verification failed: the URL did not answer HTTP 200 with the hub.challenge value.', {
          message: 'Callback verification failed',
        });
      }
      overrideCallbackUri = body.override_callback_uri;
    }
    await state.subscribe(wabaId, grant.appId, overrideCallbackUri);
    return { success: true };
  });

  router.authed('DELETE', '/:version/:id/subscribed_apps', 'whatsapp_business_management', async ({ params, wabaId, grant }) => {
    ownedWaba(wabaId, (params as { id: string }).id, 'delete');
    await state.unsubscribe(wabaId, grant.appId);
    return { success: true };
  });
}
