import type { Migration } from 'kysely/migration';
import * as platform from './0001_platform.ts';
import * as idempotencyKeys from './0002_idempotency_keys.ts';
import * as jobs from './0003_jobs.ts';
import * as eventsAndWebhooks from './0004_events_and_webhooks.ts';
import * as mails from './0005_mails.ts';
import * as provider from './0006_provider.ts';
import * as messaging from './0007_messaging.ts';
import * as templates from './0008_templates.ts';
import * as contacts from './0009_contacts.ts';
import * as media from './0010_media.ts';
import * as windowWarning from './0011_window.ts';
import * as outboundMessages from './0012_outbound_messages.ts';
import * as conversationWorkplace from './0013_conversation_workplace.ts';
import * as conversationLocks from './0014_conversation_locks.ts';
import * as messageEchoes from './0015_message_echoes.ts';
import * as refreshTokenReuse from './0016_refresh_token_reuse.ts';
import * as deliveryRetention from './0017_delivery_retention.ts';
import * as notifications from './0018_notifications.ts';
import * as schedules from './0019_schedules.ts';
import * as invites from './0020_invites.ts';
import * as singleOwner from './0021_single_owner.ts';
import * as automations from './0022_automations.ts';
import * as approvals from './0023_approvals.ts';
import * as connectors from './0024_connectors.ts';
import * as organizationSettings from './0025_organization_settings.ts';
import * as usage from './0026_usage.ts';
import * as billing from './0027_billing.ts';
import * as oauthTokenResource from './0028_oauth_token_resource.ts';
import * as oauthServer from './0029_oauth_server.ts';
import * as conversationActivity from './0030_conversation_activity.ts';
// The sandbox provider owns its tables' definition; they live in the same store.
import * as sandboxProvider from '../../provider/sandbox/store/migration.ts';

/** Every migration, in order. Names sort in apply order; never rename or edit a released one. */
export const migrations: Record<string, Migration> = {
  '0001_platform': platform,
  '0002_idempotency_keys': idempotencyKeys,
  '0003_jobs': jobs,
  '0004_events_and_webhooks': eventsAndWebhooks,
  '0005_mails': mails,
  '0006_provider': provider,
  '0007_messaging': messaging,
  '0008_templates': templates,
  '0009_contacts': contacts,
  '0010_media': media,
  '0011_window': windowWarning,
  '0012_outbound_messages': outboundMessages,
  '0013_conversation_workplace': conversationWorkplace,
  '0014_conversation_locks': conversationLocks,
  '0015_message_echoes': messageEchoes,
  '0016_refresh_token_reuse': refreshTokenReuse,
  '0017_delivery_retention': deliveryRetention,
  '0018_notifications': notifications,
  '0019_schedules': schedules,
  '0020_invites': invites,
  '0021_single_owner': singleOwner,
  '0022_automations': automations,
  '0023_approvals': approvals,
  '0024_connectors': connectors,
  '0025_organization_settings': organizationSettings,
  '0026_usage': usage,
  '0027_billing': billing,
  '0028_oauth_token_resource': oauthTokenResource,
  '0029_oauth_server': oauthServer,
  '0030_conversation_activity': conversationActivity,
  '0031_sandbox_provider': sandboxProvider,
};
