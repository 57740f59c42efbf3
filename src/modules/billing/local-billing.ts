import type { Clock } from '../../lib/clock.ts';
import { MINUTE } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { PLAN_NAMES } from '../usage/plans.ts';
import type { LocalBilling, LocalSession } from './billing-port.ts';

/** How long a local checkout or portal link works: about what Stripe gives a Checkout Session's first minutes. */
export const LOCAL_SESSION_TTL_MS = 30 * MINUTE;

/** Binds a sealed session to this use: a value sealed for anything else does not open as one. */
const AAD = 'billing.local_session.v1';

/**
 * The local adapter: checkout and portal are pages of this service, reached by a link whose token is
 * the session itself, sealed with the master key (so no table holds sessions, and none can be forged
 * or altered). The pages change the plan without taking a payment, and say so.
 */
export function createLocalBilling(deps: { clock: Clock; secrets: Pick<SecretBox, 'seal' | 'open'>; publicBaseUrl: string }): LocalBilling {
  const { clock, secrets, publicBaseUrl } = deps;
  return {
    kind: 'local',
    sessionUrl(session) {
      const sealed: LocalSession = { ...session, expiresAt: new Date(clock.now().getTime() + LOCAL_SESSION_TTL_MS).toISOString() };
      return `${publicBaseUrl}/billing/local/${session.kind}/${secrets.seal(JSON.stringify(sealed), AAD)}`;
    },
    openSession(token) {
      let session: LocalSession;
      try {
        session = JSON.parse(secrets.open(token, AAD)) as LocalSession;
      } catch {
        throw new AppError('credential_invalid', 'This billing link is not valid. Start again from the billing page of the dashboard.', {
          param: '/path/token',
        });
      }
      if (session.plan !== undefined && !PLAN_NAMES.includes(session.plan)) {
        throw new AppError('credential_invalid', 'This billing link names no plan of this service.', { param: '/path/token' });
      }
      if (session.expiresAt <= clock.now().toISOString()) {
        throw new AppError('credential_expired', 'This billing link has expired (they work 30 minutes). Start again from the billing page of the dashboard.', {
          param: '/path/token',
        });
      }
      return session;
    },
  };
}
