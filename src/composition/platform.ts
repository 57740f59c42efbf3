import { isStoreReady } from '../db/connect.ts';
import { createAuditEventsModule } from '../modules/audit-events/index.ts';
import { createAuthModule } from '../modules/auth/index.ts';
import { createDashboardModule } from '../modules/dashboard/index.ts';
import { createErrorReferenceModule } from '../modules/error-reference/index.ts';
import { createHealthModule } from '../modules/health/index.ts';
import { createIdempotencyKeysModule } from '../modules/idempotency-keys/index.ts';
import { createIdentityModule } from '../modules/identity/index.ts';
import { createInvitesModule } from '../modules/invites/index.ts';
import { createMailModule, createMailTransport } from '../modules/mail/index.ts';
import { createMembersModule } from '../modules/members/index.ts';
import { createOauthTokensModule } from '../modules/oauth-tokens/index.ts';
import { createOrganizationsModule } from '../modules/organizations/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';

/** The tenant and its people: organizations, members, invites and sessions, the audit log, mail, and the service's own pages. */
export function buildPlatform(core: Core) {
  const { db, clock, config, store, queue, secrets, log, mediaStorage } = core;
  const { isUniqueViolation } = store.dialect;
  const secureCookies = config.publicBaseUrl.startsWith('https:');
  const audit = createAuditEventsModule({ db, clock });
  const organizations = createOrganizationsModule({ db, clock, audit: audit.service });
  // Mail reads the owners' addresses from members, and members mail about ownership: the one cycle
  // of this area, closed by a function that runs only after both exist.
  const members: ReturnType<typeof createMembersModule> = createMembersModule({
    db,
    clock,
    isUniqueViolation,
    audit: audit.service,
    mail: { queue: (trx, outgoing) => mail.service.queue(trx, outgoing) },
    publicBaseUrl: config.publicBaseUrl,
  });
  const auth = createAuthModule({
    db,
    clock,
    organizations: organizations.service,
    members: members.service,
    audit: audit.service,
    secureCookies,
    passwordHashCost: config.passwordHashCost,
  });
  const oauthTokens = createOauthTokensModule({ db, clock, members: members.service });
  const mail = createMailModule({
    db,
    clock,
    queue,
    members: members.service,
    secrets,
    transport: createMailTransport({ smtpUrl: config.smtpUrl, log: (entry) => log.info(entry, 'mail recorded (no SMTP_URL set)') }),
    from: `Messaging Service <no-reply@${new URL(config.publicBaseUrl).hostname}>`,
  });
  const invites = createInvitesModule({
    db,
    clock,
    isUniqueViolation,
    members: members.service,
    organizations: organizations.service,
    auth: auth.service,
    mail: mail.service,
    audit: audit.service,
    publicBaseUrl: config.publicBaseUrl,
    secureCookies,
    passwordHashCost: config.passwordHashCost,
  });
  const idempotencyKeys = createIdempotencyKeysModule({ db, clock, isUniqueViolation, secrets });
  return {
    modules: [
      createHealthModule({ isReady: async () => (await isStoreReady(store)) && (await mediaStorage.isReachable()) }),
      createErrorReferenceModule(),
      createDashboardModule({ directory: config.dashboardDir }),
      audit,
      organizations,
      members,
      auth,
      oauthTokens,
      mail,
      invites,
      idempotencyKeys,
      createIdentityModule({ organizations: organizations.service, members: members.service }),
    ],
    services: {
      audit: audit.service,
      organizations: organizations.service,
      members: members.service,
      auth: auth.service,
      oauthTokens: oauthTokens.service,
      mail: mail.service,
      invites: invites.service,
      idempotencyKeys: idempotencyKeys.service,
    },
  } satisfies Area<object>;
}

export type PlatformServices = ReturnType<typeof buildPlatform>['services'];
